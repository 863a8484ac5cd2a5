/**
 * API.md "Destination control" at the API, on every database target: `callback.auth` (basic, OAuth2 client
 * credentials) with its secret write-only and sealed (never in a Job view, a list or the audit log; kept, replaced or
 * removed by PATCH and PUT), `callback.jwtAudience`, `body` with `callback.contentType` instead of `payload`, the
 * `schedule` retry strategy, `flowControlKey`'s form; every refusal a 400 problem naming its field.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../src/store/db.ts';
import type { ApiResponse, TestTenant } from '../support/api.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';

const PASSWORD = 'p4ss-w0rd-never-shown';
const CLIENT_SECRET = 'client-secret-never-shown';
const TOKEN_URL = 'http://127.0.0.1:9/oauth/token';
const good = (o: Record<string, unknown> = {}) => ({
  schedule: { type: 'delay', delayMs: 60_000 },
  callback: { url: 'http://127.0.0.1:9/hook' },
  ...o,
});
const basic = { type: 'basic', username: 'chime', password: PASSWORD };
const oauth2 = {
  type: 'oauth2',
  tokenUrl: TOKEN_URL,
  clientId: 'chime-client',
  clientSecret: CLIENT_SECRET,
  scope: 'jobs:run read',
  audience: 'https://api.example',
};
const paths = (r: ApiResponse) => (r.body.errors ?? []).map((e: { path: string }) => e.path);

describe.each(DATABASE_TARGETS)('destination control at the API on $kind', (target) => {
  let app: TestApp;
  let tenant: TestTenant;
  beforeAll(async () => {
    app = await startTestApp({}, { target });
    tenant = await app.tenant();
  });
  afterAll(() => app?.close());

  const create = async (body: unknown) => {
    const r = await tenant.api.post('/v1/jobs', body);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body;
  };
  const patch = (jobId: string, body: unknown) => tenant.api.request('PATCH', `/v1/jobs/${jobId}`, body);
  const sealedSecret = async (jobId: string) =>
    (await query<{ s: string | null }>(app.database.db, sql`select auth_secret_enc as s from jobs where id = ${jobId}`))[0]!.s;
  /** Everything a tenant can read about its jobs, as one text. */
  const everythingShown = async () =>
    JSON.stringify([(await tenant.api.get('/v1/jobs?limit=100')).body, (await tenant.api.get('/v1/audit-log?limit=100')).body]);

  it('basic and OAuth2 auth: the public part is shown, the secret is sealed and never shown', async () => {
    const b = await create(good({ callback: { url: 'http://127.0.0.1:9/b', auth: basic, jwtAudience: 'receiver-b' } }));
    expect(b.callback).toMatchObject({ auth: { type: 'basic', username: 'chime' }, hasAuthToken: false, jwtAudience: 'receiver-b' });
    const o = await create(good({ callback: { url: 'http://127.0.0.1:9/o', auth: oauth2 } }));
    expect(o.callback.auth).toEqual({
      type: 'oauth2',
      tokenUrl: TOKEN_URL,
      clientId: 'chime-client',
      scope: 'jobs:run read',
      audience: 'https://api.example',
    });
    for (const job of [b, o]) {
      const sealed = await sealedSecret(job.jobId);
      expect(sealed).toMatch(/^v[12]\./);
      expect(sealed).not.toContain(PASSWORD);
      expect(JSON.stringify((await tenant.api.get(`/v1/jobs/${job.jobId}`)).body)).not.toMatch(/never-shown/);
    }
    expect(await everythingShown()).not.toMatch(/never-shown/);
    // An empty basic password (an API key as the user-id) is no secret: nothing sealed.
    const empty = await create(
      good({ callback: { url: 'http://127.0.0.1:9/e', auth: { type: 'basic', username: 'sk_test_1', password: '' } } }),
    );
    expect(await sealedSecret(empty.jobId)).toBeNull();
  });

  it('refuses auth that cannot be sent, each naming its field', async () => {
    const cases: [unknown, string[]][] = [
      [{ url: 'http://127.0.0.1:9/', authToken: 't', auth: basic }, ['callback.auth']],
      [{ url: 'http://127.0.0.1:9/', auth: basic, headers: { Authorization: 'Basic x' } }, ['callback.headers.Authorization']],
      [{ url: 'http://127.0.0.1:9/', auth: { ...basic, username: 'a:b' } }, ['callback.auth.username']],
      [{ url: 'http://127.0.0.1:9/', auth: { type: 'basic', username: 'u' } }, ['callback.auth.password']],
      [{ url: 'http://127.0.0.1:9/', auth: { ...oauth2, clientSecret: undefined } }, ['callback.auth.clientSecret']],
      [{ url: 'http://127.0.0.1:9/', auth: { ...oauth2, scope: 'a  b' } }, ['callback.auth.scope']],
      [{ url: 'http://127.0.0.1:9/', auth: { ...oauth2, tokenUrl: 'ftp://127.0.0.1/token' } }, ['callback.auth.tokenUrl']],
      [{ url: 'http://127.0.0.1:9/', auth: { ...oauth2, type: 'digest' } }, ['callback.auth.type']],
      [{ url: 'http://127.0.0.1:9/', jwtAudience: '' }, ['callback.jwtAudience']],
    ];
    for (const [callback, expected] of cases) {
      const r = await tenant.api.post('/v1/jobs', good({ callback }));
      expect(r.status, JSON.stringify(callback)).toBe(400);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
      expect(paths(r), JSON.stringify(callback)).toEqual(expected);
    }
  });

  it('a token URL goes under the destination rule of callback URLs', async () => {
    const guarded = await startTestApp({ allowPrivateDestinations: false });
    try {
      const t = await guarded.tenant();
      const r = await t.api.post(
        '/v1/jobs',
        good({ callback: { url: 'https://93.184.215.14/hook', auth: { ...oauth2, tokenUrl: 'http://10.0.0.1/token' } } }),
      );
      expect(r.status).toBe(400);
      expect(paths(r)).toEqual(['callback.auth.tokenUrl']);
    } finally {
      await guarded.close();
    }
  });

  it('PATCH keeps a secret left out, replaces a given one, and refuses to keep it for another token endpoint', async () => {
    const job = await create(good({ callback: { url: 'http://127.0.0.1:9/p', auth: oauth2 } }));
    const sealed = await sealedSecret(job.jobId);
    const { clientSecret: _s, ...withoutSecret } = oauth2;
    const kept = await patch(job.jobId, { callback: { auth: { ...withoutSecret, scope: 'other' } } });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expect(kept.body.callback.auth.scope).toBe('other');
    expect(await sealedSecret(job.jobId)).toBe(sealed);
    const moved = await patch(job.jobId, { callback: { auth: { ...withoutSecret, tokenUrl: 'http://127.0.0.1:9/elsewhere' } } });
    expect(moved.status).toBe(400);
    expect(paths(moved)).toEqual(['callback.auth.clientSecret']);
    const toBasic = await patch(job.jobId, { callback: { auth: { type: 'basic', username: 'u' } } });
    expect(paths(toBasic)).toEqual(['callback.auth.password']);
    expect(paths(await patch(job.jobId, { callback: { authToken: 'tok' } }))).toEqual(['callback.auth']);
    const replaced = await patch(job.jobId, { callback: { auth: { ...oauth2, clientSecret: 'another-never-shown' } } });
    expect(replaced.status).toBe(200);
    expect(await sealedSecret(job.jobId)).not.toBe(sealed);
    const swapped = await patch(job.jobId, { callback: { auth: null, authToken: 'tok' } });
    expect(swapped.status).toBe(200);
    expect(swapped.body.callback).toMatchObject({ auth: null, hasAuthToken: true });
    expect(await sealedSecret(job.jobId)).toBeNull();
    expect(await everythingShown()).not.toMatch(/never-shown/);
  });

  it('PUT by key replaces the auth whole: without one, the secret is gone', async () => {
    const first = await tenant.api.request(
      'PUT',
      '/v1/jobs/by-key/auth-put',
      good({ callback: { url: 'http://127.0.0.1:9/k', auth: basic } }),
    );
    expect(first.status).toBe(201);
    expect(await sealedSecret(first.body.jobId)).not.toBeNull();
    const second = await tenant.api.request('PUT', '/v1/jobs/by-key/auth-put', good({ body: 'plain' }));
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ body: 'plain', payload: null, callback: { auth: null } });
    expect(await sealedSecret(first.body.jobId)).toBeNull();
  });

  it('body with contentType instead of payload: stored and shown as sent, up to 256 KiB in a request of up to 320 KiB', async () => {
    const xml = '<?xml version="1.0"?><report day="2026-12-01">ünïcode ✓</report>';
    const j = await create(good({ body: xml, callback: { url: 'http://127.0.0.1:9/x', contentType: 'application/xml; charset=utf-8' } }));
    expect(j).toMatchObject({ body: xml, payload: null, callback: { contentType: 'application/xml; charset=utf-8' } });
    expect((await tenant.api.get(`/v1/jobs/${j.jobId}`)).body.body).toBe(xml);
    const max = 'a'.repeat(256 * 1024);
    expect((await create(good({ body: max }))).body).toBe(max);
    // 256 KiB of UTF-8 bytes, not characters: 'é' is two.
    const over = await tenant.api.post('/v1/jobs', good({ body: 'é'.repeat(128 * 1024 + 1) }));
    expect(over.status).toBe(400);
    expect(paths(over)).toEqual(['body']);
  });

  it('refuses body with payload, body on GET, and content types that are not media types or not UTF-8', async () => {
    const cases: [unknown, string[]][] = [
      [good({ body: 'x', payload: { a: 1 } }), ['body']],
      [good({ body: 'x', callback: { url: 'http://127.0.0.1:9/', method: 'GET' } }), ['body']],
      [good({ payload: { a: 1 }, callback: { url: 'http://127.0.0.1:9/', method: 'GET' } }), ['payload']],
      [good({ body: 'x', callback: { url: 'http://127.0.0.1:9/', contentType: 'xml' } }), ['callback.contentType']],
      [
        good({ body: 'x', callback: { url: 'http://127.0.0.1:9/', contentType: 'text/plain; charset=iso-8859-1' } }),
        ['callback.contentType'],
      ],
      [good({ body: 42 }), ['body']],
    ];
    for (const [body, expected] of cases) {
      const r = await tenant.api.post('/v1/jobs', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(paths(r), JSON.stringify(body)).toEqual(expected);
    }
    // A batch names it per job.
    const batch = await tenant.api.post('/v1/jobs/batch', { jobs: [good({ body: 'ok' }), good({ body: 'x', payload: 1 })] });
    expect(batch.body.results.map((r: { status: number }) => r.status)).toEqual([201, 400]);
    expect(batch.body.results[1].problem.errors.map((e: { path: string }) => e.path)).toEqual(['body']);
  });

  it('PATCH: payload and body are one request body, setting one drops the other', async () => {
    const j = await create(good({ payload: { n: 1 } }));
    const toBody = await patch(j.jobId, { body: 'a=1&b=2', callback: { contentType: 'application/x-www-form-urlencoded' } });
    expect(toBody.body).toMatchObject({ body: 'a=1&b=2', payload: null, callback: { contentType: 'application/x-www-form-urlencoded' } });
    const toPayload = await patch(j.jobId, { payload: { n: 2 }, callback: { contentType: null } });
    expect(toPayload.body).toMatchObject({ body: null, payload: { n: 2 }, callback: { contentType: null } });
    expect(paths(await patch(j.jobId, { body: 'x', payload: { n: 3 } }))).toEqual(['body']);
    expect(paths(await patch(j.jobId, { body: 'x', callback: { method: 'GET' } }))).toEqual(['body']);
    const get = await create(good({ callback: { url: 'http://127.0.0.1:9/g', method: 'GET' } }));
    expect(paths(await patch(get.jobId, { body: 'x' }))).toEqual(['body']);
  });

  it('retry strategy "schedule": maxAttempts follows delaysMs, a disagreeing one is refused', async () => {
    const j = await create(good({ retry: { strategy: 'schedule', delaysMs: [1000, 10_000, 60_000] } }));
    expect(j.retry).toMatchObject({ strategy: 'schedule', delaysMs: [1000, 10_000, 60_000], maxAttempts: 4, jitter: false });
    expect((await create(good({ retry: { strategy: 'schedule', delaysMs: [0], maxAttempts: 2, jitter: true } }))).retry).toMatchObject({
      maxAttempts: 2,
      jitter: true,
    });
    const cases: [unknown, string[]][] = [
      [{ strategy: 'schedule', delaysMs: [1000, 2000], maxAttempts: 5 }, ['retry.maxAttempts']],
      [{ strategy: 'schedule' }, ['retry.delaysMs']],
      [{ strategy: 'exponential', delaysMs: [1000] }, ['retry.delaysMs']],
      [{ delaysMs: [1000] }, ['retry.delaysMs']],
      [{ strategy: 'schedule', delaysMs: [] }, ['retry.delaysMs']],
      [{ strategy: 'schedule', delaysMs: Array.from({ length: 51 }, () => 1000) }, ['retry.delaysMs']],
      [{ strategy: 'schedule', delaysMs: [1000, 86_400_001] }, ['retry.delaysMs.1']],
    ];
    for (const [retry, expected] of cases) {
      const r = await tenant.api.post('/v1/jobs', good({ retry }));
      expect(r.status, JSON.stringify(retry)).toBe(400);
      expect(paths(r), JSON.stringify(retry)).toEqual(expected);
    }
    // PATCH merges: new delays re-count the attempts; leaving "schedule" drops the delays.
    const more = await patch(j.jobId, { retry: { delaysMs: [5, 6] } });
    expect(more.body.retry).toMatchObject({ strategy: 'schedule', delaysMs: [5, 6], maxAttempts: 3 });
    expect(paths(await patch(j.jobId, { retry: { maxAttempts: 9 } }))).toEqual(['retry.maxAttempts']);
    const back = await patch(j.jobId, { retry: { strategy: 'fixed', maxAttempts: 2 } });
    expect(back.body.retry).toMatchObject({ strategy: 'fixed', maxAttempts: 2 });
    expect(back.body.retry.delaysMs).toBeUndefined();
    const plain = await create(good());
    expect(paths(await patch(plain.jobId, { retry: { strategy: 'schedule' } }))).toEqual(['retry.delaysMs']);
  });

  it('flowControlKey: a key of A-Za-z0-9._:- (1..100), or null', async () => {
    for (const bad of ['', 'has space', 'x'.repeat(101), 'ünï']) {
      const r = await tenant.api.post('/v1/jobs', good({ flowControlKey: bad }));
      expect(r.status).toBe(400);
      expect(paths(r)).toEqual(['flowControlKey']);
    }
    expect((await create(good({ flowControlKey: null }))).flowControlKey).toBeNull();
  });

  it('flowControlKey must name a flow control of the tenant: on create, in a batch, by key and on PATCH', async () => {
    const missing = (r: ApiResponse) => {
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(paths(r)).toEqual(['flowControlKey']);
      expect(r.body.detail).toContain('PUT /v1/flow-controls/nowhere');
    };
    missing(await tenant.api.post('/v1/jobs', good({ flowControlKey: 'nowhere' })));
    missing(await tenant.api.request('PUT', '/v1/jobs/by-key/fk', good({ flowControlKey: 'nowhere' })));
    const batch = await tenant.api.post('/v1/jobs/batch', { jobs: [good({ flowControlKey: 'nowhere' }), good()] });
    expect(batch.body.results.map((r: { status: number }) => r.status)).toEqual([400, 201]);
    expect(batch.body.results[0].problem.errors.map((e: { path: string }) => e.path)).toEqual(['flowControlKey']);
    const job = await create(good());
    missing(await tenant.api.request('PATCH', `/v1/jobs/${job.jobId}`, { flowControlKey: 'nowhere' }));

    // Another tenant's flow control of that key does not count; the tenant's own does.
    const other = await app.tenant('other');
    expect((await other.api.request('PUT', '/v1/flow-controls/nowhere', { parallelism: 2 })).status).toBe(201);
    missing(await tenant.api.post('/v1/jobs', good({ flowControlKey: 'nowhere' })));
    expect((await tenant.api.request('PUT', '/v1/flow-controls/nowhere', { parallelism: 2 })).status).toBe(201);
    expect((await create(good({ flowControlKey: 'nowhere' }))).flowControlKey).toBe('nowhere');
    const patched = await tenant.api.request('PATCH', `/v1/jobs/${job.jobId}`, { flowControlKey: 'nowhere' });
    expect(patched.body.flowControlKey).toBe('nowhere');
    // Named by open jobs it cannot go; once they name another (or none), it can.
    const refused = await tenant.api.request('DELETE', '/v1/flow-controls/nowhere');
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toMatch(/2 job\(s\) name this flow control/);
  });

  it('flow controls: created 201, replaced 200 (what is absent is none), read with their state, listed, each bound named', async () => {
    const put = (key: string, body: unknown) => tenant.api.request('PUT', `/v1/flow-controls/${key}`, body);
    const created = await put('stripe', { rate: { limit: 25, periodMs: 1000 }, parallelism: 10 });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      key: 'stripe',
      rate: { limit: 25, periodMs: 1000 },
      parallelism: 10,
      paused: false,
      inFlight: 0,
      waiting: 0,
    });
    const replaced = await put('stripe', { parallelism: 3, paused: true });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ rate: null, parallelism: 3, paused: true });
    expect((await tenant.api.get('/v1/flow-controls/stripe')).body).toEqual(replaced.body);
    const listed = await tenant.api.get('/v1/flow-controls?limit=1');
    expect(listed.body.flowControls).toHaveLength(1);
    const next = await tenant.api.get(`/v1/flow-controls?limit=100&cursor=${listed.body.nextCursor}`);
    expect([...listed.body.flowControls, ...next.body.flowControls].map((f: { key: string }) => f.key)).toContain('stripe');

    for (const [body, path] of [
      [{ rate: { limit: 0, periodMs: 1000 } }, 'rate.limit'],
      [{ rate: { limit: 100_001, periodMs: 1000 } }, 'rate.limit'],
      [{ rate: { limit: 5, periodMs: 999 } }, 'rate.periodMs'],
      [{ rate: { limit: 5, periodMs: 86_400_001 } }, 'rate.periodMs'],
      [{ parallelism: 0 }, 'parallelism'],
      [{ parallelism: 10_001 }, 'parallelism'],
      [{ paused: 'yes' }, 'paused'],
      [{ burst: 3 }, 'burst'],
    ] as const) {
      const r = await put('stripe', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(paths(r), JSON.stringify(body)).toEqual([path]);
    }
    const badKey = await put('has%20space', { parallelism: 1 });
    expect(badKey.status).toBe(400);
    expect(paths(badKey)).toEqual(['key']);
    expect((await tenant.api.get('/v1/flow-controls/stripe')).body).toMatchObject({ parallelism: 3, paused: true });
    expect((await tenant.api.get('/v1/flow-controls/none')).status).toBe(404);
    expect((await tenant.api.request('DELETE', '/v1/flow-controls/none')).status).toBe(404);
    expect((await tenant.api.request('DELETE', '/v1/flow-controls/stripe')).status).toBe(204);
    expect((await tenant.api.get('/v1/flow-controls/stripe')).status).toBe(404);
  });
});
