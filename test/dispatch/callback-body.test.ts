/**
 * Bodies that are not JSON (API.md "Destination control"), with the real dispatcher and undici delivery, on every
 * database target: a job's `body` goes out byte for byte with its `callback.contentType` (or `text/plain`), and both
 * signatures cover those very bytes, so a receiver guarded by `@chime/receiver` (`expressWebhook`, Standard Webhooks
 * and `Chime-Signature` with the JWKS) accepts a text/plain, an XML and a form body. A payload keeps
 * `application/json` unless `contentType` says otherwise; a GET carries no body.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expressWebhook } from '@chime/receiver/node';
import { pino } from 'pino';
import type { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallbackAgent, createDeliver } from '../../src/dispatch/deliver.ts';
import { createDispatcher } from '../../src/dispatch/drivers/node-dispatcher.ts';
import { createKeyring } from '../../src/dispatch/keyring.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { createJob } from '../../src/store/jobs.ts';
import { ensureJwtKey, publicJwks } from '../../src/store/jwt-keys.ts';
import { createTenant } from '../../src/store/tenants.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type JobSpecInput, openTestStore, runsOf, type TestStore, testJobSpec } from '../support/store.ts';

type Seen = { path: string; method: string; contentType: string | undefined; raw: Buffer; verified: boolean };

const XML = '<?xml version="1.0" encoding="UTF-8"?>\n<order id="42"><item qty="2">Café crème ☕</item></order>\n';
const FORM = new URLSearchParams({ event: 'report.ready', note: 'a&b=c ü', 'x[]': '1' }).toString();
const TEXT = 'line one\r\nline two\twith tab — and “quotes”\n';

describe.each(DATABASE_TARGETS)('bodies that are not JSON on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  let secret: string;
  let agent: Agent;
  let server: http.Server;
  let base: string;
  const seen: Seen[] = [];

  beforeAll(async () => {
    store = await openTestStore(target, systemClock);
    const made = await createTenant(store.ctx, 'bodies');
    tenantId = made.tenant.tenantId;
    secret = made.signingSecret;
    agent = createCallbackAgent({ allowPrivate: true });
    await ensureJwtKey(store.ctx);
    const jwks = await publicJwks(store.ctx);
    // A receiver as a user would write one: @chime/receiver's middleware on every route, checking both signatures.
    const guards = new Map<string, ReturnType<typeof expressWebhook>>();
    server = http.createServer((req, res) => {
      const path = req.url!;
      let guard = guards.get(path);
      if (!guard) guards.set(path, (guard = expressWebhook({ secrets: secret, jwks, url: `${base}${path}` })));
      void guard(req as never, res as never, (err) => {
        const r = req as unknown as { rawBody?: string };
        seen.push({
          path,
          method: req.method!,
          contentType: req.headers['content-type'],
          raw: Buffer.from(r.rawBody ?? '', 'utf8'),
          verified: !err,
        });
        res.writeHead(err ? 500 : 200).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await agent?.destroy();
    await store?.close();
  });

  /** Creates the jobs, runs a dispatcher until each has ended, and returns their runs' statuses by path. */
  const deliver = async (jobs: [path: string, o: JobSpecInput][]) => {
    const now = Date.now();
    const made: { id: string }[] = [];
    for (const [path, o] of jobs) {
      const spec = testJobSpec(now, { ...o, callback: { url: `${base}${path}`, timeoutMs: 10_000, ...o.callback } });
      made.push(
        await createJob(
          store.ctx,
          tenantId,
          { ...spec, body: o.body ?? null, ...(o.payload === undefined && o.body !== undefined ? { payload: null } : {}) },
          now,
        ),
      );
    }
    const d = createDispatcher({
      database: store.database,
      clock: systemClock,
      logger: pino({ level: 'silent' }),
      deliver: createDeliver(agent),
      keyring: createKeyring({ db: store.database.db, cipher: store.cipher, clock: systemClock }),
      userAgent: 'chime-test',
      options: { pollMs: 100, reapIntervalMs: 60_000, shutdownGraceMs: 2_000 },
    });
    await d.start();
    try {
      return await eventually(
        async () => {
          const statuses = await Promise.all(made.map(async (j) => (await runsOf(store.database, j.id))[0]?.status));
          return statuses.every((s) => s === 'succeeded' || s === 'failed') ? statuses : undefined;
        },
        { what: 'every run to end' },
      );
    } finally {
      await d.stop(0);
    }
  };
  const at = (path: string) => seen.find((s) => s.path === path)!;

  it('text/plain, XML and form bodies go out byte for byte, and @chime/receiver verifies both signatures of each', async () => {
    const statuses = await deliver([
      ['/text', { body: TEXT }],
      ['/xml', { body: XML, callback: { contentType: 'application/xml' } }],
      ['/form', { body: FORM, callback: { contentType: 'application/x-www-form-urlencoded', method: 'PUT' } }],
    ]);
    expect(statuses).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(at('/text')).toMatchObject({ verified: true, contentType: 'text/plain', raw: Buffer.from(TEXT, 'utf8') });
    expect(at('/xml')).toMatchObject({ verified: true, contentType: 'application/xml', raw: Buffer.from(XML, 'utf8') });
    expect(at('/form')).toMatchObject({ verified: true, method: 'PUT', contentType: 'application/x-www-form-urlencoded' });
    expect(Object.fromEntries(new URLSearchParams(at('/form').raw.toString('utf8')))).toEqual({
      event: 'report.ready',
      note: 'a&b=c ü',
      'x[]': '1',
    });
  });

  it('a payload is JSON, under its own media type when contentType names one; a GET carries no body', async () => {
    const statuses = await deliver([
      ['/json', { payload: { n: 1 } }],
      ['/cloudevent', { payload: { specversion: '1.0' }, callback: { contentType: 'application/cloudevents+json' } }],
      ['/get', { payload: null, callback: { method: 'GET' } }],
      ['/empty', { body: '' }],
    ]);
    expect(statuses).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    expect(at('/json')).toMatchObject({ verified: true, contentType: 'application/json', raw: Buffer.from('{"n":1}') });
    expect(at('/cloudevent')).toMatchObject({ verified: true, contentType: 'application/cloudevents+json' });
    expect(at('/get')).toMatchObject({ verified: true, method: 'GET', contentType: undefined, raw: Buffer.alloc(0) });
    expect(at('/empty')).toMatchObject({ verified: true, contentType: 'text/plain', raw: Buffer.alloc(0) });
  });
});
