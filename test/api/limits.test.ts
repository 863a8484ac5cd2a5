/**
 * Per-tenant limits: the rate limit (token bucket per tenant per API process → 429 problem+json with Retry-After)
 * and the active-jobs quota (→ 403 quota_exceeded, as API.md "Operating tenants" says), in process on each database with a manual clock, and once
 * through the real process to show the CHIME_* variables reach the app.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenBuckets } from '../../src/api/rate-limit.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { query } from '../../src/store/db.ts';
import { OPEN_JOBS_RECOUNT_MS } from '../../src/store/open-jobs.ts';
import { type ApiResponse, createTestTenant, type TestTenant } from '../support/api.ts';
import { apiClient, startTestApp, TEST_APP_URL, type TestApp } from '../support/app.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { T0 } from '../support/store.ts';

const job = (extra: Record<string, unknown> = {}) => ({
  schedule: { type: 'delay', delayMs: 3_600_000 },
  callback: { url: 'http://127.0.0.1:9/hook' },
  ...extra,
});

function expectRateLimited(r: ApiResponse, what = ''): void {
  expect(r.status, what).toBe(429);
  expect(r.headers.get('content-type'), what).toBe('application/problem+json');
  expect(r.body, what).toMatchObject({
    type: 'urn:chime:problem:rate_limited',
    status: 429,
    detail: expect.stringContaining('requests a second'),
  });
  expect(Number(r.headers.get('retry-after')), what).toBeGreaterThanOrEqual(1);
}

function expectQuotaExceeded(r: { status: number; problem?: unknown; body?: unknown; headers?: Headers }, limit: number): void {
  expect(r.status).toBe(403);
  const problem = r.problem ?? r.body;
  if (r.headers) expect(r.headers.get('content-type')).toBe('application/problem+json');
  expect(problem).toMatchObject({
    type: 'urn:chime:problem:quota_exceeded',
    status: 403,
    detail: expect.stringContaining(`at most ${limit} active or paused jobs`),
  });
}

describe('TokenBuckets', () => {
  it('allows a burst, then refills at the rate, and says how long to wait', () => {
    const b = new TokenBuckets(2, 3);
    expect([1, 2, 3].map(() => b.take('t', 0).ok)).toEqual([true, true, true]);
    expect(b.take('t', 0)).toEqual({ ok: false, retryAfterSeconds: 1 });
    expect(b.take('t', 499).ok).toBe(false); // 0.998 tokens
    expect(b.take('t', 500).ok).toBe(true); // one token per 500 ms
    expect(b.take('t', 500).ok).toBe(false);
    expect([1, 2, 3, 4].map(() => b.take('t', 60_000).ok)).toEqual([true, true, true, false]); // never above the burst
    expect(b.take('t', 10).ok).toBe(false); // a clock going back adds nothing
  });

  it('keeps at most maxKeys buckets, dropping the least recently used', () => {
    const b = new TokenBuckets(1, 1, 3);
    for (const k of ['a', 'b', 'c']) expect(b.take(k, 0).ok).toBe(true);
    expect(b.take('a', 0).ok).toBe(false); // a is now the most recently used
    expect(b.take('d', 0).ok).toBe(true); // evicts b
    expect(b.size).toBe(3);
    expect(b.take('a', 0).ok).toBe(false); // a kept its empty bucket
    expect(b.take('b', 0).ok).toBe(true); // b starts again full (evicting c)
    expect(b.size).toBe(3);
  });
});

describe.each(DATABASE_TARGETS)('per-tenant rate limit ($kind)', (target) => {
  const clock = new ManualClock(T0);
  let app: TestApp;
  let a: TestTenant;
  let b: TestTenant;

  beforeAll(async () => {
    app = await startTestApp({ limits: { ratePerSecond: 2, burst: 4, maxActiveJobs: 0 } }, { target, clock });
    a = await app.tenant('a');
    b = await app.tenant('b');
  });
  afterAll(() => app?.close());

  it('answers 429 with Retry-After once a tenant has spent its burst, and only that tenant', async () => {
    for (let i = 0; i < 4; i++) expect((await a.api.get('/v1/jobs')).status).toBe(200);
    expectRateLimited(await a.api.get('/v1/jobs'));
    expectRateLimited(await a.api.post('/v1/jobs', job()), 'writes too');
    expectRateLimited(await a.api.get('/jobs/00000000-0000-7000-8000-000000000000/runs'), 'compatibility routes too');
    expect((await b.api.get('/v1/jobs')).status).toBe(200); // B has its own bucket
    clock.advance(500); // 2 per second: one token back
    expect((await a.api.get('/v1/tenant')).status).toBe(200);
    expectRateLimited(await a.api.get('/v1/tenant'));
    clock.advance(10_000); // refilled to the burst, no more
    for (let i = 0; i < 4; i++) expect((await a.api.get('/v1/tenant')).status).toBe(200);
    expectRateLimited(await a.api.get('/v1/tenant'));
    clock.advance(10_000);
  });

  it("unauthenticated requests do not spend a tenant's bucket", async () => {
    const wrongSecret = a.apiKey.slice(0, -4) + (a.apiKey.endsWith('AAAA') ? 'BBBB' : 'AAAA'); // A's prefix, wrong key
    for (const key of [wrongSecret, 'chk_unknownunknownunknownunknownunknown', null]) {
      const api = apiClient(TEST_APP_URL, key, app.fetch);
      for (let i = 0; i < 10; i++) expect((await api.get('/v1/jobs')).status).toBe(401);
    }
    for (let i = 0; i < 4; i++) expect((await a.api.get('/v1/jobs')).status).toBe(200);
    clock.advance(10_000);
  });

  it('does not limit operations routes or tenant creation', async () => {
    for (let i = 0; i < 10; i++) {
      for (const path of ['/healthz', '/readyz', '/.well-known/jwks.json', '/openapi.json']) {
        expect((await app.fetch(`${TEST_APP_URL}${path}`)).status, path).toBe(200);
      }
    }
    for (let i = 0; i < 6; i++) await createTestTenant(TEST_APP_URL, `t${i}`, app.fetch);
  });

  it('keeps buckets per app instance (per API process)', async () => {
    for (let i = 0; i < 4; i++) expect((await a.api.get('/v1/jobs')).status).toBe(200);
    expectRateLimited(await a.api.get('/v1/jobs'));
    const other = apiClient(TEST_APP_URL, a.apiKey, (await app.another()).fetch);
    expect((await other.get('/v1/jobs')).status).toBe(200);
    clock.advance(10_000);
  });
});

describe.each(DATABASE_TARGETS)('active-jobs quota ($kind)', (target) => {
  const LIMIT = 3;
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({ limits: { ratePerSecond: 0, burst: 0, maxActiveJobs: LIMIT } }, { target });
  });
  afterAll(() => app?.close());

  it('refuses a job past the quota on every creating route; paused jobs count, canceled ones do not', async () => {
    const t = await app.tenant('quota');
    const first = await t.api.post('/v1/jobs', job(), { 'idempotency-key': 'first' });
    expect(first.status).toBe(201);
    expect((await t.api.request('PUT', '/v1/jobs/by-key/k2', job())).status).toBe(201);
    const third = await t.api.post('/jobs', { name: 'c', cronExpr: '0 0 * * *', handlerUrl: 'http://127.0.0.1:9/hook' });
    expect(third.status).toBe(201);
    expect((await t.api.request('PATCH', `/v1/jobs/${first.body.jobId}`, { paused: true })).status).toBe(200);

    expectQuotaExceeded(await t.api.post('/v1/jobs', job()), LIMIT);
    expectQuotaExceeded(await t.api.post('/v1/jobs', job(), { 'idempotency-key': 'other' }), LIMIT);
    expectQuotaExceeded(await t.api.request('PUT', '/v1/jobs/by-key/k4', job()), LIMIT);
    expectQuotaExceeded(await t.api.post('/jobs', { name: 'd', cronExpr: '0 0 * * *', handlerUrl: 'http://127.0.0.1:9/hook' }), LIMIT);
    const batch = await t.api.post('/v1/jobs/batch', { jobs: [job(), job()] });
    expect(batch.status).toBe(200);
    for (const r of batch.body.results) expectQuotaExceeded(r, LIMIT);
    // Not new jobs: an idempotent replay, a replacement of an active job, a trigger.
    expect((await t.api.post('/v1/jobs', job(), { 'idempotency-key': 'first' })).status).toBe(200);
    expect((await t.api.request('PUT', '/v1/jobs/by-key/k2', job({ name: 'replaced' }))).status).toBe(200);
    expect((await t.api.post(`/v1/jobs/${third.body.jobId}/trigger`)).status).toBe(202);
    expect((await t.api.get('/v1/jobs')).body.jobs).toHaveLength(LIMIT);

    // Canceling one makes room for one: a batch of two gets one in, answered per job in order.
    expect((await t.api.request('DELETE', `/v1/jobs/${third.body.jobId}`)).status).toBe(204);
    const partial = await t.api.post('/v1/jobs/batch', { jobs: [job({ name: 'in' }), { bad: true }, job({ name: 'out' })] });
    expect(partial.body.results.map((r: { status: number }) => r.status)).toEqual([201, 400, 403]);
    expectQuotaExceeded(partial.body.results[2], LIMIT);

    // Replacing a canceled job makes it active again: that counts as a new job.
    const k2 = (await t.api.get('/v1/jobs')).body.jobs.find((j: { key: string | null }) => j.key === 'k2');
    expect((await t.api.request('DELETE', `/v1/jobs/${k2.jobId}`)).status).toBe(204);
    expect((await t.api.post('/v1/jobs', job())).status).toBe(201);
    expectQuotaExceeded(await t.api.request('PUT', '/v1/jobs/by-key/k2', job()), LIMIT);
    expect((await t.api.get(`/v1/jobs/${k2.jobId}`)).body.status).toBe('canceled');
  });

  it('counts per tenant', async () => {
    const other = await app.tenant('other');
    for (let i = 0; i < LIMIT; i++) expect((await other.api.post('/v1/jobs', job())).status).toBe(201);
    expectQuotaExceeded(await other.api.post('/v1/jobs', job()), LIMIT);
  });
});

describe.each(DATABASE_TARGETS)('active-jobs quota across API processes ($kind)', (target) => {
  const LIMIT = 100;
  const clock = new ManualClock(T0);
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({ limits: { ratePerSecond: 0, burst: 0, maxActiveJobs: LIMIT } }, { target, clock });
  });
  afterAll(() => app?.close());

  it("sees another process's creations at its next count of the tenant's open jobs, OPEN_JOBS_RECOUNT_MS at most", async () => {
    const t = await app.tenant('two-processes');
    expect((await t.api.post('/v1/jobs', job())).status).toBe(201); // counted: 0 open, then 1 added
    // A second API process fills the quota.
    const other = apiClient(TEST_APP_URL, t.apiKey, (await app.another()).fetch);
    const batch = await other.post('/v1/jobs/batch', { jobs: Array.from({ length: LIMIT }, () => job()) });
    expect(batch.body.results.filter((r: { status: number }) => r.status === 201)).toHaveLength(LIMIT - 1);
    // This process's estimate (1 open, far from the quota) still answers: the documented overshoot.
    expect((await t.api.post('/v1/jobs', job())).status).toBe(201);
    // Once its count is older than OPEN_JOBS_RECOUNT_MS, it counts again and refuses.
    clock.advance(OPEN_JOBS_RECOUNT_MS + 1);
    expectQuotaExceeded(await t.api.post('/v1/jobs', job()), LIMIT);
    const [row] = await query<{ n: string }>(
      app.database.db,
      sql`select count(*) as n from jobs where tenant_id = ${t.tenantId} and status = 'active'`,
    );
    expect(Number(row!.n)).toBe(LIMIT + 1);
  });
});

describe.each(DATABASE_TARGETS)('limits from the environment, in the real process ($kind)', (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess;

  beforeAll(async () => {
    db = await freshDatabase(target);
    chime = await startChime({ ...db.env, CHIME_RATE_LIMIT_PER_SECOND: '1', CHIME_RATE_LIMIT_BURST: '5', CHIME_MAX_ACTIVE_JOBS: '2' }, [
      'serve',
      '--role',
      'api',
    ]);
  }, 120_000);
  afterAll(async () => {
    await chime?.stop();
    await db?.drop();
  });

  it('CHIME_MAX_ACTIVE_JOBS, CHIME_RATE_LIMIT_PER_SECOND and CHIME_RATE_LIMIT_BURST apply', async () => {
    const t = await createTestTenant(chime.url, 'env');
    expect((await t.api.post('/v1/jobs', job())).status).toBe(201);
    expect((await t.api.post('/v1/jobs', job())).status).toBe(201);
    expectQuotaExceeded(await t.api.post('/v1/jobs', job()), 2);
    // 3 tokens spent; 20 at once cannot all pass, whatever the machine's speed: at most burst + 1/s.
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 20 }, () => t.api.get('/v1/tenant')));
    const elapsedS = (Date.now() - started) / 1000;
    const passed = results.filter((r) => r.status === 200).length;
    expect(passed).toBeLessThanOrEqual(5 - 3 + Math.ceil(elapsedS) + 1);
    const limited = results.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expectRateLimited(limited[0]!);
    expect(passed + limited.length).toBe(20);
  });
});
