/**
 * The receiver's side of async completion (API.md "Long-running jobs: completion reported by the receiver"): its report
 * of an attempt's end and its heartbeats, and the end of an awaited attempt shared with the completion reaper
 * (queue/reap-completions.ts).
 *
 * A run awaiting its report is `running` with `awaiting_completion` set and no lease (the finish cleared it), so no
 * dispatcher holds it, in memory or in the database: a dispatcher restart or failover changes nothing for it, and only
 * the report, or the reaper at its deadline, ends the attempt. A fast receiver may report (or heartbeat) before the
 * dispatcher's finish has recorded its acknowledgement: the run is then still `running` under the dispatcher's lease
 * for that attempt. The report ends the run all the same and clears the lease, so the finish arriving later finds its
 * lease gone and changes nothing (docs/design.md invariant 15); it only fills the response into the attempt log.
 */
import { and, eq, sql } from 'drizzle-orm';
import { decideAfterAttempt, ERROR_CLASS, type ErrorClass } from '../domain/attempt-outcome.ts';
import { asyncCompletionOf, COMPLETION_DEFAULT_TIMEOUT_MS, type ReportedStatus } from '../domain/completion.ts';
import type { RetryPolicy } from '../domain/retry.ts';
import { type DeliveryMode, RUN_STATUS } from '../domain/states.ts';
import { storableText } from '../domain/storable-text.ts';
import { verifyCompletionToken } from './completion-token.ts';
import type { StoreContext } from './context.ts';
import { announceRun, type Db, type Executor, query } from './db.ts';
import { countFailuresInARow, type EndedRun, recordRunEnds } from './queue/run-ends.ts';
import type { RunRow } from './runs.ts';
import { runs } from './schema.ts';

/** The receiver's report (`POST /v1/runs/:runId/completion`): `output` any JSON (≤ 16 KiB, the route checks). */
export type CompletionReport = { status: ReportedStatus; output?: unknown; error?: string };

/**
 * Why a report or heartbeat was refused: `unauthorized` (a malformed or forged token, another run's, or a stale
 * attempt's: 401), `not_found` (a genuine token of a run that no longer exists: 404), `conflict` (the token's attempt
 * is the run's current one but is no longer awaited: already reported, timed out, or ended otherwise: 409).
 */
export type CompletionRefusal = { refused: 'unauthorized' | 'not_found' | 'conflict'; detail: string };

/** An awaited attempt being ended, with what deciding its run needs (the job's retry policy and window). */
export type AwaitedEnd = {
  runId: string;
  attempt: number;
  scheduledForMs: number;
  retry: RetryPolicy;
  relevancyWindowMs: number | null;
  deliveryMode: DeliveryMode;
  /** The attempt's end: `succeeded`, or a failure with its class (`completion_timeout`, `reported_failure`) and text. */
  end: { status: 'succeeded' } | { status: 'failed'; errorClass: ErrorClass; error: string };
  /** The report, when the receiver made one (null: the reaper's timeout). */
  reported: ReportedStatus | null;
  /** The report's output (stored as the run's `output`); undefined keeps the run's. */
  output?: unknown;
};

/** The run row and job fields a report or heartbeat reads, locked. */
type Locked = {
  id: string;
  attempts: number;
  status: string;
  awaiting_completion: boolean;
  lease_owner: string | null;
  scheduled_for: Date | string;
  retry: RetryPolicy;
  relevancy_window_ms: number | null;
  delivery_mode: DeliveryMode;
  completion: unknown;
  reported_status: string | null;
  error_class: string | null;
};

/**
 * Reads and locks run `runId` of bucket `claim.shard` for a report or heartbeat of attempt `claim.attempt`, and says
 * why it cannot be taken: a stale attempt (401), or an attempt no longer awaited (409).
 */
async function lockAwaited(tx: Executor, runId: string, claim: { shard: number; attempt: number }): Promise<Locked | CompletionRefusal> {
  const [row] = await query<Locked>(
    tx,
    sql`select r.id, r.attempts, r.status, r.awaiting_completion, r.lease_owner, r.scheduled_for, j.retry,
          j.relevancy_window_ms, j.delivery_mode, j.completion, a.reported_status, a.error_class
        from runs r join jobs j on j.shard = r.shard and j.id = r.job_id
        left join attempts a on a.shard = r.shard and a.run_id = r.id and a.attempt = ${claim.attempt}
        where r.shard = ${claim.shard} and r.id = ${runId}
        for update of r`,
  );
  if (!row) return { refused: 'not_found', detail: `no run ${runId}` };
  if (row.attempts !== claim.attempt) {
    return { refused: 'unauthorized', detail: `the token is attempt ${claim.attempt}'s; the run is at attempt ${row.attempts}` };
  }
  if (row.reported_status !== null) {
    return { refused: 'conflict', detail: `attempt ${claim.attempt} was already reported ${row.reported_status}; the first report stands` };
  }
  // Running under a lease is the race of a receiver faster than the finish: the attempt is this one (checked above).
  if (row.status !== RUN_STATUS.running || (!row.awaiting_completion && row.lease_owner === null)) {
    const why = row.error_class === ERROR_CLASS.completionTimeout ? 'it timed out (completion_timeout)' : `the run is ${row.status}`;
    return { refused: 'conflict', detail: `attempt ${claim.attempt} is no longer awaiting a report: ${why}` };
  }
  return row;
}

