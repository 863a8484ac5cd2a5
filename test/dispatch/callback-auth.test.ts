/**
 * `callback.auth` and `callback.jwtAudience` on the wire (API.md "Destination control"), with the real dispatcher,
 * the real undici delivery behind the destination guard, a real receiver and a real OAuth2 token endpoint on
 * 127.0.0.1 (test/support/oauth-server.ts), on every database target: the client credentials grant as RFC 6749 §4.4
 * says (form, Basic client auth, scope, audience); the token cached across attempts and runs, shared by concurrent
 * attempts (one request), refreshed when it nears `expires_in`; a `401` refreshes it once and resends within the
 * attempt; a token that cannot be had fails the attempt `auth_token_failed` with nothing sent (so at-most-once retries
 * it); the token request goes through the destination guard; basic auth's header; the JWT's `aud`.
 */
import { verifyChimeSignature } from '@chime/receiver';
import { pino } from 'pino';
import type { Agent } from 'undici';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCallbackAgent, createDeliver } from '../../src/dispatch/deliver.ts';
import { createDispatcher, type Dispatcher } from '../../src/dispatch/drivers/node-dispatcher.ts';
import { createKeyring } from '../../src/dispatch/keyring.ts';
import { systemClock } from '../../src/domain/clock.ts';
import type { CallbackAuth, JobSpec } from '../../src/domain/job.ts';
import { createJob } from '../../src/store/jobs.ts';
import { publicJwks } from '../../src/store/jwt-keys.ts';
import { createTenant } from '../../src/store/tenants.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { startTokenServer, type TokenServer } from '../support/oauth-server.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { attemptsOf, deleteAllJobs, type JobSpecInput, openTestStore, runsOf, type TestStore, testJobSpec } from '../support/store.ts';

const logger = pino({ level: 'silent' });
const CLIENT = { clientId: 'chime client', clientSecret: 's3cret+/=' };
const FINAL = new Set(['succeeded', 'failed', 'expired']);

