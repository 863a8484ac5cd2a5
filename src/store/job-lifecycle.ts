/**
 * Changing a job after registration: update (schedule, callback, …), pause, resume, cancel, trigger, replay.
 * Each is one transaction that locks the job row (`FOR UPDATE`), so a change and a dispatcher's claim of the same
 * job never interleave; pending runs are re-planned so that no occurrence is duplicated or lost.
 */
import { and, eq, inArray, ne, sql } from 'drizzle-orm';
import type { AuditChange, ChangeSource } from '../domain/audit.ts';
import { PAUSED_REASON, type PausedReason } from '../domain/events.ts';
import { newId } from '../domain/ids.ts';
import type { JobSpec } from '../domain/job.ts';
import { jitterOffsetMs, nextOccurrence } from '../domain/schedule.ts';
import { shardOf } from '../domain/shard.ts';
import { JOB_STATUS, RUN_STATUS, RUN_TRIGGER, type RunTrigger } from '../domain/states.ts';
import { auditChanges, recordAudit } from './audit-log.ts';
import type { StoreContext } from './context.ts';
import { announceRun, type Db, type Executor, type PlannerSettings, pipelined, query, transactionRetryingDeadlocks } from './db.ts';
import { assertActiveJobsRoom, type CreateJobOptions, type JobRow } from './jobs.ts';
import { recordEvents } from './notifications.ts';
import { deadLetterCondition } from './runs.ts';
import { jobs, runs } from './schema.ts';
import { ofTenant } from './tenant-scope.ts';

/** Why a lifecycle change was refused. */
export class JobStateError extends Error {
  override name = 'JobStateError';
}

/**
 * Fields of a job that an update may replace; `authToken` and `authSecret` (the sealed secret of `callback.auth`):
 * undefined keeps it, null removes it.
 */
export type JobChanges = Partial<Omit<JobSpec, 'authToken' | 'key'>> & {
  authToken?: string | null;
  paused?: boolean;
  /** A replacement (PUT by key): a canceled or completed job becomes active again on its (new) schedule. */
  replace?: boolean;
};

/** Locks the tenant's own job (never a notification endpoint's hidden job) for update; null when there is none. */
async function lockJob(tx: Executor, tenantId: string, jobId: string): Promise<JobRow | null> {
  const [row] = await tx
    .select()
    .from(jobs)
    .where(and(ofTenant(jobs, tenantId), eq(jobs.id, jobId), eq(jobs.kind, 'callback')))
    .for('update');
  return row ?? null;
}

/**
 * Applies changes to a job of the tenant. A schedule (or jitter) change, and a resume, re-plan the pending
 * occurrence from now; pausing cancels it.
 * @param opts.maxActiveJobs the tenant's active-jobs quota (0/absent = none): a replacement that makes a canceled or
 *   completed job active again counts as a new job against it
 * @returns the updated job, or null when the tenant has no such job
 * @throws JobStateError for a canceled job
 * @throws QuotaExceededError when a replacement would reactivate a job beyond the quota
 */
