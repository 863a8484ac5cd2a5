/**
 * The hot path's statements do work in proportion to their batch, not to the queue, whatever the statistics. On a
 * table never analyzed (a fresh database, or a burst of new runs before autovacuum's ANALYZE) PostgreSQL once planned
 * the claim as a bitmap scan of every due run and a sort (each claim of 100 read the whole backlog: a drain was
 * quadratic), and the finish as a scan of every running run's lease entry joined to every outcome (a batch squared).
 * Each statement is run under EXPLAIN ANALYZE (in a transaction rolled back) and the work its plan did is counted.
 */
import { type SQL, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { destinationOf } from '../../src/domain/destination.ts';
import { shardOf } from '../../src/domain/shard.ts';
import { type PlannerSettings, pipelined, query } from '../../src/store/db.ts';
import { createJob } from '../../src/store/jobs.ts';
import { CLAIM_PLAN, claimStatement } from '../../src/store/queue/claim-runs.ts';
import { advanceJobsStatement } from '../../src/store/queue/claim-steps.ts';
import { dueBucketsStatement } from '../../src/store/queue/due-backlog.ts';
import { FINISH_PLAN, finishStatement } from '../../src/store/queue/finish-runs.ts';
import { giveBackStatement } from '../../src/store/queue/hold-runs.ts';
import { reapStatement } from '../../src/store/queue/reap-leases.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { FAILED_500, T0, type TestStore, testJobSpec, testOutcome, useTestStore } from '../support/store.ts';

/** A plan node of EXPLAIN (FORMAT JSON), as far as this test reads it. */
type PlanNode = {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  'Rows Removed by Join Filter'?: number;
  Plans?: PlanNode[];
};

/**
 * The plan's work, in rows: those read from `table` (default `runs`) or its indexes (returned or filtered away) and the
 * pairs a join compared and dropped, each times its node's loops.
 */
function planWork(node: PlanNode, table = 'runs'): number {
  const read =
    node['Relation Name'] === table || node['Index Name']?.startsWith(`${table}_`)
      ? node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)
      : 0;
  const own = (read + (node['Rows Removed by Join Filter'] ?? 0)) * node['Actual Loops'];
  return own + (node.Plans ?? []).reduce((sum, p) => sum + planWork(p, table), 0);
}

const BACKLOG = 2_000;
const LIMIT = 10;
const BATCH = 200;

class Rollback extends Error {}