describe.each(DATABASE_TARGETS)('callback auth on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  let receiver: Receiver;
  let tokens: TokenServer;
  let agent: Agent;
  let dispatcher: Dispatcher | null = null;

  beforeAll(async () => {
    store = await openTestStore(target, systemClock);
    tenantId = (await createTenant(store.ctx, 'auth')).tenant.tenantId;
    tokens = await startTokenServer(CLIENT);
    receiver = await startReceiver();
    agent = createCallbackAgent({ allowPrivate: true });
  });
  afterAll(async () => {
    await dispatcher?.stop(0);
    await receiver?.close();
    await tokens?.close();
    await agent?.destroy();
    await store?.close();
  });
  beforeEach(async () => {
    await deleteAllJobs(store.database);
    receiver.received.length = 0;
    // A resource server: only tokens the token endpoint issued and did not revoke.
    receiver.respond = (r) => (tokens.valid(/^Bearer (.+)$/.exec(r.headers.authorization ?? '')?.[1]) ? { status: 200 } : { status: 401 });
    tokens.reset();
  });
  afterEach(async () => {
    await dispatcher?.stop(0);
    dispatcher = null;
  });

  /** A dispatcher with its own delivery function, so its token cache starts empty. */
  const start = async (o: { allowPrivate?: boolean } = {}) => {
    const deliver = createDeliver(o.allowPrivate === false ? createCallbackAgent({ allowPrivate: false }) : agent);
    dispatcher = createDispatcher({
      database: store.database,
      clock: systemClock,
      logger,
      deliver,
      keyring: createKeyring({ db: store.database.db, cipher: store.cipher, clock: systemClock }),
      userAgent: 'chime-test',
      options: { pollMs: 100, reapIntervalMs: 60_000, shutdownGraceMs: 2_000 },
    });
    await dispatcher.start();
  };
  const oauth2 = (): CallbackAuth => ({
    type: 'oauth2',
    tokenUrl: tokens.tokenUrl,
    clientId: CLIENT.clientId,
    scope: 'runs:write',
    audience: 'https://api.test',
  });
  const job = (path: string, auth: CallbackAuth | null, o: JobSpecInput & { authSecret?: string | null } = {}) => {
    const now = Date.now();
    const spec: JobSpec = {
      ...testJobSpec(now, {
        ...o,
        callback: { url: `${receiver.url}${path}`, timeoutMs: 10_000, ...(auth ? { auth } : {}), ...o.callback },
      }),
      authSecret: o.authSecret === undefined ? (auth?.type === 'oauth2' ? CLIENT.clientSecret : null) : o.authSecret,
    };
    return createJob(store.ctx, tenantId, spec, now);
  };
  const finished = (jobId: string) =>
    eventually(
      async () => {
        const [run] = await runsOf(store.database, jobId);
        return run && FINAL.has(run.status) ? run : undefined;
      },
      { what: `the run of job ${jobId} to end` },
    );
  const bearers = (path: string) => receiver.received.filter((r) => r.path === path).map((r) => r.headers.authorization);

  it('fetches a client credentials token as RFC 6749 §4.4 says and sends it as a Bearer token, cached across attempts', async () => {
    let calls = 0;
    const resource = receiver.respond;
    receiver.respond = (r) => (++calls < 3 && resource(r).status === 200 ? { status: 503 } : resource(r));
    const j = await job('/cached', oauth2(), { retry: { strategy: 'schedule', delaysMs: [50, 50] } });
    await start();
    const run = await finished(j.id);
    expect(run).toMatchObject({ status: 'succeeded', attempts: 3 });
    expect(tokens.requests).toEqual([
      {
        grantType: 'client_credentials',
        clientId: CLIENT.clientId,
        clientSecret: CLIENT.clientSecret,
        scope: 'runs:write',
        audience: 'https://api.test',
        contentType: 'application/x-www-form-urlencoded',
        issued: 'tok-1',
      },
    ]);
    expect(bearers('/cached')).toEqual(['Bearer tok-1', 'Bearer tok-1', 'Bearer tok-1']);
    // A later run of another job with the same client reuses it too.
    const again = await job('/cached-2', oauth2());
    expect((await finished(again.id)).status).toBe('succeeded');
    expect(tokens.requests).toHaveLength(1);
  });

  it('concurrent attempts needing the same token share one token request', async () => {
    tokens.delayMs = 300;
    const jobs = await Promise.all(Array.from({ length: 6 }, (_, i) => job(`/together-${i}`, oauth2())));
    await start();
    for (const j of jobs) expect((await finished(j.id)).status).toBe('succeeded');
    expect(tokens.requests).toHaveLength(1);
  });

  it('a 401 refreshes the token once and resends within the same attempt', async () => {
    await start();
    const first = await job('/refresh-1', oauth2());
    expect((await finished(first.id)).status).toBe('succeeded');
    tokens.revokeAll(); // the cached tok-1 is now refused by the receiver
    const second = await job('/refresh-2', oauth2());
    const run = await finished(second.id);
    expect(run).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(bearers('/refresh-2')).toEqual(['Bearer tok-1', 'Bearer tok-2']);
    expect(await attemptsOf(store.database, run.id)).toEqual([{ attempt: 1, responseStatus: 200, errorClass: null, error: null }]);
    expect(tokens.requests).toHaveLength(2);
    // A receiver that refuses every token: one refresh, one resend, and the attempt fails on the 401.
    receiver.respond = () => ({ status: 401 });
    const refused = await job('/refused', oauth2(), { retry: { strategy: 'none' } });
    const failed = await finished(refused.id);
    expect(failed.status).toBe('failed');
    expect(bearers('/refused')).toEqual(['Bearer tok-2', 'Bearer tok-3']);
    expect((await attemptsOf(store.database, failed.id))[0]).toMatchObject({ responseStatus: 401, errorClass: 'bad_status' });
  });

  it('refreshes a token shortly before expires_in, and uses one without expires_in for a few minutes', async () => {
    tokens.expiresIn = 1; // used for 0.9 s (10 % before it expires)
    await start();
    expect((await finished((await job('/short-1', oauth2())).id)).status).toBe('succeeded');
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await finished((await job('/short-2', oauth2())).id)).status).toBe('succeeded');
    expect(tokens.requests.map((r) => r.issued)).toEqual(['tok-1', 'tok-2']);
    tokens.expiresIn = undefined;
    tokens.revokeAll();
    expect((await finished((await job('/no-expiry-1', oauth2())).id)).status).toBe('succeeded');
    expect((await finished((await job('/no-expiry-2', oauth2())).id)).status).toBe('succeeded');
    // tok-2 was revoked: one 401 refresh gave tok-3, kept for the next run.
    expect(tokens.requests.map((r) => r.issued)).toEqual(['tok-1', 'tok-2', 'tok-3']);
  });

  it.each([
    ['a 500', { kind: 'status', status: 500 }, /answered 500 \(error temporarily_unavailable\)/],
    ['a body that is not JSON', { kind: 'not-json' }, /without a JSON object/],
    ['no access_token', { kind: 'no-token' }, /without an access_token/],
  ] as const)(
    'a token endpoint answering %s fails the attempt auth_token_failed, nothing sent, and at-most-once retries it',
    async (_, mode, message) => {
      tokens.mode = mode;
      const j = await job('/no-token', oauth2(), { deliveryMode: 'at-most-once', retry: { strategy: 'schedule', delaysMs: [1000] } });
      await start();
      await eventually(
        async () => ((await attemptsOf(store.database, (await runsOf(store.database, j.id))[0]!.id)).length > 0 ? true : undefined),
        {
          what: 'the first attempt',
        },
      );
      tokens.mode = { kind: 'ok' };
      const run = await finished(j.id);
      expect(run).toMatchObject({ status: 'succeeded', attempts: 2 });
      const [failed, ok] = await attemptsOf(store.database, run.id);
      expect(failed).toMatchObject({ attempt: 1, responseStatus: null, errorClass: 'auth_token_failed' });
      expect(failed!.error).toMatch(message);
      expect(failed!.error).not.toContain(CLIENT.clientSecret);
      expect(ok).toMatchObject({ attempt: 2, responseStatus: 200 });
      expect(bearers('/no-token')).toHaveLength(1);
    },
  );

  it('a token endpoint that cannot be reached fails the attempt auth_token_failed', async () => {
    const closed = await startTokenServer(CLIENT);
    await closed.close();
    const j = await job('/unreachable', { ...oauth2(), tokenUrl: closed.tokenUrl } as CallbackAuth, { retry: { strategy: 'none' } });
    await start();
    const run = await finished(j.id);
    expect(run.status).toBe('failed');
    expect((await attemptsOf(store.database, run.id))[0]).toMatchObject({ errorClass: 'auth_token_failed' });
    expect((await attemptsOf(store.database, run.id))[0]!.error).toMatch(/ECONNREFUSED/);
    expect(bearers('/unreachable')).toEqual([]);
  });

  it('the token request goes through the destination guard at connect time', async () => {
    const j = await job('/guarded', oauth2(), { retry: { strategy: 'none' } });
    await start({ allowPrivate: false });
    const run = await finished(j.id);
    expect((await attemptsOf(store.database, run.id))[0]).toMatchObject({ errorClass: 'auth_token_failed' });
    expect((await attemptsOf(store.database, run.id))[0]!.error).toMatch(/destination refused/);
    expect(tokens.requests).toEqual([]);
    expect(receiver.received).toEqual([]);
  });

  it('basic auth sends Authorization: Basic base64(user:password), UTF-8', async () => {
    const j = await job('/basic', { type: 'basic', username: 'chime' }, { authSecret: 'pässwörd:1' });
    receiver.respond = () => ({ status: 200 });
    await start();
    expect((await finished(j.id)).status).toBe('succeeded');
    const [header] = bearers('/basic');
    expect(header).toBe(`Basic ${Buffer.from('chime:pässwörd:1', 'utf8').toString('base64')}`);
    expect(tokens.requests).toEqual([]);
  });

  it('callback.jwtAudience is the aud claim of Chime-Signature', async () => {
    receiver.respond = () => ({ status: 200 });
    const j = await job('/aud', null, { callback: { jwtAudience: 'https://receiver.example/aud' } });
    const plain = await job('/no-aud', null);
    await start();
    await finished(j.id);
    await finished(plain.id);
    const jwks = await publicJwks(store.ctx);
    const got = receiver.received.find((r) => r.path === '/aud')!;
    const request = { headers: got.headers as Record<string, string>, body: got.body, url: `${receiver.url}/aud` };
    expect(await verifyChimeSignature(request, { jwks, audience: 'https://receiver.example/aud' })).toMatchObject({ ok: true });
    expect(await verifyChimeSignature(request, { jwks, audience: 'someone-else' })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/aud/),
    });
    const none = receiver.received.find((r) => r.path === '/no-aud')!;
    const payload = JSON.parse(Buffer.from(String(none.headers['chime-signature']).split('.')[1]!, 'base64url').toString('utf8'));
    expect(payload.aud).toBeUndefined();
  });
});
