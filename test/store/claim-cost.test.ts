/**
 * A claim reads what it takes, not the due backlog, whatever the statistics: on a table never analyzed (a fresh
 * database, or a burst of new runs before autovacuum's ANALYZE) PostgreSQL once planned the claim as a bitmap scan of
 * every due run and a sort, so each claim of 100 read the whole backlog and a drain was quadratic.
 * The claim statement is run under EXPLAIN ANALYZE (in a transaction rolled back) and the rows its plan read from
 * `runs` are counted.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { destinationOf } from '../../src/domain/destination.ts';
import { query } from '../../src/store/db.ts';
import { createJob } from '../../src/store/jobs.ts';
import { CLAIM_PLANNER_SETTING, claimStatement, type ClaimOptions } from '../../src/store/queue/claim-runs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { T0, testJobSpec, type TestStore, useTestStore } from '../support/store.ts';

/** A plan node of EXPLAIN (FORMAT JSON), as far as this test reads it. */
type PlanNode = {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
};

/** Rows the plan read from `runs` or its indexes: returned or filtered away, times the node's loops. */
function runsRowsRead(node: PlanNode): number {
  const own =
    node['Relation Name'] === 'runs' || node['Index Name']?.startsWith('runs_')
      ? (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) *
        node['Actual Loops']
      : 0;
  return own + (node.Plans ?? []).reduce((sum, p) => sum + runsRowsRead(p), 0);
}

const BACKLOG = 2_000;
const LIMIT = 10;

class Rollback extends Error {}

describe.each(DATABASE_TARGETS)('claim cost on $kind', (target) => {
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
    const template = await createJob(store.ctx, tenantId, testJobSpec(T0, { callback: { url }, schedule: { type: 'once', at: new Date(T0 + 86_400_000).toISOString() } }), T0);
    const db = store.database.db;
    await db.execute(sql`insert into jobs (id, tenant_id, key, name, status, paused_reason, schedule, callback, auth_token_enc,
        payload, retry, relevancy_window_ms, delivery_mode, overlap_policy, catch_up, jitter_ms, metadata, next_run_at,
        last_run_at, created_at, updated_at)
      select md5(${prefix} || 'j' || g)::uuid, tenant_id, null, name, status, paused_reason, schedule, callback, auth_token_enc,
        payload, retry, relevancy_window_ms, delivery_mode, overlap_policy, catch_up, jitter_ms, metadata, next_run_at,
        last_run_at, created_at, updated_at
      from jobs t, generate_series(1, ${n}::int) g where t.id = ${template.id}`);
    await db.execute(sql`insert into runs (id, tenant_id, job_id, scheduled_for, trigger, status, attempts, next_attempt_at, created_at)
      select md5(${prefix} || 'r' || g)::uuid, ${tenantId}, md5(${prefix} || 'j' || g)::uuid,
             to_timestamp((${firstDueMs}::bigint + g) / 1000.0), 'schedule', 'scheduled', 0,
             to_timestamp((${firstDueMs}::bigint + g) / 1000.0), now()
      from generate_series(1, ${n}::int) g`);
  }

  /** Runs the claim statement under EXPLAIN ANALYZE as `claimRuns` does, then rolls it back. */
  async function explainClaim(o: ClaimOptions): Promise<{ read: number; claimed: number }> {
    let result: { read: number; claimed: number } | undefined;
    await store.database.db
      .transaction(async (tx) => {
        await tx.execute(CLAIM_PLANNER_SETTING);
        const [row] = await query<Record<string, unknown>>(tx, sql`explain (analyze, format json) ${claimStatement(o)}`);
        const raw = Object.values(row!)[0];
        const [{ Plan: plan }] = (typeof raw === 'string' ? JSON.parse(raw) : raw) as [{ Plan: PlanNode }];
        result = { read: runsRowsRead(plan), claimed: plan['Actual Rows'] };
        throw new Rollback();
      })
      .catch((err) => {
        if (!(err instanceof Rollback)) throw err;
      });
    return result!;
  }

  it(`a claim of ${LIMIT} reads about ${LIMIT} due runs, not the backlog of ${BACKLOG}`, async () => {
    await addDueRuns('a', 'http://a.example/hook', BACKLOG, T0 - 10 * BACKLOG);
    const { read, claimed } = await explainClaim({ owner: 'D', limit: LIMIT, nowMs: T0, leaseMarginMs: 1 });
    expect(claimed).toBe(LIMIT);
    // The due index's first LIMIT entries and the LIMIT runs updated through the primary key.
    expect(read).toBeLessThanOrEqual(4 * LIMIT);
  });

  it('a claim past a saturated destination reads at most its window, not the backlog times the window', async () => {
    await addDueRuns('a', 'http://a.example/hook', BACKLOG, T0 - 10 * BACKLOG);
    await addDueRuns('b', 'http://b.example/hook', BACKLOG / 4, T0 - 2 * BACKLOG);
    const { read, claimed } = await explainClaim({
      owner: 'D',
      limit: LIMIT,
      nowMs: T0,
      leaseMarginMs: 1,
      skipDestinations: [destinationOf('http://a.example/hook')],
    });
    expect(claimed).toBe(LIMIT);
    // The window's bound read on the due index (here every due run), then the index walked past the skipped runs to
    // the first LIMIT others: linear in the window.
    const due = BACKLOG + BACKLOG / 4;
    expect(read).toBeLessThanOrEqual(2 * due + 2 * LIMIT);
  });
});
