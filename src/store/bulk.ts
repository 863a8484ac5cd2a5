/**
 * Bulk actions of a tenant (API.md "Tenant operations"): dismissing a dead letter, replaying many dead letters, and
 * pausing, resuming or canceling many jobs. Each call is one transaction, and every statement names the tenant, so
 * nothing here can reach another tenant's rows whatever the ids it is given.
 *
 * Locks: a bulk action locks the jobs it changes in id order (`ORDER BY id … FOR UPDATE`), so two bulk actions, or a
 * bulk action and a single-job change (which locks its one job first too), wait for each other instead of
 * deadlocking. A replay locks its dead letters first (in id order), then their jobs: dead letters are final runs,
 * which no dispatcher locks, so this order never crosses a dispatcher's (runs it claims, then their jobs).
 */
import { and, asc, count, eq, gte, lt, type SQL, sql } from 'drizzle-orm';
import { PAUSED_REASON } from '../domain/events.ts';
import { newId } from '../domain/ids.ts';
import { shardOf } from '../domain/shard.ts';
import { JOB_STATUS, RUN_TRIGGER } from '../domain/states.ts';
import { auditChanges } from './audit-log.ts';
import type { StoreContext } from './context.ts';
import { announceRun, type Db, type Executor, query, transactionRetryingDeadlocks, uuidArray } from './db.ts';
import { type JobFilter, jobFilterCondition } from './job-filter.ts';
import { cancelJobs, pauseJobs, replanJobs } from './job-lifecycle.ts';
import { deadLetterCondition } from './runs.ts';
import { jobs, runs } from './schema.ts';
import { ofTenant } from './tenant-scope.ts';

/** Most dead letters one `replayDeadLetters` call replays. */
export const MAX_REPLAY_PER_CALL = 1_000;
/** Most jobs one `bulkJobAction` call may match. */
export const MAX_BULK_JOBS = 10_000;

/**
 * Dismisses a dead letter of the tenant (`DELETE /v1/dead-letters/:runId`): it is no longer a dead letter (not listed,
 * not replayed in bulk), its history is kept, and the run shows `dismissedAt`; with its audit entry, in one transaction.
 * @param runId a UUID (the caller checks the form)
 * @returns false when the tenant has no such dead letter (another tenant's run, a run that did not fail, one already
 *   dismissed, a notification's delivery)
 */
export async function dismissDeadLetter(ctx: StoreContext, tenantId: string, runId: string): Promise<boolean> {
  return (ctx.db as Db).transaction(async (tx) => {
    const rows = await tx
      .update(runs)
      .set({ dismissedAt: new Date(ctx.clock.now()) })
      .where(and(deadLetterCondition(tenantId), eq(runs.id, runId)))
      .returning({ id: runs.id });
    if (rows.length === 1) await auditChanges(tx, ctx, tenantId, [{ action: 'dead_letter.dismissed', target: { type: 'run', id: runId } }]);
    return rows.length === 1;
  });
}

/** Which dead letters a bulk replay means; every given part must match, none given means all of the tenant's. */
export type DeadLetterFilter = {
  /** These runs (UUIDs) only. */
  runIds?: readonly string[];
  /** Dead letters of this job (a UUID) only. */
  jobId?: string;
  /** Runs scheduled at or after this instant (inclusive). */
  since?: Date;
  /** Runs scheduled before this instant (exclusive). */
  until?: Date;
};

/**
 * The dead letters a bulk replay matches: the tenant's dead letters (`deadLetterCondition`) passing `filter`, whose job
 * is not canceled. A canceled job takes no new run (a single replay of one is refused with 409), so its dead letters
 * are left out of the match rather than skipped call after call: they stay listed, to be dismissed one by one, and do
 * not keep `remaining` above 0.
 */
function replayableCondition(tenantId: string, filter: DeadLetterFilter): SQL {
  return and(
    deadLetterCondition(tenantId),
    filter.runIds ? sql`${runs.id} = any(${uuidArray(filter.runIds)}::uuid[])` : undefined,
    filter.jobId ? eq(runs.jobId, filter.jobId) : undefined,
    filter.since ? gte(runs.scheduledFor, filter.since) : undefined,
    filter.until ? lt(runs.scheduledFor, filter.until) : undefined,
    sql`exists (select 1 from ${jobs} where ${ofTenant(jobs, tenantId)} and ${jobs.id} = ${runs.jobId} and ${jobs.status} <> ${JOB_STATUS.canceled})`,
  )!;
}

