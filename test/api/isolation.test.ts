/**
 * Cross-tenant isolation: for every tenant route of the app (read from its route table, so a new route without a
 * case here fails), tenant B tries tenant A's ids and names. Another tenant's resource is `404` problem+json,
 * never `403`; lists never show A's rows; names (job keys) are per tenant; and A's stored data, read by SQL, is
 * unchanged afterwards. Then API key revocation: effective at once, also in a second app instance on the same
 * database (two `createApp` over one database, as two API processes).
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.ts';
import type { ApiResponse, TestTenant } from '../support/api.ts';
import { apiClient, startTestApp, TEST_APP_URL, type TestApp, tenantSnapshot } from '../support/app.ts';
import { DATABASE_TARGETS, WITH_CITUS } from '../support/databases.ts';
import { T0 } from '../support/store.ts';

/** Routes without tenant data: operations, documentation, the console's static pages, and tenant creation (admin token). */
const NOT_TENANT_ROUTES = new Set([
  '/healthz',
  '/readyz',
  '/metrics',
  '/.well-known/jwks.json',
  '/openapi.json',
  '/docs',
  '/console',
  '/console/*',
  '/v1/tenants',
  // The receiver's completion routes: the completion token is bound to its run (test/e2e/async-completion.test.ts).
  '/v1/runs/:runId/completion',
  '/v1/runs/:runId/heartbeat',
  // The operator's routes (admin token): test/api/admin-tenants.test.ts.
  '/v1/admin/tenants',
  '/v1/admin/tenants/:tenantId',
]);

const jobBody = (extra: Record<string, unknown> = {}) => ({
  schedule: { type: 'delay', delayMs: 3_600_000 },
  callback: { url: 'http://127.0.0.1:9/hook' },
  ...extra,
});

/** A `404` problem that says nothing about A's resource beyond the id the caller sent. */
function expectNotFound(r: ApiResponse, what: string): void {
  expect(r.status, what).toBe(404);
  expect(r.headers.get('content-type'), what).toBe('application/problem+json');
  expect(r.body, what).toMatchObject({ type: 'urn:chime:problem:not_found', status: 404 });
}

/** Tenant A and its ids; A has a job under each name of `keys` (the first is `jobId`). */
type A = {
  tenant: TestTenant;
  jobId: string;
  keys: { post: string; batch: string; put: string };
  runId: string;
  failedRunId: string;
  keyId: string;
  endpointId: string;
};
type Case = (b: TestTenant, a: A) => Promise<void>;

const ids = (list: { jobId?: string; runId?: string; keyId?: string }[]) => list.map((x) => x.jobId ?? x.runId ?? x.keyId);
const runIds = (list: { runId: string }[]) => list.map((r) => r.runId);

