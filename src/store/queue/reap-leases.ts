/**
 * The reaper: returns runs whose lease expired (their dispatcher died or stalled mid-delivery) to the queue.
 * At-least-once runs go back to `retrying`, due now, unless their attempts are spent; at-most-once runs end
 * `failed` because the request may have left (docs/design.md invariant 4: an ambiguous outcome is never re-sent).
 * A run ended `failed` here is a failed run like any other: it counts toward its job's `pauseAfterFailures` and is
 * announced as `run.failed` (`countFailuresInARow` and `recordRunEnds`, shared with the finish), in the same transaction.
 */
import { type SQL, sql } from 'drizzle-orm';
import { ERROR_CLASS } from '../../domain/attempt-outcome.ts';
import type { PausedReason } from '../../domain/events.ts';
import { acrossBuckets } from '../citus.ts';
import { type Db, type Executor, query, queryPlanned } from '../db.ts';
import { eachBucket, inBucket, type OnBucketError } from './by-bucket.ts';
import { CLAIM_PLAN } from './claim-runs.ts';
import { countFailuresInARow, type EndedRun, recordRunEnds } from './run-ends.ts';

/** How often a dispatcher looks for expired leases, in ms. */
export const REAP_INTERVAL_DEFAULT_MS = 5_000;
/** Most runs one reaper pass returns. */
export const REAP_BATCH_DEFAULT = 1_000;

/**
 * The SET clause that takes a run back from its lease holder (`r` the run, `j` its job): at-least-once runs with
 * attempts left become due now; at-most-once runs, and runs whose attempts are spent, end `failed`.
 */
function giveBack(nowIso: string, atMostOnceError: string, otherError: string) {
  const ends = sql`(j.delivery_mode = 'at-most-once' or r.attempts >= (j.retry->>'maxAttempts')::int)`;
  return sql`status = case when ${ends} then 'failed' else 'retrying' end,
    next_attempt_at = case when ${ends} then null else ${nowIso}::timestamptz end,
    finished_at = case when ${ends} then ${nowIso}::timestamptz end,
    error = case when j.delivery_mode = 'at-most-once' then ${atMostOnceError}::text else ${otherError}::text end,
    lease_owner = null, lease_expires_at = null`;
}

/**
 * Takes runs back in the caller's transaction on bucket `shard`: `update` (an UPDATE of runs … RETURNING id, attempts,
 * job_id, tenant_id, trigger, status and the job's chain links, `then_jobs`) gives them back; each one's lost attempt
 * goes into the attempt log with error class `lease_lost` and `error`, so the history shows why the run was re-sent
 * (or, at-most-once, failed), and a result that arrives later for that attempt fills the entry in (finish-runs.ts);
 * then what the ends mean for their jobs (`countFailuresInARow`, `recordRunEnds`, chains included). Shared by the
 * reaper and a release at shutdown.
 * @returns how many runs were taken back
 */
async function takeBack(tx: Executor, shard: number, nowMs: number, update: SQL, error: string): Promise<number> {
  // The claim's planner settings, for the same reason: a few rows by primary key, never the bucket (see CLAIM_PLAN).
  const rows = await queryPlanned<EndedRun & { attempts: number }>(tx, CLAIM_PLAN, update);
  if (rows.length === 0) return 0;
  const now = new Date(nowMs).toISOString();
  // A statement of its own, from the rows as a parameter: on Citus an INSERT … SELECT from a CTE's result (the
  // update's) sends that result to every node, so a stopped worker would fail every bucket's reap.
  await query(
    tx,
    sql`insert into attempts (shard, run_id, attempt, started_at, finished_at, error_class, error)
      select ${shard}::smallint, v.id, v.attempt, ${now}::timestamptz, ${now}::timestamptz, ${ERROR_CLASS.leaseLost}, ${error}::text
      from jsonb_to_recordset(${JSON.stringify(rows.map((r) => ({ id: r.id, attempt: r.attempts })))}::jsonb) as v(id uuid, attempt smallint)
      on conflict (shard, run_id, attempt) do nothing`,
  );
  await recordRunEnds(tx, shard, rows, NO_PAUSE_REASONS, await countFailuresInARow(tx, shard, rows), nowMs);
  return rows.length;
}

/**
 * The FROM and WHERE of bucket `shard`'s expired leases at `nowIso`, on the due index: a leased run keeps its attempt's
 * due time there (no index names the lease, so that the claim and the renewals are HOT updates), and a lease always
 * ends after the due time it was taken for, so every expired one is among the bucket's runs due before now. The walk
 * passes over the bucket's waiting runs already due: cheap while the dispatchers keep up, linear in the overdue
 * backlog when they do not.
 */
function expiredLeases(shard: number | SQL, nowIso: string) {
  return sql`runs where shard = ${shard} and next_attempt_at < ${nowIso}::timestamptz and status = 'running'
    and lease_expires_at < ${nowIso}::timestamptz`;
}

/** As `expiredLeases`, for the leases a release before 0021_claim_hot took (`lease_without_due`: a rolling upgrade). */
function expiredLeasesWithoutDue(shard: number | SQL, nowIso: string) {
  return sql`runs where shard = ${shard} and lease_without_due and lease_expires_at < ${nowIso}::timestamptz`;
}

