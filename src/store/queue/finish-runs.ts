/**
 * Records the outcome of delivered attempts: the hot path's second half. One transaction per batch:
 * the runs are updated only where this dispatcher still holds the lease that claimed them (a dispatcher whose lease
 * expired and was taken over cannot overwrite the new holder's result, as River's JobSetStateIfRunningMany; the lease
 * is the owner *and* the attempt number, so a late outcome of an earlier attempt cannot overwrite the same
 * dispatcher's later claim of the run either), every
 * attempt is appended to the log, and jobs whose receiver answered `410 Gone` are paused.
 * Arrays travel as one jsonb parameter each, so a batch is a fixed number of statements whatever its size.
 */
import { sql } from 'drizzle-orm';
import { RUN_STATUS, RUN_TRIGGER, type RunStatus } from '../../domain/states.ts';
import { PAUSED_REASON, type EventSeed } from '../../domain/events.ts';
import { recordEvents } from '../notifications.ts';
import { ERROR_CLASS } from '../../domain/attempt-outcome.ts';
import { query, queryWithSetting, type Db, type Executor } from '../db.ts';
import { eachBucket } from './by-bucket.ts';

/** One finished attempt and what it means for its run. Times are epoch ms. */
export type AttemptOutcome = {
  /** The run's bucket: a finish statement names one. */
  shard: number;
  runId: string;
  jobId: string;
  attempt: number;
  startedAtMs: number;
  finishedAtMs: number;
  responseStatus: number | null;
  responseBodyExcerpt: string | null;
  errorClass: string | null;
  error: string | null;
  /** The run's new state: final, or `retrying` at `nextAttemptAtMs`. */
  runStatus: Extract<RunStatus, 'succeeded' | 'failed' | 'retrying' | 'expired'>;
  nextAttemptAtMs: number | null;
  /** Set when the job must be paused (`gone`: the receiver answered 410 Gone). */
  pauseReason: string | null;
};

/**
 * The finish transaction's planner setting: joins are hashed (or merged), never nested loops. The outcomes (a jsonb
 * recordset, guessed at 100 rows) are joined to their runs (read by primary key, `id = any(ids)`); a planner short of
 * statistics on `runs` (a fresh table, a burst before autovacuum's ANALYZE) guessed one run held and looped over
 * every outcome for each run read: a batch of 500 compared 250,000 pairs, a third of the drain's database time.
 * Bitmap scans are off as well: short of statistics, the planner took the bucket's condition for selective enough and
 * left the ids out of a bitmap scan of the primary key, reading every run of the bucket; a plain index scan of the
 * primary key seeks each id. The statement's jobs are read the same way (`id = any(…)`), hashed against its tally.
 */
export const FINISH_PLANNER_SETTING = sql`select set_config('enable_nestloop', 'off', true), set_config('enable_bitmapscan', 'off', true)`;
/**
 * For the statements of `countFailuresInARow` and `recordRunEnds` (jobs and their runs, by id within one bucket), after
 * a reap or a release, and a finish's pauses: nested loops over the primary key only, as in the claim
 * (CLAIM_PLANNER_SETTING), for the same reason.
 */
const FINISH_FOLLOW_UP_SETTING = sql`select set_config('enable_nestloop', 'on', true), set_config('enable_hashjoin', 'off', true),
  set_config('enable_mergejoin', 'off', true)`;

/**
 * Applies a batch of outcomes for lease owner `owner`, in one transaction per bucket: the runs, the attempt log and the
 * failures in a row of their jobs in one statement (`finishStatement`), then what else the outcomes mean for their jobs
 * (`recordRunEnds`: pauses for a 410 Gone or `pauseAfterFailures`, and the notification events).
 * @param onBucketError called with a bucket whose transaction failed, the error and that bucket's outcomes (not
 *   recorded); the other buckets are written all the same. Without it, the first failure is thrown (the buckets
 *   before it are recorded).
 * @returns the ids of the runs whose result was recorded (the others had lost their lease, or their bucket failed)
 */
export function finishRuns(
  db: Db,
  owner: string,
  outcomes: AttemptOutcome[],
  onBucketError?: (shard: number, err: unknown, outcomes: AttemptOutcome[]) => void,
): Promise<Set<string>> {
  return eachBucket(outcomes, (shard, group) => finishBucket(db, owner, shard, group), onBucketError);
}

