/**
 * Changing a job after registration: update (schedule, callback, …), pause, resume, cancel, trigger, replay.
 * Each is one transaction that locks the job row (`FOR UPDATE`), so a change and a dispatcher's claim of the same
 * job never interleave; pending runs are re-planned so that no occurrence is duplicated or lost.
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { JobSpec } from '../domain/job.ts';
import { nextOccurrence } from '../domain/schedule.ts';
import { JOB_STATUS, RUN_STATUS, RUN_TRIGGER, type RunTrigger } from '../domain/states.ts';
import { newId } from '../domain/ids.ts';
import { jitterOffsetMs } from '../domain/schedule.ts';
import type { StoreContext } from './context.ts';
import { announceRun, type Db, type Executor } from './db.ts';
import { assertActiveJobsRoom, type CreateJobOptions, type JobRow } from './jobs.ts';
import { jobs, runs } from './schema.ts';
import { pauseJobs } from './queue/finish-runs.ts';

/** Why a lifecycle change was refused. */
export class JobStateError extends Error {
  override name = 'JobStateError';
}

/** Fields of a job that an update may replace; `authToken`: undefined keeps it, null removes it. */
export type JobChanges = Partial<Omit<JobSpec, 'authToken' | 'key'>> & {
  authToken?: string | null;
  paused?: boolean;
  /** A replacement (PUT by key): a canceled or completed job becomes active again on its (new) schedule. */
  replace?: boolean;
};

async function lockJob(tx: Executor, tenantId: string, jobId: string): Promise<JobRow | null> {
  const [row] = await tx.select().from(jobs).where(and(eq(jobs.tenantId, tenantId), eq(jobs.id, jobId))).for('update');
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
  return (ctx.db as Db).transaction(async (tx) => {
    const job = await lockJob(tx, tenantId, jobId);
    if (!job) return null;
    if (job.status === JOB_STATUS.canceled && !changes.replace) throw new JobStateError('the job is canceled; register a new one');
    const finished = job.status === JOB_STATUS.canceled || job.status === JOB_STATUS.completed;
    if (changes.replace && finished) {
      await assertActiveJobsRoom({ db: tx, openJobs: ctx.openJobs }, tenantId, 1, opts.maxActiveJobs);
      ctx.openJobs?.added(tenantId, 1);
    }
    const now = ctx.clock.now();
    const nowIso = new Date(now).toISOString();
    const set: Partial<typeof jobs.$inferInsert> = { updatedAt: new Date(now) };
    if (changes.name !== undefined) set.name = changes.name;
    if (changes.schedule !== undefined) set.schedule = changes.schedule;
    if (changes.callback !== undefined) set.callback = changes.callback;
    if (changes.authToken !== undefined) set.authTokenEnc = changes.authToken === null ? null : await ctx.cipher.seal(changes.authToken);
    if (changes.payload !== undefined) set.payload = changes.payload;
    if (changes.retry !== undefined) set.retry = changes.retry;
    if (changes.relevancyWindowMs !== undefined) set.relevancyWindowMs = changes.relevancyWindowMs;
    if (changes.deliveryMode !== undefined) set.deliveryMode = changes.deliveryMode;
    if (changes.overlapPolicy !== undefined) set.overlapPolicy = changes.overlapPolicy;
    if (changes.catchUp !== undefined) set.catchUp = changes.catchUp;
    if (changes.jitterMs !== undefined) set.jitterMs = changes.jitterMs;
    if (changes.metadata !== undefined) set.metadata = changes.metadata;

    const pausing = changes.paused === true && job.status !== JOB_STATUS.paused;
    const resuming = changes.paused === false && job.status === JOB_STATUS.paused;
    const staysPaused = job.status === JOB_STATUS.paused && changes.paused !== false;
    const replan =
      resuming ||
      (!pausing && !staysPaused && (changes.replace === true || changes.schedule !== undefined || changes.jitterMs !== undefined));
    await tx.update(jobs).set(set).where(eq(jobs.id, jobId));
    if (pausing) {
      await pauseJobs(tx, JSON.stringify([{ id: jobId, reason: 'paused through the API' }]), nowIso);
    } else if (replan) {
      const schedule = (changes.schedule ?? job.schedule) as JobSpec['schedule'];
      const jitterMs = changes.jitterMs ?? job.jitterMs;
      const next = nextOccurrence(schedule, now - 1);
      await planNextRun(tx, { tenantId, jobId, nextMs: next, jitterMs, nowMs: now });
      await tx
        .update(jobs)
        .set({
          status: next === null ? JOB_STATUS.completed : JOB_STATUS.active,
          pausedReason: null,
          nextRunAt: next === null ? null : new Date(next),
        })
        .where(eq(jobs.id, jobId));
    }
    const [updated] = await tx.select().from(jobs).where(eq(jobs.id, jobId));
    return updated!;
  });
}