/** One case per tenant route, keyed as Hono lists routes (`METHOD /path/:param`). */
const CASES: Record<string, Case> = {
  'GET /v1/tenant': async (b, a) => {
    const r = await b.api.get('/v1/tenant');
    expect(r.status).toBe(200);
    expect(r.body.tenantId).toBe(b.tenantId);
    expect(r.body.tenantId).not.toBe(a.tenant.tenantId);
  },
  'POST /v1/api-keys': async (b) => {
    const r = await b.api.post('/v1/api-keys', { name: 'b-key' });
    expect(r.status).toBe(201);
    expect(ids((await b.api.get('/v1/api-keys')).body.apiKeys)).toContain(r.body.keyId);
  },
  'GET /v1/api-keys': async (b, a) => {
    const r = await b.api.get('/v1/api-keys');
    expect(r.status).toBe(200);
    expect(ids(r.body.apiKeys)).not.toContain(a.keyId);
    expect(r.body.apiKeys.map((k: { prefix: string }) => k.prefix)).not.toContain(a.tenant.apiKey.slice(0, 16));
  },
  'DELETE /v1/api-keys/:keyId': async (b, a) => {
    expectNotFound(await b.api.request('DELETE', `/v1/api-keys/${a.keyId}`), 'delete A key');
    expect((await a.tenant.api.get('/v1/tenant')).status).toBe(200);
  },
  'POST /v1/signing-secrets/rotate': async (b) => {
    expect((await b.api.post('/v1/signing-secrets/rotate')).status).toBe(201);
  },
  'POST /v1/jobs': async (b, a) => {
    const r = await b.api.post('/v1/jobs', jobBody({ key: a.keys.post }));
    expect(r.status).toBe(201); // job keys are per tenant: a 409 would tell B that A has this key
    expect(r.body.jobId).not.toBe(a.jobId);
  },
  'GET /v1/jobs': async (b, a) => {
    for (const q of ['', '?status=active', '?limit=100', `?cursor=ffffffff-ffff-7fff-bfff-ffffffffffff`]) {
      const r = await b.api.get(`/v1/jobs${q}`);
      expect(r.status, q).toBe(200);
      expect(ids(r.body.jobs), q).not.toContain(a.jobId);
    }
  },
  'POST /v1/jobs/batch': async (b, a) => {
    const r = await b.api.post('/v1/jobs/batch', { jobs: [jobBody({ key: a.keys.batch })] });
    expect(r.status).toBe(200);
    expect(r.body.results[0].status).toBe(201);
  },
  'PUT /v1/jobs/by-key/:key': async (b, a) => {
    const same = await b.api.request('PUT', `/v1/jobs/by-key/${a.keys.put}`, jobBody({ name: 'b' }));
    expect(same.status).toBe(201); // A's key names nothing of B's: B gets a job of its own
    expect(same.body.jobId).not.toBe(a.jobId);
    const again = await b.api.request('PUT', `/v1/jobs/by-key/${a.keys.put}`, jobBody({ name: 'b2' }));
    expect(again.status).toBe(200);
    expect(again.body.jobId).toBe(same.body.jobId);
  },
  'GET /v1/jobs/by-key/:key': async (b, a) => {
    // The keys are per tenant, and the cases above may have given B jobs of its own under A's keys: B's answer is
    // then B's job, never A's.
    for (const key of Object.values(a.keys)) {
      const own = await a.tenant.api.get(`/v1/jobs/by-key/${key}`);
      expect(own.status, `A reads its own key ${key}`).toBe(200);
      const r = await b.api.get(`/v1/jobs/by-key/${key}`);
      if (r.status === 404) expectNotFound(r, `get by key ${key}`);
      else {
        expect(r.body.jobId, key).not.toBe(own.body.jobId);
        expect((await b.api.get(`/v1/jobs/${r.body.jobId}`)).status, key).toBe(200);
      }
    }
    expectNotFound(await b.api.get('/v1/jobs/by-key/only-a-has-this'), 'get by a key only A has');
  },
  'GET /v1/jobs/:jobId': async (b, a) => expectNotFound(await b.api.get(`/v1/jobs/${a.jobId}`), 'get'),
  'PATCH /v1/jobs/:jobId': async (b, a) => {
    for (const body of [{ paused: true }, { name: 'stolen' }, jobBody()]) {
      expectNotFound(await b.api.request('PATCH', `/v1/jobs/${a.jobId}`, body), `patch ${JSON.stringify(body)}`);
    }
  },
  'DELETE /v1/jobs/:jobId': async (b, a) => expectNotFound(await b.api.request('DELETE', `/v1/jobs/${a.jobId}`), 'delete'),
  'POST /v1/jobs/:jobId/trigger': async (b, a) => expectNotFound(await b.api.post(`/v1/jobs/${a.jobId}/trigger`), 'trigger'),
  'POST /v1/jobs/:jobId/backfill': async (b, a) =>
    expectNotFound(
      await b.api.post(`/v1/jobs/${a.jobId}/backfill`, { from: '2020-01-01T00:00:00Z', to: '2020-01-02T00:00:00Z' }),
      'backfill',
    ),
  'GET /v1/jobs/:jobId/runs': async (b, a) => expectNotFound(await b.api.get(`/v1/jobs/${a.jobId}/runs`), 'runs'),
  'POST /v1/schedules/preview': async (b) => {
    expect((await b.api.post('/v1/schedules/preview', { schedule: { type: 'delay', delayMs: 1000 } })).status).toBe(200);
  },
  'GET /v1/runs/:runId': async (b, a) => {
    expectNotFound(await b.api.get(`/v1/runs/${a.runId}`), 'run');
    expectNotFound(await b.api.get(`/v1/runs/${a.failedRunId}`), 'failed run');
  },
  'POST /v1/runs/:runId/replay': async (b, a) => expectNotFound(await b.api.post(`/v1/runs/${a.failedRunId}/replay`), 'replay'),
  'GET /v1/dead-letters': async (b, a) => {
    expect((await a.tenant.api.get('/v1/dead-letters')).body.runs.map((r: { runId: string }) => r.runId)).toContain(a.failedRunId);
    for (const q of ['', '?cursor=ffffffff-ffff-7fff-bfff-ffffffffffff']) {
      const r = await b.api.get(`/v1/dead-letters${q}`);
      expect(r.status).toBe(200);
      expect(r.body.runs).toEqual([]);
    }
  },
  'GET /v1/runs': async (b, a) => {
    for (const q of ['', `?jobId=${a.jobId}`, '?status=failed', '?cursor=ffffffff-ffff-7fff-bfff-ffffffffffff']) {
      const r = await b.api.get(`/v1/runs${q}`);
      expect(r.status, q).toBe(200);
      const seen = runIds(r.body.runs);
      expect(seen, q).not.toContain(a.runId);
      expect(seen, q).not.toContain(a.failedRunId);
    }
    expect(runIds((await b.api.get(`/v1/runs?jobId=${a.jobId}`)).body.runs)).toEqual([]);
    expect(runIds((await a.tenant.api.get(`/v1/runs?jobId=${a.jobId}`)).body.runs)).toEqual(
      expect.arrayContaining([a.runId, a.failedRunId]),
    );
  },
  'GET /v1/audit-log': async (b, a) => {
    const targets = async (t: TestTenant, q = '') =>
      (await t.api.get(`/v1/audit-log?limit=100${q}`)).body.entries.map((e: { target: { id: string } }) => e.target.id);
    expect(await targets(a.tenant)).toContain(a.jobId); // A's own log has its job
    for (const q of ['', `&keyId=${a.keyId}`, '&action=job.created']) expect(await targets(b, q), q).not.toContain(a.jobId);
  },
  'GET /v1/usage': async (b, a) => {
    // A's one failed run finished today and its jobs are open; B sees its own counts only, whatever B has made so far.
    const active = async (t: TestTenant) => (await t.api.get('/v1/jobs?status=active&limit=100')).body.jobs.length;
    const failed = (r: ApiResponse) => r.body.daily.reduce((n: number, d: { failed: number }) => n + d.failed, 0);
    const mine = await a.tenant.api.get('/v1/usage?days=90');
    expect(mine.status).toBe(200);
    expect(failed(mine)).toBe(1);
    expect(mine.body.jobs).toEqual({ active: await active(a.tenant), paused: 0 });
    const r = await b.api.get('/v1/usage?days=90');
    expect(r.status).toBe(200);
    expect(r.body.daily).toHaveLength(90);
    expect(failed(r)).toBe(0);
    expect(r.body.jobs).toEqual({ active: await active(b), paused: 0 });
  },
  'DELETE /v1/dead-letters/:runId': async (b, a) => {
    expectNotFound(await b.api.request('DELETE', `/v1/dead-letters/${a.failedRunId}`), 'dismiss');
    expect(runIds((await a.tenant.api.get('/v1/dead-letters')).body.runs)).toContain(a.failedRunId);
  },
  'POST /v1/dead-letters/replay': async (b, a) => {
    for (const body of [{ runIds: [a.failedRunId] }, { jobId: a.jobId }, {}]) {
      const r = await b.api.post('/v1/dead-letters/replay', body);
      expect(r.status, JSON.stringify(body)).toBe(202);
      expect(r.body, JSON.stringify(body)).toEqual({ replayed: 0, runIds: [], remaining: 0 });
    }
    expect(runIds((await a.tenant.api.get('/v1/dead-letters')).body.runs)).toContain(a.failedRunId);
  },
  'POST /v1/jobs/bulk': async (b, a) => {
    for (const action of ['pause', 'cancel']) {
      for (const filter of [{ jobIds: [a.jobId] }, { q: 'a-job' }, { metadata: { owner: 'a' } }]) {
        const r = await b.api.post('/v1/jobs/bulk', { action, filter });
        expect(r.status, `${action} ${JSON.stringify(filter)}`).toBe(200);
        expect(r.body, `${action} ${JSON.stringify(filter)}`).toEqual({ matched: 0, changed: 0 });
      }
    }
  },
  'POST /v1/notification-endpoints': async (b, a) => {
    const r = await b.api.post('/v1/notification-endpoints', { url: 'http://127.0.0.1:9/b-events', events: ['job.paused'] });
    expect(r.status).toBe(201);
    expect(r.body.endpointId).not.toBe(a.endpointId);
  },
  'GET /v1/notification-endpoints': async (b, a) => {
    const r = await b.api.get('/v1/notification-endpoints');
    expect(r.status).toBe(200);
    expect(r.body.endpoints.map((e: { endpointId: string }) => e.endpointId)).not.toContain(a.endpointId);
    expect(r.body.endpoints.map((e: { url: string }) => e.url)).not.toContain('http://127.0.0.1:9/a-events');
  },
  'DELETE /v1/notification-endpoints/:endpointId': async (b, a) => {
    expectNotFound(await b.api.request('DELETE', `/v1/notification-endpoints/${a.endpointId}`), 'delete endpoint');
    expect(
      (await a.tenant.api.get('/v1/notification-endpoints')).body.endpoints.map((e: { endpointId: string }) => e.endpointId),
    ).toContain(a.endpointId);
  },
  'PUT /v1/flow-controls/:key': async (b, a) => {
    // The same key names B's own flow control: A's is not replaced.
    expect((await b.api.request('PUT', '/v1/flow-controls/a-only', { parallelism: 9 })).status).toBe(201);
    expect((await a.tenant.api.get('/v1/flow-controls/a-only')).body).toMatchObject({ parallelism: 3, rate: { limit: 7 } });
    expect((await b.api.request('DELETE', '/v1/flow-controls/a-only')).status).toBe(204);
  },
  'GET /v1/flow-controls': async (b) => {
    const r = await b.api.get('/v1/flow-controls');
    expect(r.status).toBe(200);
    expect(r.body.flowControls.map((f: { key: string }) => f.key)).not.toContain('a-only');
  },
  'GET /v1/flow-controls/:key': async (b) => expectNotFound(await b.api.get('/v1/flow-controls/a-only'), 'flow control'),
  'DELETE /v1/flow-controls/:key': async (b, a) => {
    expectNotFound(await b.api.request('DELETE', '/v1/flow-controls/a-only'), 'delete flow control');
    expect((await a.tenant.api.get('/v1/flow-controls/a-only')).status).toBe(200);
  },
  'PUT /v1/calendars/:key': async (b, a) => {
    // The same key names B's own calendar: A's is not replaced.
    expect((await b.api.request('PUT', '/v1/calendars/a-only', { timezone: 'UTC', holidays: ['2030-01-02'] })).status).toBe(201);
    expect((await a.tenant.api.get('/v1/calendars/a-only')).body).toMatchObject({ timezone: 'Europe/Berlin', holidays: ['2030-01-01'] });
    expect((await b.api.request('DELETE', '/v1/calendars/a-only')).status).toBe(204);
  },
  'GET /v1/calendars': async (b) => {
    const r = await b.api.get('/v1/calendars');
    expect(r.status).toBe(200);
    expect(r.body.calendars.map((c: { key: string }) => c.key)).not.toContain('a-only');
  },
  'GET /v1/calendars/:key': async (b) => expectNotFound(await b.api.get('/v1/calendars/a-only'), 'calendar'),
  'DELETE /v1/calendars/:key': async (b, a) => {
    expectNotFound(await b.api.request('DELETE', '/v1/calendars/a-only'), 'delete calendar');
    expect((await a.tenant.api.get('/v1/calendars/a-only')).status).toBe(200);
  },
  'GET /v1/jobs/:jobId/result-deliveries': async (b, a) => {
    expectNotFound(await b.api.get(`/v1/jobs/${a.jobId}/result-deliveries`), 'result deliveries');
    expect((await a.tenant.api.get(`/v1/jobs/${a.jobId}/result-deliveries`)).status).toBe(200);
  },
  'GET /v1/notification-endpoints/:endpointId/deliveries': async (b, a) =>
    expectNotFound(await b.api.get(`/v1/notification-endpoints/${a.endpointId}/deliveries`), 'deliveries'),
  'POST /jobs': async (b, a) => {
    const r = await b.api.post('/jobs', { name: 'b', cronExpr: '0 0 * * *', handlerUrl: 'http://127.0.0.1:9/hook' });
    expect(r.status).toBe(201);
    expect(r.body.jobId).not.toBe(a.jobId);
  },
  'GET /jobs/:jobId/runs': async (b, a) => expectNotFound(await b.api.get(`/jobs/${a.jobId}/runs`), 'compat runs'),
  'POST /jobs/:jobId/trigger': async (b, a) => expectNotFound(await b.api.post(`/jobs/${a.jobId}/trigger`), 'compat trigger'),
  'PATCH /jobs/:jobId': async (b, a) => expectNotFound(await b.api.request('PATCH', `/jobs/${a.jobId}`, { paused: true }), 'compat patch'),
};

