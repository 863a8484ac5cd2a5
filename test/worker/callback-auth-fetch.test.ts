/**
 * `callback.auth` through the Worker's fetch delivery (src/worker/fetch-deliver.ts): an attempt as the Workers tick
 * makes it (`performAttempt` over `createFetchDeliver`, here Node's global fetch) sends basic credentials, and fetches,
 * caches and refreshes an OAuth2 token from a real token endpoint on 127.0.0.1, as the Node dispatcher does; a token
 * that cannot be had is `auth_token_failed`.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { performAttempt } from '../../src/dispatch/attempt.ts';
import type { Keyring } from '../../src/dispatch/keyring.ts';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import { systemClock } from '../../src/domain/clock.ts';
import type { CallbackAuth } from '../../src/domain/job.ts';
import { resolveRetryPolicy } from '../../src/domain/retry.ts';
import { createFetchDeliver } from '../../src/worker/fetch-deliver.ts';
import { startTokenServer, type TokenServer } from '../support/oauth-server.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

const CLIENT = { clientId: 'worker', clientSecret: 'worker-secret' };
/** Opens a "sealed" value by taking off its `sealed:` prefix; the JWT is a stand-in (not what is checked here). */
const keyring: Keyring = {
  secretsFor: async () => [`whsec_${Buffer.alloc(32, 7).toString('base64')}`],
  jwtSigner: async () => ({ kid: 'test', sign: async () => 'header.claims.signature' }),
  openAuthToken: async (sealed) => sealed.replace(/^sealed:/, ''),
};

describe('callback auth through fetch delivery (Workers)', () => {
  let receiver: Receiver;
  let tokens: TokenServer;
  const deliver = createFetchDeliver({ allowPrivate: true });
  let n = 0;

  beforeAll(async () => {
    tokens = await startTokenServer(CLIENT);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await tokens?.close();
  });
  beforeEach(() => {
    tokens.reset();
    receiver.respond = (r) => (tokens.valid(/^Bearer (.+)$/.exec(r.headers.authorization ?? '')?.[1]) ? { status: 200 } : { status: 401 });
  });

  const run = (path: string, auth: CallbackAuth, secret: string): ClaimedRun => ({
    shard: 0,
    runId: `01900000-0000-7000-8000-${String(++n).padStart(12, '0')}`,
    eventId: null,
    jobId: '01900000-0000-7000-8000-0000000000aa',
    tenantId: '01900000-0000-7000-8000-0000000000bb',
    scheduledForMs: Date.now(),
    trigger: 'schedule',
    attempt: 1,
    leaseExpiresAtMs: Date.now() + 60_000,
    dueAtMs: Date.now(),
    callback: { url: `${receiver.url}${path}`, method: 'POST', headers: {}, successStatusCodes: ['2xx'], timeoutMs: 5_000, auth },
    authTokenEnc: null,
    authSecretEnc: `sealed:${secret}`,
    payload: { hello: 'world' },
    retry: resolveRetryPolicy({ strategy: 'none' }),
    relevancyWindowMs: null,
    deliveryMode: 'at-least-once',
  });
  const attempt = (r: ClaimedRun) =>
    performAttempt(r, { clock: systemClock, keyring, deliver, userAgent: 'chime-worker-test', random: () => 0.5 });
  const oauth2 = (): CallbackAuth => ({ type: 'oauth2', tokenUrl: tokens.tokenUrl, clientId: CLIENT.clientId });
  const auths = (path: string) => receiver.received.filter((r) => r.path === path).map((r) => r.headers.authorization);

  it('sends basic credentials', async () => {
    receiver.respond = () => ({ status: 200 });
    expect(await attempt(run('/basic', { type: 'basic', username: 'w' }, 'pw'))).toMatchObject({ runStatus: 'succeeded' });
    expect(auths('/basic')).toEqual([`Basic ${Buffer.from('w:pw').toString('base64')}`]);
  });

  it('fetches an OAuth2 token once for several attempts, and refreshes it once on a 401', async () => {
    expect(await attempt(run('/o', oauth2(), CLIENT.clientSecret))).toMatchObject({ runStatus: 'succeeded' });
    expect(await attempt(run('/o', oauth2(), CLIENT.clientSecret))).toMatchObject({ runStatus: 'succeeded' });
    expect(tokens.requests).toHaveLength(1);
    tokens.revokeAll();
    expect(await attempt(run('/o', oauth2(), CLIENT.clientSecret))).toMatchObject({ runStatus: 'succeeded', responseStatus: 200 });
    expect(auths('/o')).toEqual(['Bearer tok-1', 'Bearer tok-1', 'Bearer tok-1', 'Bearer tok-2']);
    expect(tokens.requests).toHaveLength(2);
  });

  it('a token endpoint that refuses the client fails the attempt auth_token_failed, with nothing sent', async () => {
    const outcome = await attempt(run('/wrong', oauth2(), 'wrong-secret'));
    expect(outcome).toMatchObject({ runStatus: 'failed', errorClass: 'auth_token_failed', responseStatus: null });
    expect(outcome!.error).toMatch(/answered 401 \(error invalid_client\)/);
    expect(auths('/wrong')).toEqual([]);
  });
});