/** What a bulk replay did: the new runs, oldest dead letter's first, and how many matches are left for the next call. */
export type ReplayResult = { replayed: number; runIds: string[]; remaining: number };

/**
 * Replays the tenant's oldest `limit` dead letters matching `filter` (`POST /v1/dead-letters/replay`), in one
 * transaction: each gets a new run of its job due now with trigger `replay`, as `POST /v1/runs/:runId/replay` makes
 * (`insertTriggeredRun`), and is dismissed, so that no later call replays it again and `remaining` counts down to 0.
 * Set-based: a fixed number of statements (one insert for all the new runs, one NOTIFY) however many dead letters.
 * Concurrent calls over the same dead letters wait for each other (the dead letters are locked) and never replay one
 * twice.
 * @param opts.limit most dead letters replayed (default MAX_REPLAY_PER_CALL)
 * @returns the new run ids (in the order of their dead letters, oldest first) and the matches left after this call
 */
export async function replayDeadLetters(
  ctx: StoreContext,
  tenantId: string,
  filter: DeadLetterFilter,
  opts: { limit?: number } = {},
): Promise<ReplayResult> {
  const limit = opts.limit ?? MAX_REPLAY_PER_CALL;
  return (ctx.db as Db).transaction(async (tx) => {
    const nowMs = ctx.clock.now();
    const now = new Date(nowMs);
    const match = replayableCondition(tenantId, filter);
    // Oldest first: ids are UUID v7, and `runs_tenant_dead_idx` (tenant_id, id) serves the order and the limit.
    const letters = await tx
      .select({ id: runs.id, jobId: runs.jobId })
      .from(runs)
      .where(match)
      .orderBy(asc(runs.id))
      .limit(limit)
      .for('update', { of: runs });
    if (letters.length === 0) return { replayed: 0, runIds: [], remaining: 0 };

    // The jobs, locked as a single replay locks its job (a cancel of one of them waits, or went first). A job canceled
    // since the read above keeps its dead letters: they no longer match, so they count neither here nor in `remaining`.
    const jobIds = [...new Set(letters.map((l) => l.jobId))];
    const open = await query<{ id: string }>(
      tx,
      sql`select id from jobs where shard = ${shardOf(tenantId)} and tenant_id = ${tenantId} and id = any(${uuidArray(jobIds)}::uuid[]) and status <> ${JOB_STATUS.canceled}
          order by id for update`,
    );
    const openIds = new Set(open.map((j) => j.id));
    const replaying = letters.filter((l) => openIds.has(l.jobId)).map((l) => ({ dead_id: l.id, job_id: l.jobId, id: newId() }));

    if (replaying.length > 0) {
      // The row `insertTriggeredRun` writes, for every dead letter at once.
      await tx.execute(sql`insert into runs (shard, id, tenant_id, job_id, scheduled_for, trigger, status, next_attempt_at, created_at)
        select ${shardOf(tenantId)}::smallint, v.id, ${tenantId}, v.job_id, ${now.toISOString()}::timestamptz, ${RUN_TRIGGER.replay}, 'scheduled',
               ${now.toISOString()}::timestamptz, ${now.toISOString()}::timestamptz
        from jsonb_to_recordset(${JSON.stringify(replaying)}::jsonb) as v(id uuid, job_id uuid)`);
      await tx
        .update(runs)
        .set({ dismissedAt: now })
        .where(and(ofTenant(runs, tenantId), sql`${runs.id} = any(${uuidArray(replaying.map((r) => r.dead_id))}::uuid[])`));
      await announceRun(tx, nowMs, nowMs);
      await auditChanges(
        tx,
        ctx,
        tenantId,
        replaying.map((r) => ({ action: 'run.replayed', target: { type: 'run', id: r.dead_id } })),
      );
    }
    const [left] = await tx.select({ n: count() }).from(runs).where(match);
    return { replayed: replaying.length, runIds: replaying.map((r) => r.id), remaining: left!.n };
  });
}

/** What `POST /v1/jobs/bulk` does to each matching job. */
export type BulkJobAction = 'pause' | 'resume' | 'cancel';

