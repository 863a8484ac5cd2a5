/**
 * Reads across every bucket (the only hot-path reads that may span shards): which buckets have waiting runs and when
 * their earliest is due (the dispatcher's claim plan and sleep), and the due backlog (the first thing to alert on,
 * README "Operating"). Each is one walk per bucket of the shard-led `runs_due_idx` from its front, past the bucket's
 * leased runs (which keep their due time there), so the cost is SHARD_COUNT short walks whatever the backlog or the
 * number of future runs.
 */
import { type SQL, sql } from 'drizzle-orm';
import type { BucketDue } from '../../domain/fair-share.ts';
import { acrossBuckets } from '../citus.ts';
import { type Db, epochMs } from '../db.ts';

/**
 * Every bucket with a waiting run (`scheduled` or `retrying`), with its earliest due time, in bucket order.
 * @returns an empty array when nothing waits
 */
export async function dueBuckets(db: Db): Promise<BucketDue[]> {
  const rows = await acrossBuckets<{ shard: number; due: Date | string | null; flows: boolean }>(db, dueBucketsStatement);
  return rows
    .filter((r) => r.due !== null)
    .map((r) => ({ shard: Number(r.shard), dueAtMs: epochMs(r.due!), ...(r.flows ? { flows: true } : {}) }));
}

/**
 * The statement `dueBuckets` sends for `buckets` (a FROM item naming `b.shard`): each bucket's earliest waiting run, on
 * runs_due_idx. `next_attempt_at is not null` is that index's predicate, which the status alone no longer implies (a
 * leased run keeps its due time): without it the probe was a scan of the table. Exported for the cost test.
 */
export function dueBucketsStatement(buckets: SQL): SQL {
  return sql`select b.shard, (select next_attempt_at from runs
                 where shard = b.shard and next_attempt_at is not null and status in ('scheduled', 'retrying')
                 order by next_attempt_at limit 1) as due,
               exists (select 1 from flow_controls f where f.shard = b.shard) as flows
      from ${buckets}`;
}

/** The earliest `next_attempt_at` of any waiting run (epoch ms), or null when nothing waits. */
export async function nextDueAt(db: Db): Promise<number | null> {
  const buckets = await dueBuckets(db);
  return buckets.length === 0 ? null : Math.min(...buckets.map((b) => b.dueAtMs));
}

/**
 * Runs waiting (`scheduled` or `retrying`) whose `next_attempt_at` ≤ `nowMs` (epoch ms), counted up to `cap` per
 * bucket so the count stays cheap on the due index whatever the backlog.
 */
export async function countDueRuns(db: Db, nowMs: number, cap = 1_000_000): Promise<number> {
  const rows = await acrossBuckets<{ n: number | string | null }>(
    db,
    (buckets) => sql`select sum(d.n) as n from ${buckets},
          lateral (select count(*) as n from (select 1 from runs
            where shard = b.shard and status in ('scheduled', 'retrying')
              and next_attempt_at <= ${new Date(nowMs).toISOString()}::timestamptz
            limit ${cap}) x) d`,
  );
  return rows.reduce((n, r) => n + Number(r.n ?? 0), 0);
}