describe.each(WITH_CITUS)('cross-tenant isolation ($kind)', (target) => {
  let app: TestApp;
  let a: A;
  let b: TestTenant;
  let before: string;

  beforeAll(async () => {
    app = await startTestApp({}, { target });
    const tenant = await app.tenant('a');
    b = await app.tenant('b');
    const keys = { post: 'a-post', batch: 'a-batch', put: 'a-put' };
    const job = await tenant.api.post('/v1/jobs', jobBody({ key: keys.post, name: 'a-job', metadata: { owner: 'a' } }));
    for (const key of [keys.batch, keys.put, 'only-a-has-this'])
      expect((await tenant.api.post('/v1/jobs', jobBody({ key }))).status).toBe(201);
    const runId = (await tenant.api.post(`/v1/jobs/${job.body.jobId}/trigger`)).body.runId;
    const failedRunId = (await tenant.api.post(`/v1/jobs/${job.body.jobId}/trigger`)).body.runId;
    await app.database.db.execute(
      sql`update runs set status = 'failed', finished_at = now(), next_attempt_at = null where id = ${failedRunId}`,
    );
    const key = await tenant.api.post('/v1/api-keys', { name: 'a-second-key' });
    const endpoint = await tenant.api.post('/v1/notification-endpoints', { url: 'http://127.0.0.1:9/a-events', events: ['run.failed'] });
    expect(endpoint.status).toBe(201);
    expect(
      (await tenant.api.request('PUT', '/v1/flow-controls/a-only', { parallelism: 3, rate: { limit: 7, periodMs: 1000 } })).status,
    ).toBe(201);
    expect((await tenant.api.request('PUT', '/v1/calendars/a-only', { timezone: 'Europe/Berlin', holidays: ['2030-01-01'] })).status).toBe(
      201,
    );
    a = { tenant, jobId: job.body.jobId, keys, runId, failedRunId, keyId: key.body.keyId, endpointId: endpoint.body.endpointId };
    before = await tenantSnapshot(app.database, tenant.tenantId);
  });
  afterAll(() => app?.close());

  it('has a case for every tenant route, and no case for a route that is gone', () => {
    const routed = new Set(
      app.routes.filter((r) => r.method !== 'ALL' && !NOT_TENANT_ROUTES.has(r.path)).map((r) => `${r.method} ${r.path}`),
    );
    expect([...routed].sort()).toEqual(Object.keys(CASES).sort());
  });

  it.each(Object.keys(CASES))('%s: tenant B cannot reach tenant A', async (route) => {
    await CASES[route]!(b, a);
  });

  it("leaves tenant A's stored data unchanged", async () => {
    expect(await tenantSnapshot(app.database, a.tenant.tenantId)).toBe(before);
    const job = await a.tenant.api.get(`/v1/jobs/${a.jobId}`);
    expect(job.body).toMatchObject({ status: 'active', name: 'a-job', key: a.keys.post });
  });
});