/**
 * Records the receiver's report of the attempt `token` names, for run `runId`, at the context clock's now: `succeeded`
 * ends the run `succeeded`; `failed` fails the attempt with the reported `error` (class `reported_failure`) and the
 * job's retry policy decides (`retrying`, or `failed`/`expired`; at-most-once never re-sent). The run's `output`
 * becomes the report's; the attempt gets `completedAt` and `reportedStatus`. One transaction on the run's bucket, with
 * the failures in a row, pauses and events of the end (`recordRunEnds`).
 * @returns the run as it now is, or why the report was refused (`CompletionRefusal`)
 */
export async function reportCompletion(
  ctx: StoreContext,
  runId: string,
  token: string,
  report: CompletionReport,
): Promise<RunRow | CompletionRefusal> {
  const claim = await verifyCompletionToken(ctx.cipher, runId, token);
  if (!claim) return { refused: 'unauthorized', detail: 'the completion token is not valid for this run' };
  const nowMs = ctx.clock.now();
  return (ctx.db as Db).transaction(async (tx) => {
    const row = await lockAwaited(tx, runId, claim);
    if ('refused' in row) return row;
    const end: AwaitedEnd['end'] =
      report.status === 'succeeded'
        ? { status: 'succeeded' }
        : {
            status: 'failed',
            errorClass: ERROR_CLASS.reportedFailure,
            error: storableText(report.error?.trim() ? report.error : 'the receiver reported the job failed'),
          };
    await endAwaitedAttempts(
      tx,
      claim.shard,
      [
        {
          runId: row.id,
          attempt: claim.attempt,
          scheduledForMs: new Date(row.scheduled_for).getTime(),
          retry: row.retry,
          relevancyWindowMs: row.relevancy_window_ms,
          deliveryMode: row.delivery_mode,
          end,
          reported: report.status,
          output: report.output ?? null,
        },
      ],
      nowMs,
    );
    const [run] = await tx
      .select()
      .from(runs)
      .where(and(eq(runs.shard, claim.shard), eq(runs.id, row.id)));
    return run!;
  });
}

/**
 * Records a heartbeat of the attempt `token` names, at the context clock's now: `lastHeartbeatAt` now, `progress` the
 * heartbeat's (when given), and the heartbeat deadline moved to now + the job's `heartbeatTimeoutMs` (when it has one).
 * A heartbeat that comes before the finish recorded the acknowledgement (the receiver is faster than the dispatcher's
 * write) makes the run await from now: deadlines counted from now, the lease cleared, so the finish changes nothing.
 * @returns the deadlines (epoch ms; `heartbeatDeadlineMs` null when the job sets no heartbeat timeout), or a refusal
 */
export async function recordHeartbeat(
  ctx: StoreContext,
  runId: string,
  token: string,
  progress: unknown,
): Promise<{ completionDeadlineMs: number; heartbeatDeadlineMs: number | null } | CompletionRefusal> {
  const claim = await verifyCompletionToken(ctx.cipher, runId, token);
  if (!claim) return { refused: 'unauthorized', detail: 'the completion token is not valid for this run' };
  const nowMs = ctx.clock.now();
  const now = new Date(nowMs).toISOString();
  return (ctx.db as Db).transaction(async (tx) => {
    const row = await lockAwaited(tx, runId, claim);
    if ('refused' in row) return row;
    const completion = asyncCompletionOf(row.completion);
    const hb = completion?.heartbeatTimeoutMs ?? null;
    const hbIso = hb === null ? null : new Date(nowMs + hb).toISOString();
    const takeOver = !row.awaiting_completion;
    const completionIso = takeOver ? new Date(nowMs + (completion?.timeoutMs ?? COMPLETION_DEFAULT_TIMEOUT_MS)).toISOString() : null;
    const [updated] = await query<{ completion_deadline: Date | string; heartbeat_deadline: Date | string | null }>(
      tx,
      sql`update runs
        set last_heartbeat_at = ${now}::timestamptz,
            progress = coalesce(${progress === undefined ? null : JSON.stringify(progress)}::jsonb, progress),
            heartbeat_deadline = ${hbIso}::timestamptz,
            completion_deadline = coalesce(${completionIso}::timestamptz, completion_deadline),
            awaiting_completion = true, lease_owner = null, lease_expires_at = null, next_attempt_at = null
        where shard = ${claim.shard} and id = ${row.id}
        returning completion_deadline, heartbeat_deadline`,
    );
    return {
      completionDeadlineMs: new Date(updated!.completion_deadline).getTime(),
      heartbeatDeadlineMs: updated!.heartbeat_deadline === null ? null : new Date(updated!.heartbeat_deadline).getTime(),
    };
  });
}