export async function updateJob(
  ctx: StoreContext,
  tenantId: string,
  jobId: string,
  changes: JobChanges,
  opts: CreateJobOptions = {},
): Promise<JobRow | null> {
  // A pause locks the job, then cancels its waiting runs: a claim of one of them (runs, then the job) may deadlock it.
  return transactionRetryingDeadlocks(ctx.db as Db, async (tx) => {
    const job = await lockJob(tx, tenantId, jobId);
    if (!job) return null;
    if (job.status === JOB_STATUS.canceled && !changes.replace) throw new JobStateError('the job is canceled; register a new one');
    const finished = job.status === JOB_STATUS.canceled || job.status === JOB_STATUS.completed;
    if (changes.replace && finished) {
      await assertActiveJobsRoom({ db: tx, openJobs: ctx.openJobs }, tenantId, 1, opts.maxActiveJobs);
      ctx.openJobs?.added(tenantId, 1);
    }
    const now = ctx.clock.now();
    const set: Partial<typeof jobs.$inferInsert> = { updatedAt: new Date(now) };
    if (changes.name !== undefined) set.name = changes.name;
    if (changes.schedule !== undefined) set.schedule = changes.schedule;
    if (changes.callback !== undefined) set.callback = changes.callback;
    if (changes.authToken !== undefined) set.authTokenEnc = changes.authToken === null ? null : await ctx.cipher.seal(changes.authToken);
    if (changes.payload !== undefined) set.payload = changes.payload;
    if (changes.body !== undefined) set.body = changes.body;
    // An empty basic password is no secret: nothing to seal (as at creation).
    if (changes.authSecret !== undefined) set.authSecretEnc = changes.authSecret ? await ctx.cipher.seal(changes.authSecret) : null;
    if (changes.flowControlKey !== undefined) set.flowControlKey = changes.flowControlKey;
    if (changes.retry !== undefined) set.retry = changes.retry;
    if (changes.relevancyWindowMs !== undefined) set.relevancyWindowMs = changes.relevancyWindowMs;
    if (changes.deliveryMode !== undefined) set.deliveryMode = changes.deliveryMode;
    if (changes.overlapPolicy !== undefined) set.overlapPolicy = changes.overlapPolicy;
    if (changes.catchUp !== undefined) set.catchUp = changes.catchUp;
    if (changes.jitterMs !== undefined) set.jitterMs = changes.jitterMs;
    if (changes.metadata !== undefined) set.metadata = changes.metadata;
    if (changes.pauseAfterFailures !== undefined) set.pauseAfterFailures = changes.pauseAfterFailures;
    if (changes.onSuccess !== undefined) set.onSuccess = changes.onSuccess;
    if (changes.onFailure !== undefined) set.onFailure = changes.onFailure;
    if (changes.completion !== undefined) set.completion = changes.completion;

    const pausing = changes.paused === true && job.status !== JOB_STATUS.paused;
    const resuming = changes.paused === false && job.status === JOB_STATUS.paused;
    const staysPaused = job.status === JOB_STATUS.paused && changes.paused !== false;
    const replan =
      resuming ||
      (!pausing && !staysPaused && (changes.replace === true || changes.schedule !== undefined || changes.jitterMs !== undefined));
    await tx
      .update(jobs)
      .set(set)
      .where(and(ofTenant(jobs, tenantId), eq(jobs.id, jobId)));
    if (pausing) {
      await pauseJobs(tx, shardOf(tenantId), [{ id: jobId, reason: PAUSED_REASON.manual }], now);
    } else if (replan) {
      const schedule = (changes.schedule ?? job.schedule) as JobSpec['schedule'];
      // A resume starts the count of failures in a row afresh (API.md "pauseAfterFailures").
      await replanJobs(tx, [{ tenantId, jobId, schedule, jitterMs: changes.jitterMs ?? job.jitterMs }], now, { resetFailures: resuming });
    }
    await auditChanges(tx, ctx, tenantId, updateAudit(jobId, changes, { pausing, resuming }));
    const [updated] = await tx
      .select()
      .from(jobs)
      .where(and(ofTenant(jobs, tenantId), eq(jobs.id, jobId)));
    return updated!;
  });
}

/**
 * The audit entries of an update: `job.paused` or `job.resumed` when its status changed that way, and `job.updated`
 * (`job.replaced` for a PUT by key) naming the other fields it set, never their values.
 */
function updateAudit(jobId: string, changes: JobChanges, moved: { pausing: boolean; resuming: boolean }): AuditChange[] {
  const target = { type: 'job', id: jobId };
  const entries: AuditChange[] = [];
  if (moved.pausing) entries.push({ action: 'job.paused', target });
  if (moved.resuming) entries.push({ action: 'job.resumed', target });
  const fields = Object.keys(changes)
    .filter((k) => k !== 'paused' && k !== 'replace' && changes[k as keyof JobChanges] !== undefined)
    .sort();
  if (changes.replace) entries.push({ action: 'job.replaced', target, changes: fields });
  else if (fields.length > 0) entries.push({ action: 'job.updated', target, changes: fields });
  return entries;
}

/** A job to re-plan from now (`replanJobs`): its schedule, and its jitter in ms. */
export type Replan = { tenantId: string; jobId: string; schedule: JobSpec['schedule']; jitterMs: number };

