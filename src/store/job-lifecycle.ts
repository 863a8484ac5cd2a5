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
import { planAfter } from '../domain/plan.ts';
import { shardOf } from '../domain/shard.ts';
import { JOB_STATUS, RUN_STATUS, RUN_TRIGGER, type RunTrigger } from '../domain/states.ts';
import { auditChanges, recordAudit } from './audit-log.ts';
import type { StoreContext } from './context.ts';
import {
  announceRun,
  type Db,
  type Executor,
  epochMs,
  type PlannerSettings,
  pipelined,
  query,
  transactionRetryingDeadlocks,
  uuidArray,
} from './db.ts';
import { assertActiveJobsRoom, type CreateJobOptions, type JobRow } from './jobs.ts';
import { recordEvents } from './notifications.ts';
import { syncOpenJobs } from './open-jobs.ts';
import { type PlanColumns, planColumns, planRuleOf } from './plan-columns.ts';
import { dueTimes } from './queue/spread-runs.ts';
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
    if (changes.calendar !== undefined) {
      set.calendarKey = changes.calendar?.key ?? null;
      set.calendarRoll = changes.calendar?.roll ?? null;
    }
    if (changes.maxRuns !== undefined) set.maxRuns = changes.maxRuns;
    if (changes.jitterMode !== undefined) set.jitterMode = changes.jitterMode;
    if (changes.then !== undefined) set.thenJobs = changes.then?.length ? changes.then : null;

    const pausing = changes.paused === true && job.status !== JOB_STATUS.paused;
    const resuming = changes.paused === false && job.status === JOB_STATUS.paused;
    const staysPaused = job.status === JOB_STATUS.paused && changes.paused !== false;
    const replan =
      resuming ||
      (!pausing &&
        !staysPaused &&
        (changes.replace === true ||
          changes.schedule !== undefined ||
          changes.jitterMs !== undefined ||
          changes.jitterMode !== undefined ||
          changes.calendar !== undefined ||
          changes.maxRuns !== undefined));
    await tx
      .update(jobs)
      .set(set)
      .where(and(ofTenant(jobs, tenantId), eq(jobs.id, jobId)));
    if (changes.overlapPolicy === 'allow' && job.overlapPolicy !== 'allow') {
      // Runs may overlap now: the runs waiting their turn (buffer-one's, a backfill's) go, none before its occurrence.
      await tx.execute(sql`update runs set next_attempt_at = greatest(${new Date(now).toISOString()}::timestamptz, scheduled_for)
        where shard = ${shardOf(tenantId)} and job_id = ${jobId} and buffer_waiting and next_attempt_at is null`);
    }
    if (pausing) {
      await pauseJobs(tx, shardOf(tenantId), [{ id: jobId, reason: PAUSED_REASON.manual }], now);
    } else if (replan) {
      // A resume starts the count of failures in a row afresh (API.md "pauseAfterFailures").
      await replanJobs(tx, tenantId, [jobId], now, { resetFailures: resuming });
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

/**
 * Re-plans jobs of one tenant, as a resume, a schedule change or a calendar change does: each job's first occurrence
 * after its bound (`afterMs` by job id, default `nowMs - 1`: the first at or after now) under its plan rule as stored
 * (schedule, calendar, jitter, `maxRuns`: src/domain/plan.ts) becomes its one pending scheduled run (`planNextRuns`),
 * and the job becomes `active` with that `nextRunAt`, or `completed` when none is left, its `pausedReason` cleared. A job
 * that becomes `completed` here (a resume after its last occurrence went by) gets its `job.completed` event in the same
 * transaction (docs/design.md invariant 11), as one completed by a claim does. A fixed number of statements however
 * many jobs (a bulk resume passes up to 10,000). Run it in the caller's transaction with the jobs locked (`FOR UPDATE`)
 * and any change of theirs already written.
 * @param opts.resetFailures also zero `consecutiveFailures` (a resume starts the count afresh)
 * @param opts.afterMs each job's bound (epoch ms), by job id; absent: `nowMs - 1`
 */
export async function replanJobs(
  tx: Executor,
  tenantId: string,
  jobIds: readonly string[],
  nowMs: number,
  opts: { resetFailures?: boolean; afterMs?: ReadonlyMap<string, number> } = {},
): Promise<void> {
  if (jobIds.length === 0) return;
  const shard = shardOf(tenantId);
  const rows = await planRows(tx, tenantId, jobIds);
  const planned = rows.map((r) => planAfter(planRuleOf(r.id, r), opts.afterMs?.get(r.id) ?? nowMs - 1));
  const keep = new Map(
    rows.flatMap((r) =>
      r.pending_at && r.pending_due ? [[r.id, { occurrenceMs: epochMs(r.pending_at), dueMs: epochMs(r.pending_due) }] as const] : [],
    ),
  );
  const withDue = planned.flatMap((p, i) => {
    const r = rows[i]!;
    return p === null
      ? []
      : [{ i, item: { tenantId, jobId: r.id, url: r.url, jitterMs: r.jitter_ms, jitterMode: r.jitter_mode, planned: p } }];
  });
  const due = await dueTimes(
    tx,
    shard,
    withDue.map((w) => w.item),
    keep,
  );
  const plans: PlannedOccurrence[] = rows.map((r) => ({ jobId: r.id, occurrenceMs: null, dueMs: null, firesAtMs: null }));
  withDue.forEach((w, n) => {
    const p = w.item.planned;
    // A spread run's placed due time is when the job fires, unless its calendar skips this occurrence.
    plans[w.i] = {
      jobId: w.item.jobId,
      occurrenceMs: p.occurrenceMs,
      dueMs: due[n]!,
      firesAtMs: p.firesAtMs === p.dueMs ? due[n]! : p.firesAtMs,
    };
  });
  // Only a change into `completed` is an event (a job already completed whose jitter changes stays so, silently). The
  // jobs are locked, so the status read is the one the update replaces.
  const completing = rows.filter((r, i) => plans[i]!.occurrenceMs === null && r.status !== JOB_STATUS.completed);
  await planNextRuns(tx, tenantId, plans, nowMs);
  const json = JSON.stringify(
    plans.map((p) => ({
      id: p.jobId,
      next_at: p.occurrenceMs === null ? null : iso(p.firesAtMs),
      completed: p.occurrenceMs === null,
    })),
  );
  await tx.execute(sql`update jobs j
    set status = case when v.completed then ${JOB_STATUS.completed} else ${JOB_STATUS.active} end, paused_reason = null,
        next_run_at = v.next_at, updated_at = ${new Date(nowMs).toISOString()}::timestamptz
        ${opts.resetFailures ? sql`, consecutive_failures = 0` : sql``}
    from jsonb_to_recordset(${json}::jsonb) as v(id uuid, next_at timestamptz, completed boolean)
    where j.shard = ${shard} and j.id = v.id and j.tenant_id = ${tenantId}`);
  // A re-plan completes jobs, and reopens completed or canceled ones (a replacement).
  await syncOpenJobs(
    tx,
    shard,
    rows.map((r) => r.id),
  );
  // After the update, so the events show the jobs completed.
  await recordEvents(
    tx,
    completing.map((j) => ({ type: 'job.completed', tenantId, jobId: j.id })),
    nowMs,
  );
}

const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());