async function finishBucket(db: Db, owner: string, shard: number, outcomes: AttemptOutcome[]): Promise<Set<string>> {
  return db.transaction(async (tx) => {
    const held = await queryWithSetting<FinishedRun>(tx, FINISH_PLANNER_SETTING, finishStatement(owner, outcomes));
    const pauseReasons = new Map(outcomes.flatMap((o) => (o.pauseReason ? [[o.runId, o.pauseReason] as const] : [])));
    const reached = new Set(held.filter((h) => h.reached).map((h) => h.job_id));
    await recordRunEnds(tx, shard, held, pauseReasons, reached, Math.max(...outcomes.map((o) => o.finishedAtMs)));
    return new Set(held.map((h) => h.id));
  });
}

/** A run whose state a finish, a reap or a release has just changed, with its new status. */
export type EndedRun = { id: string; job_id: string; tenant_id: string; trigger: string; status: string };
/** A run the finish statement recorded, and whether its job reached `pauseAfterFailures` by the statement's count. */
export type FinishedRun = EndedRun & { reached: boolean };

/** The runs that count toward their job's failures in a row: notification deliveries (runs of hidden jobs) do not. */
const countsForJob = (h: EndedRun) => h.trigger !== RUN_TRIGGER.notification;

/**
 * Counts the failed runs in a row of the jobs of `ended` (bucket `shard`), in the caller's transaction, after a reap
 * or a release (the finish counts in its own statement, `finishStatement`, with the same rule): a failure adds one, a
 * success resets the count (`expired` neither counts nor resets). A batch of successes of jobs without failures reads
 * their rows and writes nothing. Sets FINISH_FOLLOW_UP_SETTING for the rest of the transaction.
 * @returns the jobs that reached their `pauseAfterFailures` (active, with a threshold, count at or past it)
 */
export async function countFailuresInARow(tx: Executor, shard: number, ended: readonly EndedRun[]): Promise<Set<string>> {
  const tally = new Map<string, { failed: number; reset: boolean }>();
  for (const h of ended) {
    if (!countsForJob(h) || (h.status !== RUN_STATUS.failed && h.status !== RUN_STATUS.succeeded)) continue;
    const t = tally.get(h.job_id) ?? { failed: 0, reset: false };
    if (h.status === RUN_STATUS.failed) t.failed++;
    else t.reset = true;
    tally.set(h.job_id, t);
  }
  if (tally.size === 0) return new Set();
  // Nested loops over primary keys (with hash joins the update would scan the bucket's jobs).
  const counted = await queryWithSetting<{ id: string; reached: boolean }>(
    tx,
    FINISH_FOLLOW_UP_SETTING,
    sql`update jobs j
      set consecutive_failures = ${NEXT_FAILURES('v')}
      from jsonb_to_recordset(${JSON.stringify([...tally].map(([id, t]) => ({ id, ...t })))}::jsonb) as v(id uuid, failed int, reset boolean)
      where j.shard = ${shard} and j.id = v.id and (v.failed > 0 or j.consecutive_failures <> 0)
      returning j.id, ${REACHED} as reached`,
  );
  return new Set(counted.filter((c) => c.reached).map((c) => c.id));
}

/** The failures-in-a-row rule over `jobs j` and a tally row `alias` (failed int, reset boolean): a failure adds one, a success alone resets. */
const NEXT_FAILURES = (alias: 't' | 'v') => sql.raw(`case when ${alias}.reset and ${alias}.failed = 0 then 0 else j.consecutive_failures + ${alias}.failed end`);

/** Whether an updated job row has reached its `pauseAfterFailures` (SQL over `jobs j`). */
const REACHED = sql`(j.status = 'active' and j.pause_after_failures > 0 and j.consecutive_failures >= j.pause_after_failures)`;