/**
 * Re-plans jobs from `nowMs` (epoch ms), as a resume or a schedule change does: each job's first occurrence at or after
 * now becomes its one pending scheduled run (`planNextRuns`), and the job becomes `active` with that `nextRunAt`, or
 * `completed` when none is left, its `pausedReason` cleared. A job that becomes `completed` here (a resume after its
 * last occurrence went by) gets its `job.completed` event in the same transaction (docs/design.md invariant 11), as one
 * completed by a claim does. A fixed number of statements however many jobs (a bulk resume passes up to 10,000). Run
 * it in the caller's transaction with the jobs locked (`FOR UPDATE`).
 * @param opts.resetFailures also zero `consecutiveFailures` (a resume starts the count afresh)
 */
export async function replanJobs(
  tx: Executor,
  list: readonly Replan[],
  nowMs: number,
  opts: { resetFailures?: boolean } = {},
): Promise<void> {
  if (list.length === 0) return;
  const plans = list.map((j) => ({
    tenantId: j.tenantId,
    jobId: j.jobId,
    nextMs: nextOccurrence(j.schedule, nowMs - 1),
    jitterMs: j.jitterMs,
  }));
  // Read before the update below: only a change into `completed` is an event (a job already completed whose jitter
  // changes stays so, silently). The jobs are locked, so the status read is the one the update replaces.
  const ending = plans.filter((p) => p.nextMs === null);
  const completing: { id: string; tenantId: string }[] = [];
  if (ending.length > 0) {
    const shards = [...new Set(ending.map((p) => shardOf(p.tenantId)))];
    const ids = ending.map((p) => p.jobId);
    completing.push(
      ...(await tx
        .select({ id: jobs.id, tenantId: jobs.tenantId })
        .from(jobs)
        .where(and(inArray(jobs.shard, shards), inArray(jobs.id, ids), ne(jobs.status, JOB_STATUS.completed)))),
    );
  }
  await planNextRuns(tx, plans, nowMs);
  const rows = JSON.stringify(
    plans.map((p) => ({
      shard: shardOf(p.tenantId),
      id: p.jobId,
      tenant_id: p.tenantId,
      next_at: p.nextMs === null ? null : new Date(p.nextMs).toISOString(),
    })),
  );
  await tx.execute(sql`update jobs j
    set status = case when v.next_at is null then ${JOB_STATUS.completed} else ${JOB_STATUS.active} end, paused_reason = null,
        next_run_at = v.next_at, updated_at = ${new Date(nowMs).toISOString()}::timestamptz
        ${opts.resetFailures ? sql`, consecutive_failures = 0` : sql``}
    from jsonb_to_recordset(${rows}::jsonb) as v(shard smallint, id uuid, tenant_id uuid, next_at timestamptz)
    where j.shard = v.shard and j.id = v.id and j.tenant_id = v.tenant_id`);
  // After the update, so the events show the jobs completed.
  await recordEvents(
    tx,
    completing.map((j) => ({ type: 'job.completed', tenantId: j.tenantId, jobId: j.id })),
    nowMs,
  );
}

/** A job's next occurrence (`nextMs`, epoch ms; null: none left) with its jitter in ms, for `planNextRuns`. */
export type PlannedRun = { tenantId: string; jobId: string; nextMs: number | null; jitterMs: number };

/**
 * Makes each plan's `nextMs` its job's one pending scheduled occurrence: the job's other pending scheduled runs are
 * canceled, and the occurrence is inserted, or revived if an earlier pause or change had canceled it (the unique
 * `(job_id, scheduled_for)` row is reused rather than lost). Three statements and at most one NOTIFY, whatever the
 * number of plans (one job each).
 */