/** A job's plan columns (`planRows`), its status, callback URL, and its pending scheduled run. */
type PlanRow = PlanColumns & {
  id: string;
  status: string;
  url: string;
  pending_at: Date | string | null;
  pending_due: Date | string | null;
};

/** The plan columns of the tenant's jobs `jobIds`, with their pending (not buffered) scheduled runs. */
function planRows(tx: Executor, tenantId: string, jobIds: readonly string[]): Promise<PlanRow[]> {
  const shard = shardOf(tenantId);
  return query<PlanRow>(
    tx,
    sql`select j.id, j.status, j.callback->>'url' as url, ${planColumns(shard)},
          p.scheduled_for as pending_at, p.next_attempt_at as pending_due
        from jobs j
        left join lateral (select r.scheduled_for, r.next_attempt_at from runs r
          where r.shard = ${shard} and r.job_id = j.id and r.status = 'scheduled' and r.trigger = 'schedule' and not r.buffered
          order by r.scheduled_for limit 1) p on true
        where j.shard = ${shard} and j.tenant_id = ${tenantId} and j.id = any(${uuidArray(jobIds)}::uuid[])`,
  );
}

/**
 * A job's next scheduled run for `planNextRuns`: its occurrence (`scheduled_for`) and due time, UTC epoch ms, and when
 * the job fires next (`nextRunAt`); all null when none is left.
 */
export type PlannedOccurrence = { jobId: string; occurrenceMs: number | null; dueMs: number | null; firesAtMs: number | null };

/**
 * Makes each plan's occurrence its job's one pending scheduled run: the job's other pending scheduled runs are
 * canceled (buffered ones too), and the occurrence is inserted, or revived if an earlier pause or change had canceled
 * it (the unique `(job_id, scheduled_for)` row is reused rather than lost). Three statements and at most one NOTIFY,
 * whatever the number of plans (one job each), all of tenant `tenantId`.
 */
export async function planNextRuns(tx: Executor, tenantId: string, plans: readonly PlannedOccurrence[], nowMs: number): Promise<void> {
  if (plans.length === 0) return;
  const shard = shardOf(tenantId);
  const nowIso = new Date(nowMs).toISOString();
  const due = plans.flatMap((p) => (p.dueMs === null ? [] : [p.dueMs]));
  const json = JSON.stringify(plans.map((p) => ({ id: newId(), job_id: p.jobId, next_at: iso(p.occurrenceMs), due_at: iso(p.dueMs) })));
  // Times travel as ISO text (exact to the ms), not epoch numbers: `is distinct from` compares them with stored values.
  await tx.execute(sql`update runs r set status = 'canceled', finished_at = ${nowIso}::timestamptz, next_attempt_at = null,
      error = 'superseded by a schedule change'
    from jsonb_to_recordset(${json}::jsonb) as v(job_id uuid, next_at timestamptz)
    where r.shard = ${shard} and r.job_id = v.job_id and r.tenant_id = ${tenantId} and r.status = 'scheduled' and r.trigger = 'schedule'
      and (r.scheduled_for is distinct from v.next_at or r.buffered)`);
  if (due.length === 0) return;
  await tx.execute(sql`insert into runs (shard, id, tenant_id, job_id, scheduled_for, trigger, status, next_attempt_at, created_at)
    select ${shard}::smallint, v.id, ${tenantId}::uuid, v.job_id, v.next_at, 'schedule', 'scheduled', v.due_at, ${nowIso}::timestamptz
    from jsonb_to_recordset(${json}::jsonb) as v(id uuid, job_id uuid, next_at timestamptz, due_at timestamptz)
    where v.next_at is not null
    on conflict (shard, job_id, scheduled_for) where trigger = 'schedule'
    do update set status = 'scheduled', next_attempt_at = excluded.next_attempt_at, error = null, finished_at = null,
                  attempts = 0, started_at = null, buffered = false
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
  await syncOpenJobs(tx, shardOf(tenantId), jobIds);
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