/**
 * What runs that just ended (or were sent back to retry) mean for their jobs beyond the failures in a row, in the
 * caller's transaction on bucket `shard` (the finish, the reaper and a release at shutdown share it, so a run failed as
 * ambiguous counts as any other): the pauses (a 410 Gone; `pauseAfterFailures` reached, as counted) and the events of
 * it all (docs/design.md invariant 11: committed with the change). Notification deliveries (runs of hidden jobs) are
 * left out: they neither cause pauses nor events of their own. Every statement names the bucket; a batch of
 * successes that pauses nothing sends none.
 * @param ended the runs changed, all of bucket `shard`, with their new status
 * @param pauseReasons run id → PausedReason its outcome asks for (`gone` for a 410); empty for the reaper
 * @param reached the jobs whose failures in a row reached their `pauseAfterFailures` (`countFailuresInARow`, or the finish's count)
 * @param nowMs the changes' time (epoch ms): the pauses' `updatedAt` and the events' `occurredAt`
 */
export async function recordRunEnds(
  tx: Executor,
  shard: number,
  ended: readonly EndedRun[],
  pauseReasons: ReadonlyMap<string, string>,
  reached: ReadonlySet<string>,
  nowMs: number,
): Promise<void> {
  const held = ended.filter(countsForJob);
  if (held.length === 0) return;
  const pauses = new Map<string, string>();
  for (const h of held) {
    const reason = pauseReasons.get(h.id);
    if (reason) pauses.set(h.job_id, reason);
  }
  for (const id of reached) if (!pauses.has(id)) pauses.set(id, PAUSED_REASON.consecutiveFailures);
  const events: EventSeed[] = [];
  for (const h of held) {
    if (h.status === RUN_STATUS.failed) events.push({ type: 'run.failed', tenantId: h.tenant_id, jobId: h.job_id, runId: h.id });
    if (h.status === RUN_STATUS.expired) events.push({ type: 'run.expired', tenantId: h.tenant_id, jobId: h.job_id, runId: h.id });
  }
  if (pauses.size > 0) {
    // Rare (a 410, a threshold reached): the setting is sent again rather than tracked.
    await tx.execute(FINISH_FOLLOW_UP_SETTING);
    const paused = await pauseJobs(tx, shard, JSON.stringify([...pauses].map(([id, reason]) => ({ id, reason }))), new Date(nowMs).toISOString());
    for (const p of paused) events.push({ type: 'job.paused', tenantId: p.tenant_id, jobId: p.id, reason: p.paused_reason ?? undefined });
  }
  await recordEvents(tx, events, nowMs);
}

/**
 * The statement `finishRuns` runs: updates the runs `owner` still holds, appends every attempt to the log and counts
 * the failures in a row of their jobs (as `countFailuresInARow` does), returning the runs updated (id, job_id,
 * tenant_id, trigger, new status) and whether each one's job reached its `pauseAfterFailures`. One statement, so one
 * round trip. Run it after FINISH_PLANNER_SETTING; exported for the plan's test.
 */