export async function planNextRuns(tx: Executor, plans: readonly PlannedRun[], nowMs: number): Promise<void> {
  if (plans.length === 0) return;
  const nowIso = new Date(nowMs).toISOString();
  const due: number[] = [];
  const rows = plans.map((p) => {
    const dueMs = p.nextMs === null ? null : p.nextMs + jitterOffsetMs(p.jobId, p.jitterMs);
    if (dueMs !== null) due.push(dueMs);
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    return { shard: shardOf(p.tenantId), id: newId(), tenant_id: p.tenantId, job_id: p.jobId, next_at: iso(p.nextMs), due_at: iso(dueMs) };
  });
  const json = JSON.stringify(rows);
  // Times travel as ISO text (exact to the ms), not epoch numbers: `is distinct from` compares them with stored values.
  await tx.execute(sql`update runs r set status = 'canceled', finished_at = ${nowIso}::timestamptz, next_attempt_at = null,
      error = 'superseded by a schedule change'
    from jsonb_to_recordset(${json}::jsonb) as v(shard smallint, job_id uuid, tenant_id uuid, next_at timestamptz)
    where r.shard = v.shard and r.job_id = v.job_id and r.tenant_id = v.tenant_id and r.status = 'scheduled' and r.trigger = 'schedule'
      and r.scheduled_for is distinct from v.next_at`);
  if (due.length === 0) return;
  await tx.execute(sql`insert into runs (shard, id, tenant_id, job_id, scheduled_for, trigger, status, next_attempt_at, created_at)
    select v.shard, v.id, v.tenant_id, v.job_id, v.next_at, 'schedule', 'scheduled', v.due_at, ${nowIso}::timestamptz
    from jsonb_to_recordset(${json}::jsonb) as v(shard smallint, id uuid, tenant_id uuid, job_id uuid, next_at timestamptz, due_at timestamptz)
    where v.next_at is not null
    on conflict (shard, job_id, scheduled_for) where trigger = 'schedule'
    do update set status = 'scheduled', next_attempt_at = excluded.next_attempt_at, error = null, finished_at = null,
                  attempts = 0, started_at = null
    where runs.status in ('scheduled', 'canceled')`);
  await announceRun(tx, Math.min(...due), nowMs);
}

/**
 * Cancels a job: status `canceled`, its waiting runs (`scheduled`, `retrying`) canceled; running ones finish.
 * History is kept. Canceling twice is not an error.
 * @returns false when the tenant has no such job
 */
export async function cancelJob(ctx: StoreContext, tenantId: string, jobId: string): Promise<boolean> {
  return (ctx.db as Db).transaction(async (tx) => {
    const job = await lockJob(tx, tenantId, jobId);
    if (!job) return false;
    await cancelJobs(tx, tenantId, [jobId], ctx.clock.now());
    if (job.status !== JOB_STATUS.canceled)
      await auditChanges(tx, ctx, tenantId, [{ action: 'job.canceled', target: { type: 'job', id: jobId } }]);
    return true;
  });
}

/**
 * Cancels jobs of one tenant, as `DELETE /v1/jobs/:jobId` does each: status `canceled`, no `nextRunAt`, their waiting
 * runs (`scheduled`, `retrying`) canceled; running ones finish. Two statements however many jobs (a bulk cancel passes
 * up to 10,000). Run it in the caller's transaction with the jobs locked (`FOR UPDATE`).
 * @param nowMs the cancel's time, epoch ms: the jobs' `updatedAt` and the runs' `finishedAt`
 */
export async function cancelJobs(tx: Executor, tenantId: string, jobIds: readonly string[], nowMs: number): Promise<void> {
  if (jobIds.length === 0) return;
  const now = new Date(nowMs);
  const ids = uuidArray(jobIds);
  await tx
    .update(jobs)
    .set({ status: JOB_STATUS.canceled, nextRunAt: null, updatedAt: now })
    .where(and(ofTenant(jobs, tenantId), sql`${jobs.id} = any(${ids}::uuid[])`));
  await tx
    .update(runs)
    .set({ status: RUN_STATUS.canceled, finishedAt: now, nextAttemptAt: null, error: 'job canceled' })
    .where(
      and(
        ofTenant(runs, tenantId),
        sql`${runs.jobId} = any(${ids}::uuid[])`,
        inArray(runs.status, [RUN_STATUS.scheduled, RUN_STATUS.retrying]),
        // A result delivery reports a run that already ended: it is owed (at least once) whatever becomes of the job.
        ne(runs.trigger, RUN_TRIGGER.result),
      ),
    );
}

/**
 * Ids as one PostgreSQL array literal (`{a,b}`), for `= any($1::uuid[])`: one parameter however many ids, where
 * `inArray` binds one each (10,000 in a bulk action). The ids must be UUIDs (they come from rows or validated input).
 */
export function uuidArray(ids: readonly string[]): string {
  return `{${ids.join(',')}}`;
}

/**
 * Creates a run due now outside the schedule (`manual`, also for a paused job; `replay` of a dead letter).
 * @returns the run id, or null when the tenant has no such job
 * @throws JobStateError for a canceled job
 */
