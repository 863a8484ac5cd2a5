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
import { type AttemptOutcome, ERROR_CLASS } from '../../domain/attempt-outcome.ts';
import { RUN_TRIGGER } from '../../domain/states.ts';
import { type Db, type PlannerSettings, queryPlanned, uuidArray } from '../db.ts';
import { eachBucket } from './by-bucket.ts';
import { type FinishedRun, NEXT_FAILURES, REACHED, type RunEndEffects, recordRunEnds } from './run-ends.ts';

/**
 * The finish statement's planner settings: joins are hashed (or merged), never nested loops. The outcomes (a jsonb
 * recordset, guessed at 100 rows) are joined to their runs (read by primary key, `id = any(ids)`); a planner short of
 * statistics on `runs` (a fresh table, a burst before autovacuum's ANALYZE) guessed one run held and looped over
 * every outcome for each run read: a batch of 500 compared 250,000 pairs, a third of the drain's database time.
 * Bitmap scans are off as well: short of statistics, the planner took the bucket's condition for selective enough and
 * left the ids out of a bitmap scan of the primary key, reading every run of the bucket; a plain index scan of the
 * primary key seeks each id. The statement's jobs are read the same way (`id = any(…)`), hashed against its tally.
 */
export const FINISH_PLAN: PlannerSettings = { enable_nestloop: 'off', enable_bitmapscan: 'off' };
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
    const held = await queryPlanned<FinishedRun>(tx, FINISH_PLAN, finishStatement(owner, outcomes));
    const pauseReasons = new Map(outcomes.flatMap((o) => (o.pauseReason ? [[o.runId, o.pauseReason] as const] : [])));
    const reached = new Set(held.filter((h) => h.reached).map((h) => h.job_id));
    await recordRunEnds(
      tx,
      shard,
      held,
      pauseReasons,
      reached,
      Math.max(...outcomes.map((o) => o.finishedAtMs)),
      receiverEffects(outcomes),
    );
    return new Set(held.map((h) => h.id));
  });
}

/**
 * What the outcomes ask of their jobs beyond pauses, for `recordRunEnds`: the `Chime-Control` tokens `complete` and
 * `skip-next` by run, and the result deliveries by run (every run of the batch routes its result or not: the claim
 * carried the job's routes, so nothing is read for it). Undefined when no outcome asks for anything.
 */
function receiverEffects(outcomes: readonly AttemptOutcome[]): RunEndEffects {
  const control = new Map(outcomes.flatMap((o) => (o.control?.length ? [[o.runId, o.control] as const] : [])));
  const results = new Map(outcomes.map((o) => [o.runId, o.resultDelivery ?? null] as const));
  return { control, results };
}

/**
 * The statement `finishRuns` runs: updates the runs `owner` still holds, appends every attempt to the log and counts
 * the failures in a row of their jobs (as `countFailuresInARow` does), returning the runs updated (id, job_id,
 * tenant_id, trigger, new status), whether each one's job reached its `pauseAfterFailures` and, for a run that ended,
 * its job's chain links (`then_jobs`). One statement, so one round trip. Run it under FINISH_PLAN (`queryPlanned`);
 * exported for the plan's test.
 */
