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
import type { RunStatus } from '../../domain/states.ts';
import { ERROR_CLASS } from '../../domain/attempt-outcome.ts';
import { query, type Db } from '../db.ts';

/** One finished attempt and what it means for its run. Times are epoch ms. */
export type AttemptOutcome = {
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
  /** Set when the job must be paused (the receiver answered 410 Gone). */
  pauseReason: string | null;
};

const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());

/**
 * Applies a batch of outcomes for lease owner `owner`.
 * @returns the ids of the runs whose result was recorded (the others had lost their lease)
 */
export async function finishRuns(db: Db, owner: string, outcomes: AttemptOutcome[]): Promise<Set<string>> {
  if (outcomes.length === 0) return new Set();
  const runRows = JSON.stringify(
    outcomes.map((o) => ({
      id: o.runId,
      attempt: o.attempt,
      status: o.runStatus,
      next_attempt_at: iso(o.nextAttemptAtMs),
      finished_at: o.runStatus === 'retrying' ? null : iso(o.finishedAtMs),
      response_status: o.responseStatus,
      error: o.error,
    })),
  );
  const attemptRows = JSON.stringify(
    outcomes.map((o) => ({
      run_id: o.runId,
      attempt: o.attempt,
      started_at: iso(o.startedAtMs),
      finished_at: iso(o.finishedAtMs),
      duration_ms: o.finishedAtMs - o.startedAtMs,
      response_status: o.responseStatus,
      response_body_excerpt: o.responseBodyExcerpt,
      error_class: o.errorClass,
      error: o.error,
    })),
  );
  const pauses = outcomes.filter((o) => o.pauseReason !== null).map((o) => ({ id: o.jobId, reason: o.pauseReason }));
  // One statement records the runs and the attempt log (atomic without a transaction's extra round trips); the
  // rare batch with a 410 Gone pauses its jobs in the same transaction.
  const record = (ex: Db) =>
    query<{ id: string }>(
      ex,
      sql`with held as (
            update runs r
            set status = v.status, next_attempt_at = v.next_attempt_at, finished_at = v.finished_at,
                response_status = v.response_status, error = v.error, lease_owner = null, lease_expires_at = null
            from jsonb_to_recordset(${runRows}::jsonb)
                 as v(id uuid, attempt smallint, status text, next_attempt_at timestamptz, finished_at timestamptz,
                      response_status smallint, error text)
            where r.id = v.id and r.status = 'running' and r.lease_owner = ${owner} and r.attempts = v.attempt
            returning r.id),
          -- Every attempt happened, whether or not its lease still held: the log keeps them all. A result that comes
          -- after the reaper logged its attempt as lease_lost fills that entry in and keeps the class.
          logged as (
            insert into attempts (run_id, attempt, started_at, finished_at, duration_ms, response_status,
                                  response_body_excerpt, error_class, error)
            select * from jsonb_to_recordset(${attemptRows}::jsonb)
              as v(run_id uuid, attempt smallint, started_at timestamptz, finished_at timestamptz, duration_ms int,
                   response_status smallint, response_body_excerpt text, error_class text, error text)
            on conflict (run_id, attempt) do update
              set started_at = excluded.started_at, finished_at = excluded.finished_at, duration_ms = excluded.duration_ms,
                  response_status = excluded.response_status, response_body_excerpt = excluded.response_body_excerpt,
                  error = attempts.error || '; then: ' || coalesce(excluded.error, 'status ' || excluded.response_status)
              where attempts.error_class = ${ERROR_CLASS.leaseLost} and attempts.finished_at = attempts.started_at)
          select id from held`,
    );
  if (pauses.length === 0) return new Set((await record(db)).map((h) => h.id));
  return db.transaction(async (tx) => {
    const held = await record(tx as unknown as Db);
    await pauseJobs(tx as unknown as Db, JSON.stringify(pauses), new Date(outcomes[0]!.finishedAtMs).toISOString());
    return new Set(held.map((h) => h.id));
  });
}

/**
 * Pauses active jobs (`[{ id, reason }]` as JSON) and cancels their runs that have not started.
 * Shared by the 410-Gone path and `PATCH { paused: true }`.
 */
export async function pauseJobs(db: Db, jobsJson: string, nowIso: string): Promise<void> {
  await db.execute(sql`update jobs j set status = 'paused', paused_reason = v.reason, next_run_at = null, updated_at = ${nowIso}::timestamptz
    from jsonb_to_recordset(${jobsJson}::jsonb) as v(id uuid, reason text)
    where j.id = v.id and j.status = 'active'`);
  await db.execute(sql`update runs r set status = 'canceled', finished_at = ${nowIso}::timestamptz, next_attempt_at = null,
      error = 'job paused'
    from jsonb_to_recordset(${jobsJson}::jsonb) as v(id uuid, reason text)
    where r.job_id = v.id and r.status = 'scheduled' and r.trigger = 'schedule'`);
}