export async function triggerRun(
  ctx: StoreContext,
  tenantId: string,
  jobId: string,
  trigger: RunTrigger = RUN_TRIGGER.manual,
  replayOf?: string,
): Promise<string | null> {
  return (ctx.db as Db).transaction((tx) => insertTriggeredRun(tx, ctx.clock.now(), tenantId, jobId, trigger, replayOf, ctx.source));
}

/**
 * `triggerRun` inside the caller's transaction `tx` (which `Idempotency-Key` shares), at `nowMs` (epoch ms).
 * @param replayOf the run this one replays: when it is a dead letter of the tenant it is dismissed in the same
 *   transaction, as a bulk replay dismisses each (no longer listed, never replayed twice by a later bulk call)
 * @param source who asked: the audit entry (`job.triggered`, or `run.replayed` naming `replayOf`) is written with it
 * @returns the new run's id, or null when the tenant has no such job
 * @throws JobStateError when the job is canceled
 */
export async function insertTriggeredRun(
  tx: Executor,
  nowMs: number,
  tenantId: string,
  jobId: string,
  trigger: RunTrigger,
  replayOf?: string,
  source?: ChangeSource,
): Promise<string | null> {
  const job = await lockJob(tx, tenantId, jobId);
  if (!job) return null;
  if (job.status === JOB_STATUS.canceled) throw new JobStateError('the job is canceled');
  const id = newId();
  await tx.insert(runs).values({
    shard: shardOf(tenantId),
    id,
    tenantId,
    jobId,
    scheduledFor: new Date(nowMs),
    trigger,
    status: RUN_STATUS.scheduled,
    nextAttemptAt: new Date(nowMs),
    createdAt: new Date(nowMs),
  });
  if (replayOf) {
    await tx
      .update(runs)
      .set({ dismissedAt: new Date(nowMs) })
      .where(and(deadLetterCondition(tenantId), eq(runs.id, replayOf)));
  }
  await announceRun(tx, nowMs, nowMs);
  const change: AuditChange = replayOf
    ? { action: 'run.replayed', target: { type: 'run', id: replayOf } }
    : { action: 'job.triggered', target: { type: 'job', id: jobId } };
  await recordAudit(tx, source, nowMs, [{ ...change, tenantId }]);
  return id;
}

/** A job a pause is for, and why (`manual`, `gone`, `consecutive_failures`). */
export type JobPause = { id: string; reason: PausedReason };

/**
 * Pauses the active jobs of `pauses` in bucket `shard` and cancels their pending `schedule` runs (docs/design.md run
 * states: `scheduled` → `canceled`); a paused, canceled or completed job is left as it is. For `PATCH { paused: true }`,
 * a bulk pause, and a finish or reap that pauses (a 410 Gone, `pauseAfterFailures`). Runs in the caller's transaction
 * (`tx` may be the database itself); both statements are sent together, under `plan` when given.
 * @param nowMs the pause's time (epoch ms): the jobs' `updated_at` and the canceled runs' `finished_at`
 * @returns the jobs it paused (those that were active), with their reason
 */
export async function pauseJobs(
  tx: Executor,
  shard: number,
  pauses: readonly JobPause[],
  nowMs: number,
  plan: PlannerSettings | null = null,
): Promise<{ id: string; tenant_id: string; paused_reason: string | null }[]> {
  const list = JSON.stringify(pauses);
  const nowIso = new Date(nowMs).toISOString();
  const [paused] = await pipelined(
    tx,
    plan,
    () =>
      query<{ id: string; tenant_id: string; paused_reason: string | null }>(
        tx,
        sql`update jobs j set status = 'paused', paused_reason = v.reason, next_run_at = null, updated_at = ${nowIso}::timestamptz
          from jsonb_to_recordset(${list}::jsonb) as v(id uuid, reason text)
          where j.shard = ${shard} and j.id = v.id and j.status = 'active'
          returning j.id, j.tenant_id, j.paused_reason`,
      ),
    () =>
      tx.execute(sql`update runs r set status = 'canceled', finished_at = ${nowIso}::timestamptz, next_attempt_at = null, error = 'job paused'
        from jsonb_to_recordset(${list}::jsonb) as v(id uuid, reason text)
        where r.shard = ${shard} and r.job_id = v.id and r.status = 'scheduled' and r.trigger = 'schedule'`),
  );
  return paused;
}