export function finishStatement(owner: string, outcomes: AttemptOutcome[]) {
  const shard = outcomes[0]!.shard;
  const ids = `{${outcomes.map((o) => o.runId).join(',')}}`;
  // One row per outcome serves both the run update and the attempt log; times travel as epoch ms (to_timestamp is
  // cheaper than parsing timestamp text, and so is writing a number than toISOString).
  const rows = JSON.stringify(
    outcomes.map((o) => ({
      id: o.runId,
      attempt: o.attempt,
      status: o.runStatus,
      next_ms: o.nextAttemptAtMs,
      started_ms: o.startedAtMs,
      finished_ms: o.finishedAtMs,
      response_status: o.responseStatus,
      excerpt: o.responseBodyExcerpt,
      error_class: o.errorClass,
      error: o.error,
    })),
  );
  const columns = sql.raw(`(id uuid, attempt smallint, status text, next_ms bigint, started_ms bigint, finished_ms bigint,
               response_status smallint, excerpt text, error_class text, error text)`);
  return sql`with v as materialized (select * from jsonb_to_recordset(${rows}::jsonb) as v${columns}),
      held as (
        update runs r
        set status = v.status, next_attempt_at = to_timestamp(v.next_ms / 1000.0),
            finished_at = case when v.status = 'retrying' then null else to_timestamp(v.finished_ms / 1000.0) end,
            response_status = v.response_status, error = v.error, lease_owner = null, lease_expires_at = null
        from v
        where r.shard = ${shard} and r.id = v.id and r.status = 'running' and r.lease_owner = ${owner} and r.attempts = v.attempt
          -- The ids again as an array the planner can count: the runs are read by primary key. No other index serves
          -- these conditions (runs_lease_idx names the lease, not the status, so no scan of every running run).
          and r.id = any(${ids}::uuid[])
        returning r.id, r.job_id, r.tenant_id, r.trigger, r.status),
      -- Every attempt happened, whether or not its lease still held: the log keeps them all. A result that comes
      -- after the reaper logged its attempt as lease_lost fills that entry in and keeps the class. It reads the
      -- outcomes again, not from v: on Citus an INSERT … SELECT from a CTE's result sends that result to every
      -- node, so each finish needed every worker up (a stopped worker failed the other workers' buckets too).
      logged as (
        insert into attempts (shard, run_id, attempt, started_at, finished_at, duration_ms, response_status,
                              response_body_excerpt, error_class, error)
        select ${shard}::smallint, v.id, v.attempt, to_timestamp(v.started_ms / 1000.0), to_timestamp(v.finished_ms / 1000.0),
               v.finished_ms - v.started_ms, v.response_status, v.excerpt, v.error_class, v.error
        from jsonb_to_recordset(${rows}::jsonb) as v${columns}
        on conflict (shard, run_id, attempt) do update
          set started_at = excluded.started_at, finished_at = excluded.finished_at, duration_ms = excluded.duration_ms,
              response_status = excluded.response_status, response_body_excerpt = excluded.response_body_excerpt,
              -- response_status as text first: text || smallint is stable, which Citus refuses in DO UPDATE SET.
              error = attempts.error || '; then: ' || coalesce(excluded.error, 'status ' || excluded.response_status::text)
          where attempts.error_class = ${ERROR_CLASS.leaseLost} and attempts.finished_at = attempts.started_at),
      tally as (
        select job_id, (count(*) filter (where status = 'failed'))::int as failed, bool_or(status = 'succeeded') as reset
        from held where trigger <> ${RUN_TRIGGER.notification} and status in ('failed', 'succeeded') group by job_id),
      -- The jobs by primary key (id = any(…)), hashed against the tally: never a pass over the bucket's jobs.
      counted as (
        update jobs j
        set consecutive_failures = ${NEXT_FAILURES('t')}
        from tally t
        where j.shard = ${shard} and j.id = t.job_id and j.id = any(array(select job_id from tally))
          and (t.failed > 0 or j.consecutive_failures <> 0)
        returning j.id, ${REACHED} as reached)
      select h.id, h.job_id, h.tenant_id, h.trigger, h.status, coalesce(c.reached, false) as reached
      from held h left join counted c on c.id = h.job_id`;
}

/**
 * Pauses active jobs of bucket `shard` (`[{ id, reason }]` as JSON, reason a PausedReason) and cancels their runs that have not started.
 * Shared by the finish (410 Gone, `pauseAfterFailures`) and `PATCH { paused: true }`. Run it in the caller's
 * transaction (`db` may be one).
 * @param nowIso the pause's time, ISO 8601 UTC: the jobs' `updated_at` and the canceled runs' `finished_at`
 * @returns the jobs it paused (those that were active)
 */
export async function pauseJobs(
  db: Executor,
  shard: number,
  jobsJson: string,
  nowIso: string,
): Promise<{ id: string; tenant_id: string; paused_reason: string | null }[]> {
  const paused = await query<{ id: string; tenant_id: string; paused_reason: string | null }>(
    db,
    sql`update jobs j set status = 'paused', paused_reason = v.reason, next_run_at = null, updated_at = ${nowIso}::timestamptz
      from jsonb_to_recordset(${jobsJson}::jsonb) as v(id uuid, reason text)
      where j.shard = ${shard} and j.id = v.id and j.status = 'active'
      returning j.id, j.tenant_id, j.paused_reason`,
  );
  await db.execute(sql`update runs r set status = 'canceled', finished_at = ${nowIso}::timestamptz, next_attempt_at = null,
      error = 'job paused'
    from jsonb_to_recordset(${jobsJson}::jsonb) as v(id uuid, reason text)
    where r.shard = ${shard} and r.job_id = v.id and r.status = 'scheduled' and r.trigger = 'schedule'`);
  return paused;
}