describe.each(DATABASE_TARGETS)('queue statement cost on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });

  /**
   * Adds `n` once-jobs calling `url`, each with a run due one ms after the last (from `firstDueMs`), in SQL, as a
   * burst of registrations would leave them: no ANALYZE since.
   */
  async function addDueRuns(prefix: string, url: string, n: number, firstDueMs: number): Promise<void> {
    // Ids new to this test: the same ids deleted and inserted again by every test leave dead index entries behind.
    prefix = `${prefix}-${crypto.randomUUID()}`;
    const template = await createJob(
      store.ctx,
      tenantId,
      testJobSpec(T0, { callback: { url }, schedule: { type: 'once', at: new Date(T0 + 86_400_000).toISOString() } }),
      T0,
    );
    const db = store.database.db;
    await db.execute(sql`insert into jobs (shard, id, tenant_id, key, name, status, paused_reason, schedule, callback, auth_token_enc,
        payload, retry, relevancy_window_ms, delivery_mode, overlap_policy, catch_up, jitter_ms, metadata, next_run_at,
        last_run_at, created_at, updated_at)
      select shard, md5(${prefix} || 'j' || g)::uuid, tenant_id, null, name, status, paused_reason, schedule, callback, auth_token_enc,
        payload, retry, relevancy_window_ms, delivery_mode, overlap_policy, catch_up, jitter_ms, metadata, next_run_at,
        last_run_at, created_at, updated_at
      from jobs t, generate_series(1, ${n}::int) g where t.id = ${template.id}`);
    await db.execute(sql`insert into runs (shard, id, tenant_id, job_id, scheduled_for, trigger, status, attempts, next_attempt_at, created_at)
      select ${shardOf(tenantId)}::smallint, md5(${prefix} || 'r' || g)::uuid, ${tenantId}, md5(${prefix} || 'j' || g)::uuid,
             to_timestamp((${firstDueMs}::bigint + g) / 1000.0), 'schedule', 'scheduled', 0,
             to_timestamp((${firstDueMs}::bigint + g) / 1000.0), now()
      from generate_series(1, ${n}::int) g`);
  }

  /**
   * Runs `statement` under EXPLAIN ANALYZE (under `settings`, as its caller does), then rolls it back.
   * @returns the plan's work (`planWork`) and the rows its top node returned
   */
  async function explain(statement: SQL, settings: PlannerSettings | null): Promise<{ work: number; jobsWork: number; rows: number }> {
    let result: { work: number; jobsWork: number; rows: number } | undefined;
    await store.database.db
      .transaction(async (tx) => {
        const [[row]] = await pipelined(tx, settings, () =>
          query<Record<string, unknown>>(tx, sql`explain (analyze, format json) ${statement}`),
        );
        const raw = Object.values(row!)[0];
        const [{ Plan: plan }] = (typeof raw === 'string' ? JSON.parse(raw) : raw) as [{ Plan: PlanNode }];
        result = { work: planWork(plan), jobsWork: planWork(plan, 'jobs'), rows: plan['Actual Rows'] };
        throw new Rollback();
      })
      .catch((err) => {
        if (!(err instanceof Rollback)) throw err;
      });
    return result!;
  }

  it(`a claim of ${LIMIT} reads about ${LIMIT} due runs, not the backlog of ${BACKLOG}`, async () => {
    await addDueRuns('a', 'http://a.example/hook', BACKLOG, T0 - 10 * BACKLOG);
    const { work, rows } = await explain(
      claimStatement({ shard: shardOf(tenantId), owner: 'D', limit: LIMIT, nowMs: T0, leaseMarginMs: 1 }),
      CLAIM_PLAN,
    );
    expect(rows).toBe(LIMIT);
    // The due index's first LIMIT entries and the LIMIT runs updated through the primary key.
    expect(work).toBeLessThanOrEqual(4 * LIMIT);
  });

  /** Empties the tenant's bucket of the runs earlier tests left (due, or leased until after T0), so only this test's count. */
  async function emptyBucket(): Promise<void> {
    await store.database.db.execute(sql`delete from runs where shard = ${shardOf(tenantId)}`);
  }

  /** Vacuums `runs` and its indexes, as autovacuum does after a drain: a bitmap scan reads the entries of dead rows too. */
  async function vacuumRuns(): Promise<void> {
    await store.database.db.execute(sql`vacuum (index_cleanup on) runs`);
  }

  /** Leases the first `n` due runs as a claim leaves them (status, lease, attempt; the due time kept), until `untilMs`. */
  async function lease(n: number, untilMs: number): Promise<void> {
    await store.database.db.execute(sql`update runs set status = 'running', lease_owner = 'D', attempts = 1,
        lease_expires_at = ${new Date(untilMs).toISOString()}::timestamptz
      where id in (select id from runs where shard = ${shardOf(tenantId)} and status = 'scheduled' order by next_attempt_at limit ${n})`);
  }

  it(`a claim of ${LIMIT} passes over the runs in flight ahead of it, and reads no more of the backlog`, async () => {
    await emptyBucket();
    await addDueRuns('a', 'http://a.example/hook', BACKLOG, T0 - 10 * BACKLOG);
    const inFlight = BACKLOG / 10;
    await lease(inFlight, T0 + 60_000);
    await vacuumRuns();
    const { work, rows } = await explain(
      claimStatement({ shard: shardOf(tenantId), owner: 'D', limit: LIMIT, nowMs: T0, leaseMarginMs: 1 }),
      CLAIM_PLAN,
    );
    expect(rows).toBe(LIMIT);
    // The leased runs keep their due time, so the due index holds them first: read and filtered away by status.
    expect(work).toBeGreaterThanOrEqual(inFlight);
    expect(work).toBeLessThanOrEqual(2 * inFlight + 4 * LIMIT);
  });

  it(`the due buckets' probe walks the due index past the runs in flight, not the table`, async () => {
    await emptyBucket();
    await addDueRuns('a', 'http://a.example/hook', BACKLOG, T0 - 10 * BACKLOG);
    const inFlight = BACKLOG / 10;
    await lease(inFlight, T0 + 60_000);
    await store.database.db.execute(sql`analyze runs`);
    const { work, rows } = await explain(dueBucketsStatement(sql`(values (${shardOf(tenantId)}::smallint)) as b(shard)`), null);
    expect(rows).toBe(1);
    expect(work).toBeGreaterThanOrEqual(inFlight);
    expect(work).toBeLessThanOrEqual(2 * inFlight + 4);
  });

  it(`the reaper reads the bucket's runs due before now, not its ${BACKLOG} finished runs`, async () => {
    await emptyBucket();
    await addDueRuns('a', 'http://a.example/hook', BACKLOG, T0 - 10 * BACKLOG);
    const expired = LIMIT;
    await lease(expired, T0 - 1);
    await store.database.db.execute(sql`update runs set status = 'succeeded', next_attempt_at = null, finished_at = now()
      where shard = ${shardOf(tenantId)} and status = 'scheduled'`);
    await vacuumRuns();
    const { work, rows } = await explain(reapStatement(shardOf(tenantId), T0, 1_000), CLAIM_PLAN);
    expect(rows).toBe(expired);
    // Each expired lease found on the due index, matched by primary key, and updated: a few reads each.
    expect(work).toBeLessThanOrEqual(8 * expired);
  });

  it('a claim past a saturated destination reads at most its window, not the backlog times the window', async () => {
    await addDueRuns('a', 'http://a.example/hook', BACKLOG, T0 - 10 * BACKLOG);
    await addDueRuns('b', 'http://b.example/hook', BACKLOG / 4, T0 - 2 * BACKLOG);
    const claim = claimStatement({
      shard: shardOf(tenantId),
      owner: 'D',
      limit: LIMIT,
      nowMs: T0,
      leaseMarginMs: 1,
      skipDestinations: [destinationOf('http://a.example/hook')],
    });
    const { work, rows } = await explain(claim, CLAIM_PLAN);
    expect(rows).toBe(LIMIT);
    // The window's bound read on the due index (here every due run), then the index walked past the skipped runs to
    // the first LIMIT others: linear in the window.
    const due = BACKLOG + BACKLOG / 4;
    expect(work).toBeLessThanOrEqual(2 * due + 2 * LIMIT);
  });

  // EXPLAIN ANALYZE of the finish's inserts is refused by Citus (INSERT ... SELECT via the coordinator).
  it.runIf(target.kind !== 'citus')(
    `a finish of ${BATCH} outcomes joins each to its run and its job once, not to each of the ${BACKLOG} running runs or their jobs`,
    async () => {
      await addDueRuns('a', 'http://a.example/hook', BACKLOG, T0 - 10 * BACKLOG);
      // Every run claimed by D (a dispatcher with a deep per-destination queue), as a claim leaves them.
      await store.database.db.execute(sql`update runs set status = 'running', lease_owner = 'D', attempts = 1,
      lease_expires_at = ${new Date(T0 + 60_000).toISOString()}::timestamptz where next_attempt_at <= ${new Date(T0).toISOString()}::timestamptz`);
      const ids = await query<{ id: string; job_id: string }>(
        store.database.db,
        sql`select id, job_id from runs where status = 'running' order by id limit ${BATCH}`,
      );
      // Half of them failed, so the statement's count of failures in a row updates half the jobs.
      const outcomes = ids.map((r, i) =>
        testOutcome({ shard: shardOf(tenantId), runId: r.id, jobId: r.job_id, attempt: 1 }, i % 2 === 0 ? {} : FAILED_500),
      );
      const { work, jobsWork, rows } = await explain(finishStatement('D', outcomes), FINISH_PLAN);
      expect(rows).toBe(BATCH);
      // Linear: the runs read once (by primary key, or in one pass on a table this small) and hashed against the
      // outcomes. The nested loop it replaces compared every run read with every outcome: BACKLOG × BATCH.
      expect(work).toBeLessThanOrEqual(2 * (BACKLOG + BATCH));
      // Each outcome's job read once by primary key: not a pass over the bucket's BACKLOG jobs, nor a loop per outcome.
      expect(jobsWork).toBeGreaterThanOrEqual(BATCH);
      expect(jobsWork).toBeLessThanOrEqual(2 * BATCH);
    },
  );

  // The burst the bench registers: the bucket's statistics were taken when it held a few jobs, then thousands came, and
  // the claims began before autovacuum's next ANALYZE. Under CLAIM_PLAN (no hash or merge join) PostgreSQL read the
  // bucket's every job once and compared each with every row of the batch (a materialized scan and a join filter):
  // 32 ms for a job update of 100 rows with 3,700 jobs in the bucket, a claim's largest cost in the burst. With the ids
  // named as an array too, PostgreSQL reads the batch's rows by primary key (PGlite), or the bucket once, filtered by
  // the array (PostgreSQL 15, which takes the bucket for a few rows): then a join compares the batch with itself. Either
  // way the work is the bucket once plus the batch squared at most, not the bucket times the batch.
  describe('with statistics from when the bucket was small', () => {
    async function staleBurst(): Promise<{ id: string; job_id: string }[]> {
      await store.database.db.execute(sql`analyze jobs`);
      await store.database.db.execute(sql`analyze runs`);
      await addDueRuns('a', 'http://a.example/hook', BACKLOG, T0 - 10 * BACKLOG);
      return query<{ id: string; job_id: string }>(
        store.database.db,
        sql`select id, job_id from runs where shard = ${shardOf(tenantId)} and status = 'scheduled' order by id limit ${BATCH}`,
      );
    }

    it(`the claim's update of ${BATCH} jobs reads the bucket once at most, not once per job`, async () => {
      const runs = await staleBurst();
      const updates = runs.map((r) => ({ id: r.job_id, next_ms: null, last_ms: T0, completed: true }));
      const { jobsWork } = await explain(advanceJobsStatement(shardOf(tenantId), updates), CLAIM_PLAN);
      expect(jobsWork).toBeGreaterThanOrEqual(BATCH);
      expect(jobsWork).toBeLessThanOrEqual(BACKLOG + BATCH * BATCH + 2 * BATCH);
    });

    it(`a give-back of ${BATCH} runs reads the bucket once at most, not once per run`, async () => {
      const runs = await staleBurst();
      const until = new Date(T0).toISOString();
      const { work } = await explain(
        giveBackStatement(
          shardOf(tenantId),
          runs.map((r) => ({ id: r.id, until })),
        ),
        CLAIM_PLAN,
      );
      expect(work).toBeGreaterThanOrEqual(BATCH);
      expect(work).toBeLessThanOrEqual(BACKLOG + BATCH * BATCH + 2 * BATCH);
    });
  });
});