/** A bulk action matched more jobs than one call may change; nothing was changed. */
export class BulkLimitError extends Error {
  override name = 'BulkLimitError';
  constructor(
    readonly matched: number,
    readonly max: number,
  ) {
    super(`the filter matches ${matched} jobs; at most ${max} per call`);
  }
}

/**
 * Pauses, resumes or cancels the tenant's jobs matching `filter` (`jobFilterCondition`: never another tenant's job or
 * a hidden notification job), in one transaction, each exactly as the single-job route does and through the same
 * set-based store code: `pause` as `PATCH { paused: true }` (active jobs become paused, reason `manual`, their pending
 * occurrence canceled: `pauseJobs`), `resume` as `PATCH { paused: false }` (paused jobs re-planned from now, active
 * or completed: `replanJobs`), `cancel` as `DELETE` (every job not yet canceled: `cancelJobs`). Jobs the action does
 * not apply to are matched but left untouched (not even `updatedAt`).
 * @param opts.maxJobs most jobs one call may match (default MAX_BULK_JOBS)
 * @returns `matched`: the jobs the filter matched; `changed`: those whose status the action changed
 * @throws BulkLimitError when more than `maxJobs` jobs match (nothing is changed, nothing locked)
 */
export async function bulkJobAction(
  ctx: StoreContext,
  tenantId: string,
  action: BulkJobAction,
  filter: JobFilter,
  opts: { maxJobs?: number } = {},
): Promise<{ matched: number; changed: number }> {
  const max = opts.maxJobs ?? MAX_BULK_JOBS;
  // Jobs first, then their runs (a pause cancels them): a claim's order is the other way round.
  return transactionRetryingDeadlocks(ctx.db as Db, async (tx) => {
    const where = jobFilterCondition(tenantId, filter);
    // Counted before anything is locked, so that an oversized filter costs a count, not 10,000 row locks.
    const [counted] = await tx.select({ n: count() }).from(jobs).where(where);
    if (counted!.n > max) throw new BulkLimitError(counted!.n, max);
    const locked = await tx
      .select({ id: jobs.id, status: jobs.status, schedule: jobs.schedule, jitterMs: jobs.jitterMs })
      .from(jobs)
      .where(where)
      .orderBy(asc(jobs.id))
      .for('update');
    // Jobs made between the count and the lock may push past the bound.
    if (locked.length > max) throw new BulkLimitError(locked.length, max);
    const nowMs = ctx.clock.now();
    const changed = await applyAction(tx, tenantId, action, locked, nowMs);
    await auditChanges(
      tx,
      ctx,
      tenantId,
      changed.map((id) => ({ action: 'jobs.bulk', target: { type: 'job', id }, changes: [BULK_CHANGE[action]] })),
    );
    return { matched: locked.length, changed: changed.length };
  });
}

type LockedJob = { id: string; status: string; schedule: unknown; jitterMs: number };

/** What a bulk action changes on each job it changes, as its audit entry names it (`jobs.bulk`). */
const BULK_CHANGE = { pause: 'paused', resume: 'paused', cancel: 'status' } as const satisfies Record<BulkJobAction, string>;

/** Applies `action` to `locked` jobs of the tenant at `nowMs`; returns the ids of those whose status it changed. */
async function applyAction(tx: Executor, tenantId: string, action: BulkJobAction, locked: LockedJob[], nowMs: number): Promise<string[]> {
  switch (action) {
    case 'pause': {
      const active = locked.filter((j) => j.status === JOB_STATUS.active);
      if (active.length === 0) return [];
      const paused = await pauseJobs(
        tx,
        shardOf(tenantId),
        active.map((j) => ({ id: j.id, reason: PAUSED_REASON.manual })),
        nowMs,
      );
      return paused.map((j) => j.id);
    }
    case 'resume': {
      const paused = locked.filter((j) => j.status === JOB_STATUS.paused);
      await replanJobs(
        tx,
        tenantId,
        paused.map((j) => j.id),
        nowMs,
        { resetFailures: true },
      );
      return paused.map((j) => j.id);
    }
    case 'cancel': {
      const open = locked.filter((j) => j.status !== JOB_STATUS.canceled).map((j) => j.id);
      await cancelJobs(tx, tenantId, open, nowMs);
      return open;
    }
  }
}
