/**
 * The completion reaper: fails the attempts of runs awaiting a receiver's report (async completion, API.md "Long-running
 * jobs") once their deadline passes: no report by `completion_deadline`, or no heartbeat by `heartbeat_deadline`,
 * whichever comes first. The attempt fails with error class `completion_timeout` and the job's retry policy decides
 * (at-most-once: the run fails, never re-sent), with failures in a row, pauses, `run.failed` events and dead letters as
 * for any failure (src/store/completion.ts `endAwaitedAttempts`, which shares `recordRunEnds` with the finish).
 * An awaiting run holds no lease, so the lease reaper (reap-leases.ts) never sees it; this one reads
 * `runs_awaiting_idx` (bucket, least of the two deadlines) and nothing else. The lease keeper's round and the Workers
 * tick run it after the lease reaper (`reapOnce`, src/dispatch/engine/lease-keeper.ts).
 */
import { sql } from 'drizzle-orm';
import { ERROR_CLASS } from '../../domain/attempt-outcome.ts';
import type { RetryPolicy } from '../../domain/retry.ts';
import type { DeliveryMode } from '../../domain/states.ts';
import { acrossBuckets } from '../citus.ts';
import { type AwaitedEnd, endAwaitedAttempts } from '../completion.ts';
import { type Db, query } from '../db.ts';
import { inBucket, type OnBucketError } from './by-bucket.ts';
import { REAP_BATCH_DEFAULT } from './reap-leases.ts';

/** The awaited runs' deadline, as `runs_awaiting_idx` indexes it (least() leaves out a null heartbeat deadline). */
const DEADLINE = sql.raw('least(completion_deadline, heartbeat_deadline)');

/**
 * Fails up to `limit` awaited attempts whose deadline is before `nowMs` (epoch ms): finds the buckets holding one (a
 * read across buckets, one probe of `runs_awaiting_idx` each), then each bucket in its own transaction.
 * @param onBucketError called with a bucket whose transaction failed and the error; the other buckets go on. Without
 *   it, the first failure is thrown.
 * @returns how many attempts were failed
 */
export async function reapOverdueCompletions(
  db: Db,
  nowMs: number,
  limit = REAP_BATCH_DEFAULT,
  onBucketError?: OnBucketError,
): Promise<number> {
  const now = new Date(nowMs).toISOString();
  const buckets = await acrossBuckets<{ shard: number }>(
    db,
    (probed) => sql`select b.shard from ${probed}
        where exists (select 1 from runs where shard = b.shard and awaiting_completion and ${DEADLINE} < ${now}::timestamptz)`,
  );
  let reaped = 0;
  for (const b of buckets) {
    if (reaped >= limit) break;
    reaped +=
      (await inBucket(Number(b.shard), () => reapCompletionsBucket(db, Number(b.shard), nowMs, limit - reaped), onBucketError)) ?? 0;
  }
  return reaped;
}

/**
 * Fails up to `limit` overdue awaited attempts of bucket `shard` at `nowMs`, in one transaction (runs locked with SKIP
 * LOCKED: a report being written for one of them wins, and the run is not overdue any more once it commits).
 * @returns how many attempts were failed
 */
export async function reapCompletionsBucket(db: Db, shard: number, nowMs: number, limit: number): Promise<number> {
  const now = new Date(nowMs).toISOString();
  return db.transaction(async (tx) => {
    const overdue = await query<{
      id: string;
      attempts: number;
      scheduled_for: Date | string;
      heartbeat_late: boolean;
      completion: { timeoutMs?: number; heartbeatTimeoutMs?: number } | null;
      retry: RetryPolicy;
      relevancy_window_ms: number | null;
      delivery_mode: DeliveryMode;
    }>(
      tx,
      sql`select r.id, r.attempts, r.scheduled_for,
            (r.heartbeat_deadline is not null and r.heartbeat_deadline < ${now}::timestamptz
              and (r.completion_deadline is null or r.heartbeat_deadline < r.completion_deadline)) as heartbeat_late,
            j.completion, j.retry, j.relevancy_window_ms, j.delivery_mode
          from (select id from runs where shard = ${shard} and awaiting_completion and ${DEADLINE} < ${now}::timestamptz
                order by ${DEADLINE} limit ${limit} for update skip locked) o
          join runs r on r.shard = ${shard} and r.id = o.id
          join jobs j on j.shard = ${shard} and j.id = r.job_id
          where r.status = 'running'`,
    );
    const ends: AwaitedEnd[] = overdue.map((o) => ({
      runId: o.id,
      attempt: o.attempts,
      scheduledForMs: new Date(o.scheduled_for).getTime(),
      retry: o.retry,
      relevancyWindowMs: o.relevancy_window_ms,
      deliveryMode: o.delivery_mode,
      end: {
        status: 'failed',
        errorClass: ERROR_CLASS.completionTimeout,
        error: o.heartbeat_late
          ? `completion_timeout: no heartbeat within ${o.completion?.heartbeatTimeoutMs ?? '?'} ms`
          : `completion_timeout: no report within ${o.completion?.timeoutMs ?? '?'} ms of the acknowledgement`,
      },
      reported: null,
    }));
    return (await endAwaitedAttempts(tx, shard, ends, nowMs)).length;
  });
}