describe.each(DATABASE_TARGETS)('API key revocation ($kind)', (target) => {
  const clock = new ManualClock(T0);
  let app: TestApp;
  let second: { fetch: TestApp['fetch'] };
  let tenant: TestTenant;

  beforeAll(async () => {
    app = await startTestApp({}, { target, clock });
    second = await app.another();
    tenant = await app.tenant('revoker');
  });
  afterAll(() => app?.close());

  it('a revoked key is refused at once by every app instance on the database', async () => {
    const created = await tenant.api.post('/v1/api-keys', { name: 'ci' });
    expect(created.status).toBe(201);
    const viaFirst = apiClient(TEST_APP_URL, created.body.key, app.fetch);
    const viaSecond = apiClient(TEST_APP_URL, created.body.key, second.fetch);
    expect((await viaFirst.get('/v1/tenant')).status).toBe(200);
    expect((await viaSecond.get('/v1/tenant')).status).toBe(200);

    const revoked = await apiClient(TEST_APP_URL, tenant.apiKey, second.fetch).request('DELETE', `/v1/api-keys/${created.body.keyId}`);
    expect(revoked.status).toBe(204);
    for (const [name, api] of [
      ['first', viaFirst],
      ['second', viaSecond],
    ] as const) {
      for (const path of ['/v1/tenant', '/v1/jobs', `/jobs/${created.body.keyId}/runs`]) {
        const r = await api.get(path);
        expect(r.status, `${name} ${path}`).toBe(401);
        expect(r.headers.get('content-type')).toBe('application/problem+json');
        expect(r.headers.get('www-authenticate')).toBe('Bearer');
      }
    }
    // The tenant's other key is untouched; the revoked one is gone from the list; revoking again is 404.
    expect((await tenant.api.get('/v1/tenant')).status).toBe(200);
    expect(ids((await tenant.api.get('/v1/api-keys')).body.apiKeys)).not.toContain(created.body.keyId);
    expectNotFound(await tenant.api.request('DELETE', `/v1/api-keys/${created.body.keyId}`), 'revoke twice');
  });

  it('an expired key is refused from its expiresAt on, and lastUsedAt records use', async () => {
    const created = await tenant.api.post('/v1/api-keys', { name: 'short', expiresAt: new Date(T0 + 60_000).toISOString() });
    expect(created.status).toBe(201);
    const api = apiClient(TEST_APP_URL, created.body.key, second.fetch);
    expect((await api.get('/v1/tenant')).status).toBe(200);
    const listed = (await tenant.api.get('/v1/api-keys')).body.apiKeys.find((k: { keyId: string }) => k.keyId === created.body.keyId);
    expect(listed).toMatchObject({ name: 'short', expiresAt: new Date(T0 + 60_000).toISOString(), lastUsedAt: new Date(T0).toISOString() });
    clock.advance(60_000);
    expect((await api.get('/v1/tenant')).status).toBe(401);
    expect((await apiClient(TEST_APP_URL, created.body.key, app.fetch).get('/v1/tenant')).status).toBe(401);
  });
});
