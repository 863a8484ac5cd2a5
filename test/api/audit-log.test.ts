/**
 * The audit log (API.md "Access control and audit"; src/store/audit-log.ts): every route that changes something
 * writes its entry (a table of cases, checked against the route → scope table so a new changing route needs a case),
 * with the key that asked and the request's id, field names only and never a secret; `GET /v1/audit-log` filters,
 * pages and needs `audit:read`; a refused change writes nothing; Chime's own pauses name the system; retention prunes.
 * On each database target.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTE_SCOPES } from '../../src/api/route-scopes.ts';
import { IdGenerator } from '../../src/domain/ids.ts';
import { listAuditLog, pruneAuditLog } from '../../src/store/audit-log.ts';
import type { Db } from '../../src/store/db.ts';
import { query } from '../../src/store/db.ts';
import type { ApiResponse, TestTenant } from '../support/api.ts';
import { apiClient, startTestApp, TEST_APP_URL, type TestApp } from '../support/app.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';

const HOOK = 'http://127.0.0.1:9/hook';
const AUTH_TOKEN = 'tok-SECRET-never-in-the-log';
const jobBody = (extra: Record<string, unknown> = {}) => ({
  schedule: { type: 'delay', delayMs: 3_600_000 },
  callback: { url: HOOK, authToken: AUTH_TOKEN },
  ...extra,
});

type Entry = {
  entryId: string;
  at: string;
  actor: { type: string; keyId?: string; prefix?: string; reason?: string };
  action: string;
  target: { type: string; id: string };
  requestId: string | null;
  changes?: string[];
};

/** Changing routes that write no entry, and why. */
const NOT_CHANGES = new Set(['POST /v1/schedules/preview']); // a computation: nothing is stored

