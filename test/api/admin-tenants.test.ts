/**
 * Operating tenants with the admin token (API.md "Operating tenants"; src/api/routes/admin-tenants.ts), in process on
 * each database target: the admin token and only it opens the routes; the list pages every tenant with its open jobs
 * and quotas; PATCH validates (400 naming the field), answers 404 for an unknown tenant, suspends (the tenant's keys
 * answer 403 tenant_suspended, a wrong key still 401), resumes, and sets quota overrides that the API holds (maxJobs
 * → 403 quota_exceeded naming it, requestsPerSecond → 429 with Retry-After) and that null removes; DELETE removes the
 * tenant and every row it owns, in its bucket.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { newId } from '../../src/domain/ids.ts';
import { shardOf } from '../../src/domain/shard.ts';
import { query } from '../../src/store/db.ts';
import { TENANT_OWNED_TABLES } from '../../src/store/tenants.ts';
import type { Api, TestTenant } from '../support/api.ts';
import { apiClient, startTestApp, TEST_APP_URL, type TestApp } from '../support/app.ts';
import { ADMIN_TOKEN } from '../support/chime-process.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { T0 } from '../support/store.ts';

const job = (name: string) => ({ name, schedule: { type: 'delay', delayMs: 3_600_000 }, callback: { url: 'http://127.0.0.1:9/hook' } });

describe.each(DATABASE_TARGETS)('operating tenants ($kind)', (target) => {
  const clock = new ManualClock(T0);
  let app: TestApp;
  let admin: Api;
  let a: TestTenant;
  let b: TestTenant;
  const unexpected: unknown[] = [];

  beforeAll(async () => {
    app = await startTestApp(
      { limits: { ratePerSecond: 0, burst: 0, maxActiveJobs: 0, callbacksPerDay: 500 } },
      { target, clock, onUnexpectedError: (err) => unexpected.push(err) },
    );
    admin = apiClient(TEST_APP_URL, ADMIN_TOKEN, app.fetch);
    a = await app.tenant('a');
    b = await app.tenant('b');
  });
  afterAll(async () => {
    expect(unexpected).toEqual([]);
    await app?.close();
  });

  const patch = (tenantId: string, body: unknown, api = admin) => api.request('PATCH', `/v1/admin/tenants/${tenantId}`, body);

  it('takes the admin token only: none, a wrong one and a tenant API key are 401', async () => {
    for (const key of [null, 'wrong-token-0123456789', a.apiKey]) {
      const api = apiClient(TEST_APP_URL, key, app.fetch);
      for (const r of [
        await api.get('/v1/admin/tenants'),
        await patch(a.tenantId, { status: 'suspended' }, api),
        await api.request('DELETE', `/v1/admin/tenants/${a.tenantId}`),
      ]) {
        expect(r.status, String(key)).toBe(401);
        expect(r.body.type).toBe('urn:chime:problem:unauthorized');
      }
    }
    // Nothing changed: a is still active and its key works.
    expect((await a.api.get('/v1/tenant')).status).toBe(200);
  });

  it('lists every tenant with its open jobs, status and quotas, page by page', async () => {
    const j1 = await a.api.post('/v1/jobs', job('one'));
    const j2 = await a.api.post('/v1/jobs', job('two'));
    await a.api.post('/v1/jobs', job('three'));
    expect([j1.status, j2.status]).toEqual([201, 201]);
    expect((await a.api.request('PATCH', `/v1/jobs/${j2.body.jobId}`, { paused: true })).status).toBe(200);
    expect((await a.api.request('DELETE', `/v1/jobs/${j1.body.jobId}`)).status).toBe(204);

    const all = await admin.get('/v1/admin/tenants');
    expect(all.status).toBe(200);
    expect(all.body.nextCursor).toBeNull();
    const byId = new Map(all.body.tenants.map((t: { tenantId: string }) => [t.tenantId, t]));
    expect(byId.get(a.tenantId)).toEqual({
      tenantId: a.tenantId,
      name: 'a',
      createdAt: expect.any(String),
      status: 'active',
      jobs: { active: 1, paused: 1 },
      quotas: { maxJobs: null, requestsPerSecond: null, callbacksPerDay: 500 },
      quotaOverrides: {},
    });
    expect(byId.get(b.tenantId)).toMatchObject({ name: 'b', jobs: { active: 0, paused: 0 } });

    const first = await admin.get('/v1/admin/tenants?limit=1');
    expect(first.body.tenants).toHaveLength(1);
    expect(first.body.nextCursor).toBe(first.body.tenants[0].tenantId);
    const second = await admin.get(`/v1/admin/tenants?limit=1&cursor=${first.body.nextCursor}`);
    expect(second.body.tenants).toHaveLength(1);
    expect(second.body.tenants[0].tenantId).not.toBe(first.body.tenants[0].tenantId);
    expect((await admin.get('/v1/admin/tenants?limit=0')).status).toBe(400);
    const badCursor = await admin.get('/v1/admin/tenants?cursor=nope');
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.errors).toEqual([expect.objectContaining({ path: 'cursor' })]);
  });

  it('refuses bad input with 400 naming the field, and an unknown tenant with 404', async () => {
    const cases: [unknown, string][] = [
      [{ status: 'frozen' }, 'status'],
      [{ quotas: { maxJobs: -1 } }, 'quotas.maxJobs'],
      [{ quotas: { requestsPerSecond: 1.5 } }, 'quotas.requestsPerSecond'],
      [{ quotas: { callbacksPerDay: 'many' } }, 'quotas.callbacksPerDay'],
      [{ quotas: { maxjobs: 3 } }, 'quotas.maxjobs'],
      [{ name: 'x' }, 'name'],
    ];
    for (const [body, field] of cases) {
      const r = await patch(a.tenantId, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
      expect(r.body.errors.map((e: { path: string }) => e.path)).toContain(field);
    }
    for (const id of [newId(), 'not-a-uuid']) {
      const r = await patch(id, { status: 'suspended' });
      expect(r.status).toBe(404);
      expect(r.body.type).toBe('urn:chime:problem:not_found');
      expect((await admin.request('DELETE', `/v1/admin/tenants/${id}`)).status).toBe(404);
    }
  });

  it("suspends a tenant: its keys answer 403 tenant_suspended until it is resumed; others' keys are unaffected", async () => {
    const suspended = await patch(a.tenantId, { status: 'suspended' });
    expect(suspended.status).toBe(200);
    expect(suspended.body).toMatchObject({ tenantId: a.tenantId, status: 'suspended' });
    for (const r of [await a.api.get('/v1/tenant'), await a.api.post('/v1/jobs', job('refused')), await a.api.get('/v1/jobs')]) {
      expect(r.status).toBe(403);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
      expect(r.body.type).toMatch(/tenant_suspended$/);
      expect(r.body.detail).toMatch(/suspended/);
    }
    // A wrong key is still a wrong key.
    expect((await apiClient(TEST_APP_URL, `${a.apiKey.slice(0, -4)}xxxx`, app.fetch).get('/v1/tenant')).status).toBe(401);
    expect((await b.api.get('/v1/tenant')).status).toBe(200);
    const listed = await admin.get('/v1/admin/tenants');
    expect(listed.body.tenants.find((t: { tenantId: string }) => t.tenantId === a.tenantId).status).toBe('suspended');

    const resumed = await patch(a.tenantId, { status: 'active' });
    expect(resumed.body.status).toBe('active');
    expect((await a.api.get('/v1/tenant')).status).toBe(200);
  });

  it('holds the maxJobs override: a create past it is 403 quota_exceeded naming maxJobs; null follows the default again', async () => {
    const set = await patch(b.tenantId, { quotas: { maxJobs: 1 } });
    expect(set.status).toBe(200);
    expect(set.body.quotas).toEqual({ maxJobs: 1, requestsPerSecond: null, callbacksPerDay: 500 });
    expect(set.body.quotaOverrides).toEqual({ maxJobs: 1 });
    expect((await b.api.post('/v1/jobs', job('first'))).status).toBe(201);
    const refused = await b.api.post('/v1/jobs', job('second'));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ type: 'urn:chime:problem:quota_exceeded', status: 403 });
    expect(refused.body.detail).toMatch(/maxJobs/);
    const batch = await b.api.post('/v1/jobs/batch', { jobs: [job('third')] });
    expect(batch.body.results[0]).toMatchObject({ status: 403, problem: { type: 'urn:chime:problem:quota_exceeded' } });

    const cleared = await patch(b.tenantId, { quotas: { maxJobs: null } });
    expect(cleared.body.quotaOverrides).toEqual({});
    expect(cleared.body.quotas.maxJobs).toBeNull();
    expect((await b.api.post('/v1/jobs', job('second'))).status).toBe(201);
  });

  it('holds the requestsPerSecond override (bursts of twice the rate, then 429 with Retry-After), and null lifts it', async () => {
    clock.advance(60_000);
    expect((await patch(b.tenantId, { quotas: { requestsPerSecond: 2 } })).body.quotas.requestsPerSecond).toBe(2);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await b.api.get('/v1/tenant')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    const limited = await b.api.get('/v1/tenant');
    expect(limited.body.type).toBe('urn:chime:problem:rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await a.api.get('/v1/tenant')).status).toBe(200); // another tenant: the default, none
    clock.advance(500); // one token back at 2 a second
    expect((await b.api.get('/v1/tenant')).status).toBe(200);
    await patch(b.tenantId, { quotas: { requestsPerSecond: null } });
    for (let i = 0; i < 10; i++) expect((await b.api.get('/v1/tenant')).status).toBe(200);
  });

  it('deletes a tenant and every row it owns, in its bucket; its keys are then unknown', async () => {
    const c = await app.tenant('c');
    expect((await c.api.post('/v1/jobs', job('doomed'))).status).toBe(201);
    const shard = shardOf(c.tenantId);
    const db = app.database.db;
    // Rows of the tables the API does not fill here, so that each table is seen emptied.
    await query(
      db,
      sql`insert into audit_log (shard, id, tenant_id, at, actor_type, action, target_type, target_id)
          values (${shard}, ${newId()}, ${c.tenantId}, now(), 'admin', 'tenant.created', 'tenant', ${c.tenantId})`,
    );
    await query(db, sql`insert into tenant_callbacks (shard, tenant_id, day, callbacks) values (${shard}, ${c.tenantId}, '2030-01-01', 3)`);
    const count = async () => {
      let n = 0;
      for (const table of [...TENANT_OWNED_TABLES, 'tenants']) {
        const column = table === 'tenants' ? 'id' : 'tenant_id';
        const [row] = await query<{ n: number | string }>(
          db,
          sql`select count(*) as n from ${sql.identifier(table)} where ${sql.identifier(column)} = ${c.tenantId}`,
        );
        n += Number(row!.n);
      }
      return n;
    };
    expect(await count()).toBeGreaterThan(5);
    const r = await admin.request('DELETE', `/v1/admin/tenants/${c.tenantId}`);
    expect(r.status).toBe(204);
    expect(await count()).toBe(0);
    expect((await c.api.get('/v1/tenant')).status).toBe(401);
    expect((await admin.request('DELETE', `/v1/admin/tenants/${c.tenantId}`)).status).toBe(404);
    const listed = await admin.get('/v1/admin/tenants');
    expect(listed.body.tenants.map((t: { tenantId: string }) => t.tenantId)).not.toContain(c.tenantId);
    // Others are untouched.
    expect((await a.api.get('/v1/tenant')).status).toBe(200);
  });
});

describe('quota defaults from the environment (loadConfig)', () => {
  const limits = (env: Record<string, string>) => loadConfig(env).limits;

  it('is unlimited when nothing is set, and keeps the older variables where they are set', () => {
    expect(limits({})).toEqual({ ratePerSecond: 0, burst: 0, maxActiveJobs: 0, callbacksPerDay: 0 });
    expect(limits({ CHIME_RATE_LIMIT_PER_SECOND: '5', CHIME_MAX_ACTIVE_JOBS: '7' })).toEqual({
      ratePerSecond: 5,
      burst: 10,
      maxActiveJobs: 7,
      callbacksPerDay: 0,
    });
  });

  it('lets CHIME_QUOTA_* win over the older names, 0 meaning no limit', () => {
    expect(
      limits({
        CHIME_RATE_LIMIT_PER_SECOND: '5',
        CHIME_MAX_ACTIVE_JOBS: '7',
        CHIME_QUOTA_REQUESTS_PER_SECOND: '30',
        CHIME_QUOTA_MAX_JOBS: '0',
        CHIME_QUOTA_CALLBACKS_PER_DAY: '1000',
      }),
    ).toEqual({ ratePerSecond: 30, burst: 60, maxActiveJobs: 0, callbacksPerDay: 1000 });
    expect(limits({ CHIME_QUOTA_REQUESTS_PER_SECOND: '30', CHIME_RATE_LIMIT_BURST: '4' }).burst).toBe(4);
  });

  it('names a bad CHIME_QUOTA_* value', () => {
    for (const name of ['CHIME_QUOTA_MAX_JOBS', 'CHIME_QUOTA_REQUESTS_PER_SECOND', 'CHIME_QUOTA_CALLBACKS_PER_DAY']) {
      expect(() => loadConfig({ [name]: '-1' })).toThrow(new RegExp(name));
      expect(() => loadConfig({ [name]: 'lots' })).toThrow(new RegExp(name));
    }
  });
});
