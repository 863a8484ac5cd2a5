/**
 * The plans behind job search and the runs feed stay index scans at 100,000 jobs (issue: "served by indexes; show
 * with EXPLAIN"), on each database target. The statements are the ones the API sends (`listJobsQuery`,
 * `tenantRunsQuery`, `deadLettersQuery`), explained after ANALYZE over 100,000 jobs and 100,000 runs: half of them
 * the searching tenant's, the rest spread over 50 other tenants. For each filter the test names the index that
 * serves it and checks that no table is read by a sequential scan. ANALYZE samples rows at random, so each plan is
 * checked after several ANALYZEs (drizzle/0011 keeps the search estimate steady).
 */
import { type SQL, type SQLWrapper, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../src/store/db.ts';
import { listJobsQuery } from '../../src/store/jobs.ts';
import { deadLettersQuery, tenantRunsQuery } from '../../src/store/runs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { openTestStore, type TestStore } from '../support/store.ts';

const JOBS = 100_000;
const TENANT = '01900000-0000-7000-8000-00000000aaaa';

/** A plan node of EXPLAIN (FORMAT JSON), as far as the test reads it. */
type PlanNode = { 'Node Type': string; 'Index Name'?: string; 'Relation Name'?: string; Plans?: PlanNode[] };

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

// On Citus each worker plans its shard's part with its own statistics (seen: a walk of the primary key for a tenant
// that fills its bucket); test/store/shard-routing.test.ts checks that the statements are routed there.
describe.each(DATABASE_TARGETS.filter((t) => t.kind !== 'citus'))('search and feed plans at 100,000 jobs ($kind)', (target) => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore(target);
    const db = store.database.db;
    // Half the jobs are TENANT's, the rest spread over 50 other tenants; every job has a run, every tenth a dead letter.
    await db.execute(sql`insert into jobs (shard, id, tenant_id, key, name, status, schedule, callback, retry, delivery_mode,
        overlap_policy, catch_up, metadata, created_at, updated_at)
      select chime_shard_of(t.id), gen_random_uuid(), t.id,
             'key-' || i, 'Nightly report ' || i, 'active', '{"type":"cron","expression":"0 0 * * *"}', '{"url":"http://127.0.0.1:9/"}',
             '{"strategy":"none"}', 'at-least-once', 'allow', 'one',
             jsonb_build_object('team', 'team-' || (i % 200), 'env', case when i % 3 = 0 then 'prod' else 'dev' end, 'ref', 'r' || i),
             now(), now()
      from generate_series(1, ${JOBS}) as i,
        lateral (select case when i % 2 = 0 then ${TENANT}::uuid else ('01900000-0000-7000-8000-' || lpad(to_hex(i % 50), 12, '0'))::uuid end as id) t`);
    await db.execute(sql`insert into runs (shard, id, tenant_id, job_id, scheduled_for, trigger, status, created_at)
      select shard, gen_random_uuid(), tenant_id, id, now(), 'schedule', case when hashtext(id::text) % 10 = 0 then 'failed' else 'succeeded' end, now()
      from jobs`);
    await db.execute(sql`analyze jobs`);
    await db.execute(sql`analyze runs`);
  }, 240_000);
  afterAll(() => store?.close());

  /** The plan of `statement`: every node, flattened. */
  async function plan(statement: SQLWrapper): Promise<PlanNode[]> {
    const [row] = await query<{ 'QUERY PLAN': unknown }>(store.database.db, sql`explain (format json) ${statement as SQL}`);
    const json = row!['QUERY PLAN'];
    const parsed = (typeof json === 'string' ? JSON.parse(json) : json) as { Plan: PlanNode }[];
    return nodes(parsed[0]!.Plan);
  }

  /** Expects the plan to read through `index` and to scan no table sequentially, after each of three ANALYZEs. */
  async function expectServedBy(statement: SQLWrapper, index: string): Promise<void> {
    for (let i = 0; i < 3; i++) {
      await store.database.db.execute(sql`analyze jobs`);
      const all = await plan(statement);
      const shown = JSON.stringify(all.map((n) => `${n['Node Type']}${n['Index Name'] ? ` ${n['Index Name']}` : ''}`));
      expect(
        all.filter((n) => n['Node Type'] === 'Seq Scan'),
        shown,
      ).toEqual([]);
      expect(
        all.map((n) => n['Index Name']),
        shown,
      ).toContain(index);
    }
  }

  const db = () => store.database.db;

  it('GET /v1/jobs walks jobs_tenant_idx backwards (newest first, a page at a time)', async () => {
    await expectServedBy(listJobsQuery(db(), TENANT, { limit: 50 }), 'jobs_tenant_idx');
    await expectServedBy(
      listJobsQuery(db(), TENANT, { limit: 50, status: 'active', cursor: '01900000-0000-7000-8000-000000000000' }),
      'jobs_tenant_idx',
    );
  });

  it('?q= reads the trigram index jobs_search_idx', async () => {
    await expectServedBy(listJobsQuery(db(), TENANT, { limit: 50, q: 'key-4242' }), 'jobs_search_idx');
    await expectServedBy(listJobsQuery(db(), TENANT, { limit: 50, q: 'REPORT 1234' }), 'jobs_search_idx');
  });

  it('?metadata.<key>= reads jobs_metadata_idx for a selective filter, and never scans the table', async () => {
    await expectServedBy(listJobsQuery(db(), TENANT, { limit: 50, metadata: { ref: 'r4242' } }), 'jobs_metadata_idx');
    await expectServedBy(listJobsQuery(db(), TENANT, { limit: 50, metadata: { ref: 'r4242', team: 'team-42' } }), 'jobs_metadata_idx');
    // A value a job in a hundred holds: walking the tenant's jobs newest first finds a page soonest; either index will do.
    const common = await plan(listJobsQuery(db(), TENANT, { limit: 50, metadata: { team: 'team-42' } }));
    expect(common.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    expect(common.some((n) => n['Index Name'] === 'jobs_metadata_idx' || n['Index Name'] === 'jobs_tenant_idx')).toBe(true);
  });

  it('GET /v1/runs walks runs_tenant_idx backwards, or runs_job_idx for one job', async () => {
    await expectServedBy(tenantRunsQuery(db(), TENANT, { limit: 50 }), 'runs_tenant_idx');
    await expectServedBy(tenantRunsQuery(db(), TENANT, { limit: 50, status: 'failed', since: new Date(0) }), 'runs_tenant_idx');
    const [job] = await query<{ id: string }>(db(), sql`select id from jobs where tenant_id = ${TENANT} limit 1`);
    await expectServedBy(tenantRunsQuery(db(), TENANT, { limit: 50, jobId: job!.id }), 'runs_job_idx');
  });

  it('GET /v1/dead-letters reads the partial index runs_tenant_dead_idx', async () => {
    await expectServedBy(deadLettersQuery(db(), TENANT, { limit: 50 }), 'runs_tenant_dead_idx');
  });
});