/**
 * Ends awaited attempts of bucket `shard` in the caller's transaction at `nowMs` (epoch ms): decides each run
 * (`decideAfterAttempt`, with a failure as an error after the request left, so at-most-once is never re-sent), updates
 * the runs (no longer awaiting, deadlines and lease cleared; `output` set when given), records the attempts' end
 * (`completed_at` and `reported_status` for a report; the error class and text for a failure; an entry the finish has
 * not written yet is made, and the finish fills its response in later), then the failures in a row, pauses and events
 * of the runs that ended (`countFailuresInARow`, `recordRunEnds`), and announces retries due soon. The callers have
 * locked the runs and checked they await this attempt.
 * @returns the runs changed, with their new status
 */
export async function endAwaitedAttempts(tx: Executor, shard: number, ends: readonly AwaitedEnd[], nowMs: number): Promise<EndedRun[]> {
  if (ends.length === 0) return [];
  const rows = ends.map((e) => {
    const d =
      e.end.status === 'succeeded'
        ? { runStatus: 'succeeded' as const, nextAttemptAtMs: null, errorClass: null, error: null }
        : decideAfterAttempt(
            {
              attempt: e.attempt,
              scheduledForMs: e.scheduledForMs,
              relevancyWindowMs: e.relevancyWindowMs,
              retry: e.retry,
              deliveryMode: e.deliveryMode,
              successStatusCodes: [],
            },
            { kind: 'error', errorClass: e.end.errorClass, message: e.end.error, maybeSent: true },
            nowMs,
          );
    return {
      id: e.runId,
      attempt: e.attempt,
      status: d.runStatus,
      next_ms: d.nextAttemptAtMs,
      error_class: d.errorClass,
      // The run's error says what the policy made of it; the attempt's is the failure itself.
      run_error: d.error === null ? null : storableText(d.error),
      attempt_error: e.end.status === 'failed' ? e.end.error : null,
      reported: e.reported,
      set_output: e.output !== undefined,
      output: e.output === undefined ? null : e.output,
    };
  });
  const now = new Date(nowMs).toISOString();
  const json = JSON.stringify(rows);
  const columns = sql.raw(`(id uuid, attempt smallint, status text, next_ms bigint, error_class text, run_error text,
    attempt_error text, reported text, set_output boolean, output jsonb)`);
  const ended = await query<EndedRun>(
    tx,
    sql`update runs r
      set status = v.status, next_attempt_at = to_timestamp(v.next_ms / 1000.0),
          finished_at = case when v.status = 'retrying' then null else ${now}::timestamptz end,
          error = v.run_error, output = case when v.set_output then v.output else r.output end,
          awaiting_completion = false, completion_deadline = null, heartbeat_deadline = null,
          lease_owner = null, lease_expires_at = null
      from jsonb_to_recordset(${json}::jsonb) as v${columns}
      where r.shard = ${shard} and r.id = v.id and r.status = 'running' and r.attempts = v.attempt
      -- The job's chain links with the end, so that a report of a job without any costs no statement more.
      returning r.id, r.job_id, r.tenant_id, r.trigger, r.status,
                (select j.then_jobs from jobs j where j.shard = ${shard} and j.id = r.job_id) as then_jobs,
                (select j.overlap_policy from jobs j where j.shard = ${shard} and j.id = r.job_id) as overlap_policy`,
  );
  // The finish normally wrote the entry (the acknowledgement); before it did, the entry is made here and the finish
  // fills its response in (finish-runs.ts).
  await query(
    tx,
    sql`insert into attempts (shard, run_id, attempt, started_at, finished_at, error_class, error, completed_at, reported_status)
      select ${shard}::smallint, v.id, v.attempt, ${now}::timestamptz, ${now}::timestamptz, v.error_class, v.attempt_error,
             case when v.reported is not null then ${now}::timestamptz end, v.reported
      from jsonb_to_recordset(${json}::jsonb) as v${columns}
      on conflict (shard, run_id, attempt) do update
        set error_class = excluded.error_class, error = excluded.error, completed_at = excluded.completed_at,
            reported_status = excluded.reported_status`,
  );
  await recordRunEnds(tx, shard, ended, new Map(), await countFailuresInARow(tx, shard, ended), nowMs);
  const retries = rows.filter((r) => r.status === RUN_STATUS.retrying && r.next_ms !== null).map((r) => r.next_ms!);
  if (retries.length > 0) await announceRun(tx, Math.min(...retries), nowMs);
  return ended;
}