/**
 * Reaps up to `limit` expired leases at `nowMs`: finds the buckets holding one (a read across buckets, one walk of
 * `runs_due_idx` up to now each: `expiredLeases`), then reaps each bucket in its own transaction (`reapBucket`).
 * @param onBucketError called with a bucket whose transaction failed (on Citus, its worker is down) and the error; the
 *   other buckets are reaped all the same. Without it, the first failure is thrown.
 * @returns how many runs were returned or failed
 */
export async function reapExpiredLeases(db: Db, nowMs: number, limit = REAP_BATCH_DEFAULT, onBucketError?: OnBucketError): Promise<number> {
  const now = new Date(nowMs).toISOString();
  const buckets = await acrossBuckets<{ shard: number }>(
    db,
    // The first expired lease in due order, read on the due index as the due buckets' probe is (due-backlog.ts).
    (probed) => sql`select b.shard from ${probed}
        where (select next_attempt_at from ${expiredLeases(sql`b.shard`, now)} order by next_attempt_at limit 1) is not null
          or exists (select 1 from ${expiredLeasesWithoutDue(sql`b.shard`, now)})`,
  );
  let reaped = 0;
  for (const b of buckets) {
    if (reaped >= limit) break;
    reaped += (await inBucket(Number(b.shard), () => reapBucket(db, Number(b.shard), nowMs, limit - reaped), onBucketError)) ?? 0;
  }
  return reaped;
}

/**
 * Reaps up to `limit` expired leases of one bucket at `nowMs`, in one transaction with what the runs it ends mean for
 * their jobs (failures in a row, pauses, `run.failed` events: `countFailuresInARow`, `recordRunEnds`); every statement names the bucket.
 * @returns how many runs were returned or failed
 */
export async function reapBucket(db: Db, shard: number, nowMs: number, limit: number): Promise<number> {
  return db.transaction((tx) =>
    takeBack(
      tx,
      shard,
      nowMs,
      reapStatement(shard, nowMs, limit),
      'the lease expired before a result was recorded (dispatcher died or stalled)',
    ),
  );
}

/**
 * The reaper's statement for bucket `shard` at `nowMs`: gives back up to `limit` runs whose lease expired
 * (`expiredLeases`, `expiredLeasesWithoutDue`: up to `limit` of each), locked SKIP LOCKED, returning what `takeBack`
 * needs. Each kind is found and locked on its own index in a CTE (the expired ones in due order, so that under
 * CLAIM_PLAN only the due index can serve), and the runs are updated by primary key from an array of the ids: a join of
 * the bucket's runs to the found ids was planned, on statistics from before the runs, as a read of the whole bucket
 * compared with every id, and a bucket's primary key filtered by the due time was taken for the due index. Run it under
 * CLAIM_PLAN (`takeBack` does). Exported for the cost test (test/store/queue-cost.test.ts).
 */
export function reapStatement(shard: number, nowMs: number, limit: number): SQL {
  const now = new Date(nowMs).toISOString();
  return sql`with due as materialized (select id from ${expiredLeases(shard, now)} order by next_attempt_at limit ${limit} for update skip locked),
          without_due as materialized (select id from ${expiredLeasesWithoutDue(shard, now)} limit ${limit} for update skip locked)
        update runs r
        set ${giveBack(now, 'ambiguous outcome: the dispatcher lost its lease mid-delivery; not re-sent (at-most-once)', 'the dispatcher lost its lease mid-delivery')}
        from jobs j
        where r.shard = ${shard} and r.id = any(array(select id from due union all select id from without_due))
          and j.shard = ${shard} and j.id = r.job_id
        returning r.id, r.attempts, r.job_id, r.tenant_id, r.trigger, r.status, j.then_jobs, j.overlap_policy`;
}

/**
 * Gives back runs this dispatcher still holds (graceful shutdown past its bound), as the reaper
 * would once their leases expired, but at once.
 */
export async function releaseLeases(db: Db, owner: string, held: { shard: number; runId: string }[], nowMs: number): Promise<void> {
  await eachBucket(held, async (shard, group) => {
    await releaseBucket(
      db,
      owner,
      shard,
      group.map((h) => h.runId),
      nowMs,
    );
    return undefined; // no ids: nothing is collected from a release
  });
}

async function releaseBucket(db: Db, owner: string, shard: number, runIds: string[], nowMs: number): Promise<void> {
  const now = new Date(nowMs).toISOString();
  await db.transaction((tx) =>
    takeBack(
      tx,
      shard,
      nowMs,
      sql`update runs r
        set ${giveBack(now, 'ambiguous outcome: shutdown interrupted the request; not re-sent (at-most-once)', 'released at shutdown')}
        from jobs j
        where r.shard = ${shard} and r.id in (select value::uuid from jsonb_array_elements_text(${JSON.stringify(runIds)}::jsonb))
          and r.lease_owner = ${owner} and r.status = 'running' and j.shard = ${shard} and j.id = r.job_id
        returning r.id, r.attempts, r.job_id, r.tenant_id, r.trigger, r.status, j.then_jobs, j.overlap_policy`,
      'released at shutdown before a result was recorded',
    ),
  );
}

/** No receiver answered a taken run, so none asked for a pause (a 410 Gone): only failures in a row can pause. */
const NO_PAUSE_REASONS: ReadonlyMap<string, PausedReason> = new Map();