/**
 * Makes `nextMs` the job's one pending scheduled occurrence: other pending scheduled runs are canceled, and the
 * occurrence is inserted, or revived if an earlier pause or change had canceled it (the unique
 * `(job_id, scheduled_for)` row is reused rather than lost).
 */
export async function planNextRun(
  tx: Executor,
  p: { tenantId: string; jobId: string; nextMs: number | null; jitterMs: number; nowMs: number },
): Promise<void> {
  const nowIso = new Date(p.nowMs).toISOString();
  const nextIso = p.nextMs === null ? null : new Date(p.nextMs).toISOString();
  await tx.execute(sql`update runs set status = 'canceled', finished_at = ${nowIso}::timestamptz, next_attempt_at = null,
      error = 'superseded by a schedule change'
    where job_id = ${p.jobId} and status = 'scheduled' and trigger = 'schedule'
      and scheduled_for is distinct from ${nextIso}::timestamptz`);
  if (p.nextMs === null) return;
  const dueAt = new Date(p.nextMs + jitterOffsetMs(p.jobId, p.jitterMs)).toISOString();
  await tx.execute(sql`insert into runs (id, tenant_id, job_id, scheduled_for, trigger, status, next_attempt_at, created_at)
    values (${newId()}, ${p.tenantId}, ${p.jobId}, ${nextIso}::timestamptz, 'schedule', 'scheduled', ${dueAt}::timestamptz, ${nowIso}::timestamptz)
    on conflict (job_id, scheduled_for) where trigger = 'schedule'
    do update set status = 'scheduled', next_attempt_at = excluded.next_attempt_at, error = null, finished_at = null,
                  attempts = 0, started_at = null
    where runs.status in ('scheduled', 'canceled')`);
  await announceRun(tx, Date.parse(dueAt), p.nowMs);
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
    const now = new Date(ctx.clock.now());
    await tx.update(jobs).set({ status: JOB_STATUS.canceled, nextRunAt: null, updatedAt: now }).where(eq(jobs.id, jobId));
    await tx
      .update(runs)
      .set({ status: RUN_STATUS.canceled, finishedAt: now, nextAttemptAt: null, error: 'job canceled' })
      .where(and(eq(runs.jobId, jobId), inArray(runs.status, [RUN_STATUS.scheduled, RUN_STATUS.retrying])));
    return true;
  });
}

/**
 * Creates a run due now outside the schedule (`manual`, also for a paused job; `replay` of a dead letter).
 * @returns the run id, or null when the tenant has no such job
 * @throws JobStateError for a canceled job
 */
export async function triggerRun(ctx: StoreContext, tenantId: string, jobId: string, trigger: RunTrigger = RUN_TRIGGER.manual): Promise<string | null> {
  return (ctx.db as Db).transaction((tx) => insertTriggeredRun(tx, ctx.clock.now(), tenantId, jobId, trigger));
}

/**
 * `triggerRun` inside the caller's transaction `tx` (which `Idempotency-Key` shares), at `nowMs` (epoch ms).
 * @returns the new run's id, or null when the tenant has no such job
 * @throws JobStateError when the job is canceled
 */
export async function insertTriggeredRun(tx: Executor, nowMs: number, tenantId: string, jobId: string, trigger: RunTrigger): Promise<string | null> {
  const job = await lockJob(tx, tenantId, jobId);
  if (!job) return null;
  if (job.status === JOB_STATUS.canceled) throw new JobStateError('the job is canceled');
  const id = newId();
  await tx.insert(runs).values({
    id,
    tenantId,
    jobId,
    scheduledFor: new Date(nowMs),
    trigger,
    status: RUN_STATUS.scheduled,
    nextAttemptAt: new Date(nowMs),
    createdAt: new Date(nowMs),
  });
  await announceRun(tx, nowMs, nowMs);
  return id;
}