export function finishStatement(owner: string, outcomes: AttemptOutcome[]) {
  const shard = outcomes[0]!.shard;
  const ids = uuidArray(outcomes.map((o) => o.runId));
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
      headers: o.responseHeaders ?? null,
      // An async job's acknowledged attempt: the run awaits the receiver's report (src/store/completion.ts).
      await_ms: o.awaitCompletion?.timeoutMs ?? null,
      hb_ms: o.awaitCompletion?.heartbeatTimeoutMs ?? null,
      note: o.attemptNote ?? null,
    })),
  );
  const columns = sql.raw(`(id uuid, attempt smallint, status text, next_ms bigint, started_ms bigint, finished_ms bigint,
               response_status smallint, excerpt text, error_class text, error text, headers jsonb, note text,
               await_ms bigint, hb_ms bigint)`);
  return sql`with v as materialized (select * from jsonb_to_recordset(${rows}::jsonb) as v${columns}),
      held as (
        update runs r
        -- An acknowledged async attempt stays running, awaiting the report with its deadlines and no lease (no
        -- dispatcher holds it: the completion reaper, not the lease reaper, watches it).
        set status = case when v.await_ms is not null then 'running' else v.status end, next_attempt_at = to_timestamp(v.next_ms / 1000.0),
            finished_at = case when v.status = 'retrying' or v.await_ms is not null then null else to_timestamp(v.finished_ms / 1000.0) end,
            awaiting_completion = v.await_ms is not null,
            completion_deadline = to_timestamp((v.finished_ms + v.await_ms) / 1000.0),
            heartbeat_deadline = to_timestamp((v.finished_ms + v.hb_ms) / 1000.0),
            response_status = v.response_status, error = v.error, lease_owner = null, lease_expires_at = null
        from v
        where r.shard = ${shard} and r.id = v.id and r.status = 'running' and r.lease_owner = ${owner} and r.attempts = v.attempt
          -- The ids again as an array the planner can count: the runs are read by primary key.
          and r.id = any(${ids}::uuid[])
        returning r.id, r.job_id, r.tenant_id, r.trigger, r.status),
      -- Every attempt happened, whether or not its lease still held: the log keeps them all. A result that comes
      -- after the reaper logged its attempt as lease_lost fills that entry in and keeps the class. It reads the
      -- outcomes again, not from v: on Citus an INSERT … SELECT from a CTE's result sends that result to every
      -- node, so each finish needed every worker up (a stopped worker failed the other workers' buckets too).
      logged as (
        insert into attempts (shard, run_id, attempt, started_at, finished_at, duration_ms, response_status,
                              response_body_excerpt, error_class, error, response_headers)
        select ${shard}::smallint, v.id, v.attempt, to_timestamp(v.started_ms / 1000.0), to_timestamp(v.finished_ms / 1000.0),
               v.finished_ms - v.started_ms, v.response_status, v.excerpt, v.error_class,
               -- The attempt's note (unknown Chime-Control tokens) goes to its log entry only, not to the run's error.
               case when v.note is null then v.error when v.error is null then v.note else v.error || '; ' || v.note end,
               v.headers
        from jsonb_to_recordset(${rows}::jsonb) as v${columns}
        on conflict (shard, run_id, attempt) do update
          set started_at = excluded.started_at, finished_at = excluded.finished_at, duration_ms = excluded.duration_ms,
              response_status = excluded.response_status, response_body_excerpt = excluded.response_body_excerpt,
              response_headers = excluded.response_headers,
              -- response_status as text first: text || smallint is stable, which Citus refuses in DO UPDATE SET.
              error = case when attempts.error_class = ${ERROR_CLASS.leaseLost}
                then attempts.error || '; then: ' || coalesce(excluded.error, 'status ' || excluded.response_status::text)
                else attempts.error end
          -- Also an async attempt's end written before its acknowledgement (a receiver faster than this finish, or
          -- its deadline): the report's (or timeout's) class and error stay, the response is filled in.
          where (attempts.error_class in (${ERROR_CLASS.leaseLost}, ${ERROR_CLASS.completionTimeout}) or attempts.reported_status is not null)
            and attempts.finished_at = attempts.started_at),
      tally as (
        select job_id, (count(*) filter (where status = 'failed'))::int as failed, bool_or(status = 'succeeded') as reset
        from held where trigger <> ${RUN_TRIGGER.notification} and trigger <> ${RUN_TRIGGER.result}
          and status in ('failed', 'succeeded') group by job_id),
      -- The jobs of the runs that ended, read once by primary key (id = any(…)): never a pass over the bucket's jobs.
      -- Their failures in a row say which of them the count changes; their chain links go to chain-runs.ts, so the
      -- ends of jobs without any cost no statement more.
      ended_jobs as (
        select j.id, j.consecutive_failures, j.then_jobs, j.overlap_policy from jobs j
        where j.shard = ${shard} and j.id = any(array(
          select job_id from held where trigger <> ${RUN_TRIGGER.notification} and trigger <> ${RUN_TRIGGER.result}
            and status in ('succeeded', 'failed', 'expired')))),
      -- Only the jobs whose count changes are updated (by primary key, hashed against the tally): a batch of
      -- successes of jobs without failures writes none.
      counted as (
        update jobs j
        set consecutive_failures = ${NEXT_FAILURES('t')}
        from tally t
        where j.shard = ${shard} and j.id = t.job_id
          and j.id = any(array(select job_id from tally
                               where failed > 0 or job_id in (select id from ended_jobs where consecutive_failures <> 0)))
          and (t.failed > 0 or j.consecutive_failures <> 0)
        returning j.id, ${REACHED} as reached)
      select h.id, h.job_id, h.tenant_id, h.trigger, h.status, coalesce(c.reached, false) as reached,
             -- null for runs that did not end (retrying, awaiting): they chain nothing (nor do deliveries: chain-runs.ts).
             case when h.status in ('succeeded', 'failed', 'expired') then e.then_jobs end as then_jobs, e.overlap_policy
      from held h left join counted c on c.id = h.job_id left join ended_jobs e on e.id = h.job_id`;
}