describe.each(DATABASE_TARGETS)('audit log ($kind)', (target) => {
  let app: TestApp;
  let tenant: TestTenant;
  let keyId: string;

  /** The entries of the tenant, newest first, read through the API. */
  async function entries(q = ''): Promise<Entry[]> {
    const r = await tenant.api.get(`/v1/audit-log${q}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.entries;
  }

  /** Runs `act`, then expects exactly the entries `expected` ([action, target id, changes?]) to be new, by this key and request. */
  async function expectEntries(act: () => Promise<ApiResponse>, expected: (r: ApiResponse) => [string, string, string[]?][]) {
    const before = new Set((await entries('?limit=100')).map((e) => e.entryId));
    const r = await act();
    expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
    const added = (await entries('?limit=100')).filter((e) => !before.has(e.entryId));
    const want = expected(r);
    expect(added.map((e) => [e.action, e.target.id, ...(e.changes ? [e.changes] : [])]).sort(), JSON.stringify(added)).toEqual(
      want.map(([a, id, ch]) => [a, id, ...(ch ? [ch] : [])]).sort(),
    );
    for (const e of added) {
      expect(e.actor).toEqual({ type: 'api_key', keyId, prefix: tenant.apiKey.slice(0, e.actor.prefix!.length) });
      expect(e.requestId).toBe(r.headers.get('x-request-id'));
    }
    return r;
  }

  const covered = new Set<string>();
  const job = async (extra: Record<string, unknown> = {}) => {
    const r = await tenant.api.post('/v1/jobs', jobBody(extra));
    expect(r.status).toBe(201);
    return r.body.jobId as string;
  };
  const failedRun = async (jobId: string) => {
    const runId = (await tenant.api.post(`/v1/jobs/${jobId}/trigger`)).body.runId as string;
    await app.database.db.execute(sql`update runs set status = 'failed', finished_at = now(), next_attempt_at = null where id = ${runId}`);
    return runId;
  };

  beforeAll(async () => {
    app = await startTestApp({}, { target });
    tenant = await app.tenant('audit');
    keyId = (await tenant.api.get('/v1/tenant')).body.apiKey.keyId;
  });
  afterAll(() => app?.close());

  it('writes one entry per change, by the key and request that made it', async () => {
    const cases: Record<string, () => Promise<void>> = {
      'POST /v1/jobs': async () => {
        await expectEntries(
          () => tenant.api.post('/v1/jobs', jobBody()),
          (r) => [['job.created', r.body.jobId]],
        );
      },
      'POST /v1/jobs/batch': async () => {
        await expectEntries(
          () => tenant.api.post('/v1/jobs/batch', { jobs: [jobBody(), jobBody({ schedule: 'bad' })] }),
          (r) => [['job.created', r.body.results[0].job.jobId]],
        );
      },
      'PUT /v1/jobs/by-key/:key': async () => {
        const created = await expectEntries(
          () => tenant.api.request('PUT', '/v1/jobs/by-key/audit-put', jobBody()),
          (r) => [['job.created', r.body.jobId]],
        );
        await expectEntries(
          () => tenant.api.request('PUT', '/v1/jobs/by-key/audit-put', jobBody({ name: 'replaced' })),
          () => [['job.replaced', created.body.jobId, expect.arrayContaining(['name', 'callback', 'schedule'])]],
        );
      },
      'PATCH /v1/jobs/:jobId': async () => {
        const id = await job();
        await expectEntries(
          () => tenant.api.request('PATCH', `/v1/jobs/${id}`, { paused: true, name: 'renamed', callback: { authToken: 'tok-2-SECRET' } }),
          () => [
            ['job.paused', id],
            ['job.updated', id, ['authToken', 'callback', 'name']],
          ],
        );
        await expectEntries(
          () => tenant.api.request('PATCH', `/v1/jobs/${id}`, { paused: false }),
          () => [['job.resumed', id]],
        );
      },
      'DELETE /v1/jobs/:jobId': async () => {
        const id = await job();
        await expectEntries(
          () => tenant.api.request('DELETE', `/v1/jobs/${id}`),
          () => [['job.canceled', id]],
        );
      },
      'POST /v1/jobs/:jobId/trigger': async () => {
        const id = await job();
        await expectEntries(
          () => tenant.api.post(`/v1/jobs/${id}/trigger`),
          () => [['job.triggered', id]],
        );
      },
      'POST /v1/jobs/:jobId/backfill': async () => {
        const id = await job({ schedule: { type: 'interval', everyMs: 60_000, startAt: new Date(Date.now() - 180_000).toISOString() } });
        await expectEntries(
          () =>
            tenant.api.post(`/v1/jobs/${id}/backfill`, {
              from: new Date(Date.now() - 200_000).toISOString(),
              to: new Date().toISOString(),
            }),
          () => [['job.backfilled', id]],
        );
      },
      'POST /v1/jobs/bulk': async () => {
        const a = await job({ metadata: { audit: 'bulk' } });
        const b = await job({ metadata: { audit: 'bulk' } });
        await expectEntries(
          () => tenant.api.post('/v1/jobs/bulk', { action: 'pause', filter: { metadata: { audit: 'bulk' } } }),
          () => [
            ['jobs.bulk', a, ['paused']],
            ['jobs.bulk', b, ['paused']],
          ],
        );
      },
      'POST /v1/runs/:runId/replay': async () => {
        const dead = await failedRun(await job());
        await expectEntries(
          () => tenant.api.post(`/v1/runs/${dead}/replay`),
          () => [['run.replayed', dead]],
        );
      },
      'POST /v1/dead-letters/replay': async () => {
        const id = await job();
        const dead = await failedRun(id);
        await expectEntries(
          () => tenant.api.post('/v1/dead-letters/replay', { jobId: id }),
          () => [['run.replayed', dead]],
        );
      },
      'DELETE /v1/dead-letters/:runId': async () => {
        const dead = await failedRun(await job());
        await expectEntries(
          () => tenant.api.request('DELETE', `/v1/dead-letters/${dead}`),
          () => [['dead_letter.dismissed', dead]],
        );
      },
      'POST /v1/api-keys': async () => {
        await expectEntries(
          () => tenant.api.post('/v1/api-keys', { name: 'audited' }),
          (r) => [['api_key.created', r.body.keyId]],
        );
      },
      'DELETE /v1/api-keys/:keyId': async () => {
        const other = (await tenant.api.post('/v1/api-keys', { name: 'to revoke' })).body.keyId;
        await expectEntries(
          () => tenant.api.request('DELETE', `/v1/api-keys/${other}`),
          () => [['api_key.revoked', other]],
        );
      },
      'POST /v1/signing-secrets/rotate': async () => {
        const r = await expectEntries(
          () => tenant.api.post('/v1/signing-secrets/rotate'),
          () => [['signing_secret.rotated', expect.any(String)]],
        );
        expect(JSON.stringify(await entries())).not.toContain(r.body.signingSecret);
      },
      'POST /v1/notification-endpoints': async () => {
        await expectEntries(
          () => tenant.api.post('/v1/notification-endpoints', { url: 'http://127.0.0.1:9/events', events: ['run.failed'] }),
          (r) => [['notification_endpoint.created', r.body.endpointId]],
        );
      },
      'DELETE /v1/notification-endpoints/:endpointId': async () => {
        const ep = (await tenant.api.post('/v1/notification-endpoints', { url: 'http://127.0.0.1:9/e2', events: ['run.failed'] })).body
          .endpointId;
        await expectEntries(
          () => tenant.api.request('DELETE', `/v1/notification-endpoints/${ep}`),
          () => [['notification_endpoint.deleted', ep]],
        );
      },
      'PUT /v1/flow-controls/:key': async () => {
        await expectEntries(
          () => tenant.api.request('PUT', '/v1/flow-controls/crm', { parallelism: 5 }),
          () => [['flow_control.created', 'crm']],
        );
        await expectEntries(
          () => tenant.api.request('PUT', '/v1/flow-controls/crm', { parallelism: 5, paused: true, rate: { limit: 9, periodMs: 1000 } }),
          () => [['flow_control.updated', 'crm', ['rate', 'paused']]],
        );
      },
      'DELETE /v1/flow-controls/:key': async () => {
        await tenant.api.request('PUT', '/v1/flow-controls/gone', {});
        await expectEntries(
          () => tenant.api.request('DELETE', '/v1/flow-controls/gone'),
          () => [['flow_control.deleted', 'gone']],
        );
      },
      'PUT /v1/calendars/:key': async () => {
        await expectEntries(
          () => tenant.api.request('PUT', '/v1/calendars/eu', { timezone: 'Europe/Berlin', holidays: [] }),
          () => [['calendar.created', 'eu']],
        );
        await expectEntries(
          () => tenant.api.request('PUT', '/v1/calendars/eu', { timezone: 'Europe/Berlin', holidays: ['2030-12-25'], weekendDays: [0] }),
          () => [['calendar.updated', 'eu', ['weekendDays', 'holidays']]],
        );
      },
      'DELETE /v1/calendars/:key': async () => {
        await tenant.api.request('PUT', '/v1/calendars/gone', { timezone: 'UTC', holidays: [] });
        await expectEntries(
          () => tenant.api.request('DELETE', '/v1/calendars/gone'),
          () => [['calendar.deleted', 'gone']],
        );
      },
      'POST /jobs': async () => {
        await expectEntries(
          () => tenant.api.post('/jobs', { name: 'compat', cronExpr: '0 3 * * *', handlerUrl: HOOK }),
          (r) => [['job.created', r.body.jobId]],
        );
      },
      'PATCH /jobs/:jobId': async () => {
        const id = await job();
        await expectEntries(
          () => tenant.api.request('PATCH', `/jobs/${id}`, { paused: true }),
          () => [['job.paused', id]],
        );
      },
      'POST /jobs/:jobId/trigger': async () => {
        const id = await job();
        await expectEntries(
          () => tenant.api.post(`/jobs/${id}/trigger`),
          () => [['job.triggered', id]],
        );
      },
    };
    for (const [route, run] of Object.entries(cases)) {
      await run();
      covered.add(route);
    }
    const changing = Object.keys(ROUTE_SCOPES).filter((r) => !r.startsWith('GET ') && !NOT_CHANGES.has(r));
    expect(changing.filter((r) => !covered.has(r))).toEqual([]);
    // No secret value anywhere in the log.
    const all = JSON.stringify(await entries('?limit=100'));
    expect(all).not.toContain(AUTH_TOKEN);
    expect(all).not.toContain('tok-2-SECRET');
    expect(all).not.toContain(tenant.apiKey);
  });

  it('writes nothing for a refused change', async () => {
    const id = await job({ key: 'audit-taken' });
    await tenant.api.request('DELETE', `/v1/jobs/${id}`);
    const before = (await entries('?limit=100')).length;
    expect((await tenant.api.request('PATCH', `/v1/jobs/${id}`, { name: 'x' })).status).toBe(409); // canceled
    expect((await tenant.api.request('DELETE', `/v1/jobs/${id}`)).status).toBe(204); // canceling twice changes nothing
    expect((await tenant.api.post('/v1/jobs', jobBody({ key: 'audit-dup' }))).status).toBe(201);
    expect((await tenant.api.post('/v1/jobs', jobBody({ key: 'audit-dup' }))).status).toBe(409);
    expect((await tenant.api.post('/v1/jobs', { schedule: 'bad' })).status).toBe(400);
    expect((await entries('?limit=100')).length).toBe(before + 1); // only the created job
  });

  it('filters by action, key and time, pages newest first, and refuses bad filters naming them', async () => {
    const other = await tenant.api.post('/v1/api-keys', { name: 'writer', scopes: ['jobs:write'] });
    const writer = { api: apiClient(TEST_APP_URL, other.body.key, app.fetch) };
    const made = await writer.api.post('/v1/jobs', jobBody());
    expect(made.status).toBe(201);

    const byWriter = await entries(`?keyId=${other.body.keyId}`);
    expect(byWriter.map((e) => [e.action, e.target.id])).toEqual([['job.created', made.body.jobId]]);
    expect(byWriter[0]!.actor).toEqual({ type: 'api_key', keyId: other.body.keyId, prefix: other.body.prefix });

    const created = await entries('?action=job.created&limit=100');
    expect(created.length).toBeGreaterThan(3);
    expect(new Set(created.map((e) => e.action))).toEqual(new Set(['job.created']));

    const newest = byWriter[0]!.at;
    expect((await entries(`?since=${encodeURIComponent(newest)}`)).map((e) => e.entryId)).toContain(byWriter[0]!.entryId);
    expect((await entries(`?until=${encodeURIComponent(newest)}&limit=100`)).map((e) => e.entryId)).not.toContain(byWriter[0]!.entryId);

    const firstPage = await tenant.api.get('/v1/audit-log?limit=2');
    const second = await tenant.api.get(`/v1/audit-log?limit=2&cursor=${firstPage.body.nextCursor}`);
    const all = await entries('?limit=4');
    expect([...firstPage.body.entries, ...second.body.entries].map((e: Entry) => e.entryId)).toEqual(all.map((e) => e.entryId));
    expect(all.map((e) => e.entryId)).toEqual([...all.map((e) => e.entryId)].sort().reverse());

    for (const [q, field] of [
      ['action=job.exploded', 'action'],
      ['keyId=nope', 'keyId'],
      ['since=yesterday', 'since'],
      ['until=0000-01-01T00:00:00Z', 'until'],
      ['limit=0', 'limit'],
    ]) {
      const r = await tenant.api.get(`/v1/audit-log?${q}`);
      expect(r.status, q).toBe(400);
      expect(JSON.stringify(r.body.errors), q).toContain(field);
    }
    // The writer key may not read the log.
    const refused = await writer.api.get('/v1/audit-log');
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toContain('audit:read');
  });

  it("records Chime's own pauses as the system's, and prunes entries past the retention", async () => {
    const db = app.database.db as Db;
    const store = { db, cipher: undefined as never, clock: { now: () => Date.now() } as never };
    const id = await job();
    // The finish's pause of a job whose failures reached its bound, as the dispatcher records it (run-ends.ts).
    const { recordRunEnds } = await import('../../src/store/queue/run-ends.ts');
    const [row] = await query<{ shard: number; tenant_id: string }>(db, sql`select shard, tenant_id from jobs where id = ${id}`);
    await db.transaction((tx) =>
      recordRunEnds(
        tx,
        row!.shard,
        [{ id: crypto.randomUUID(), job_id: id, tenant_id: row!.tenant_id, status: 'failed', trigger: 'schedule' }] as never,
        new Map(),
        new Set([id]),
        Date.now(),
      ),
    );
    const [paused] = await entries('?action=job.paused');
    expect(paused).toMatchObject({
      actor: { type: 'system', reason: 'consecutive_failures' },
      target: { type: 'job', id },
      requestId: null,
    });

    // An entry from 400 days ago goes; today's stay. Its id is of its time, as an entry written then would have.
    const old = Date.now() - 400 * 86_400_000;
    await db.execute(sql`insert into audit_log (shard, id, tenant_id, at, actor_type, action, target_type, target_id)
      select shard, ${new IdGenerator(() => old).next()}::uuid, id, ${new Date(old).toISOString()}::timestamptz, 'admin',
             'tenant.quotas_changed', 'tenant', id::text
      from tenants where id = ${tenant.tenantId}`);
    const count = async () => (await listAuditLog(store, tenant.tenantId, { limit: 100 })).items.length;
    const before = await count();
    expect(await pruneAuditLog(db, Date.now() - 365 * 86_400_000, 1000)).toBe(1);
    expect(await count()).toBe(before - 1);
  });
});
