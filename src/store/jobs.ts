/**
 * Jobs, scoped by tenant. Creating a job commits the job and its first run in one transaction before the API
 * answers `201` (DESIGN.md invariant 1), and announces the run on `RUNS_CHANNEL` so a sleeping dispatcher wakes.
 */
import { and, desc, eq, lt, sql, type SQL } from 'drizzle-orm';
import type { JobSpec } from '../domain/job.ts';
import { jitterOffsetMs, nextOccurrence } from '../domain/schedule.ts';
import { JOB_STATUS, RUN_STATUS, RUN_TRIGGER, type JobStatus } from '../domain/states.ts';
import type { StoreContext } from './context.ts';
import { RUNS_CHANNEL, type Db, type Executor } from './db.ts';
import { newId } from '../domain/ids.ts';
import { jobs, runs } from './schema.ts';

export type JobRow = typeof jobs.$inferSelect;

/** Scopes every job query by tenant: another tenant's id simply does not match. */
const ownJob = (tenantId: string, jobId: string): SQL => and(eq(jobs.tenantId, tenantId), eq(jobs.id, jobId))!;

/**
 * Creates a job and its first run, in one transaction.
 * @param spec a validated spec whose schedule is normalized and fires at least once after `registeredAtMs`
 * @param registeredAtMs the time (epoch ms) the spec was validated and normalized against: the first occurrence is
 *   the first at or after it, so a `delay: 0` or a `once` a few ms ahead is not lost to the time validation took
 * @throws the driver's unique-violation error (code 23505) when `spec.key` is taken in this tenant
 */
export async function createJob(ctx: StoreContext, tenantId: string, spec: JobSpec, registeredAtMs: number): Promise<JobRow> {
  return (ctx.db as Db).transaction((tx) => insertJob({ ...ctx, db: tx }, tenantId, spec, registeredAtMs));
}

/** `createJob` on an executor that is already inside a transaction. */
export async function insertJob(
  ctx: StoreContext,
  tenantId: string,
  spec: JobSpec,
  registeredAtMs: number,
): Promise<JobRow> {
  const [job] = await insertJobs(ctx, tenantId, [spec], registeredAtMs);
  return job!;
}

/**
 * Inserts many jobs and their first runs with one statement each (the batch route's hot path), then one NOTIFY.
 * Run inside a transaction: either all are committed or none.
 * @returns the jobs, in the order of `specs`
 */
export async function insertJobs(ctx: StoreContext, tenantId: string, specs: JobSpec[], registeredAtMs: number): Promise<JobRow[]> {
  if (specs.length === 0) return [];
  const now = ctx.clock.now();
  const from = Math.min(now, registeredAtMs) - 1;
  const jobRows: (typeof jobs.$inferInsert)[] = [];
  const runRows: (typeof runs.$inferInsert)[] = [];
  for (const spec of specs) {
    const id = newId();
    const first = nextOccurrence(spec.schedule, from);
    jobRows.push({
      id,
      tenantId,
      key: spec.key,
      name: spec.name,
      status: first === null ? JOB_STATUS.completed : JOB_STATUS.active,
      schedule: spec.schedule,
      callback: spec.callback,
      authTokenEnc: spec.authToken ? await ctx.cipher.seal(spec.authToken) : null,
      payload: spec.payload ?? null,
      retry: spec.retry,
      relevancyWindowMs: spec.relevancyWindowMs,
      deliveryMode: spec.deliveryMode,
      overlapPolicy: spec.overlapPolicy,
      catchUp: spec.catchUp,
      jitterMs: spec.jitterMs,
      metadata: spec.metadata,
      nextRunAt: first === null ? null : new Date(first),
      createdAt: new Date(now),
      updatedAt: new Date(now),
    });
    if (first !== null) {
      runRows.push({
        id: newId(),
        tenantId,
        jobId: id,
        scheduledFor: new Date(first),
        trigger: RUN_TRIGGER.schedule,
        status: RUN_STATUS.scheduled,
        nextAttemptAt: new Date(first + jitterOffsetMs(id, spec.jitterMs)),
        createdAt: new Date(now),
      });
    }
  }
  const inserted = await ctx.db.insert(jobs).values(jobRows).returning();
  if (runRows.length > 0) {
    await ctx.db.insert(runs).values(runRows);
    const soonest = Math.min(...runRows.map((r) => r.nextAttemptAt!.getTime()));
    await ctx.db.execute(sql`select pg_notify(${RUNS_CHANNEL}, ${String(soonest)})`);
  }
  return inserted;
}

/** The tenant's job, or null (also for another tenant's id). */
export async function getJob(ctx: StoreContext, tenantId: string, jobId: string): Promise<JobRow | null> {
  const [row] = await ctx.db.select().from(jobs).where(ownJob(tenantId, jobId));
  return row ?? null;
}

/** The tenant's job with this `key`, or null. */
export async function getJobByKey(ctx: StoreContext, tenantId: string, key: string): Promise<JobRow | null> {
  const [row] = await ctx.db.select().from(jobs).where(and(eq(jobs.tenantId, tenantId), eq(jobs.key, key)));
  return row ?? null;
}

/**
 * The tenant's jobs, newest first, `limit` at a time after the `cursor` (the last job id of the previous page).
 * @returns the page and the cursor of the next one (null at the end)
 */
export async function listJobs(
  ctx: StoreContext,
  tenantId: string,
  opts: { status?: JobStatus; limit: number; cursor?: string },
): Promise<{ items: JobRow[]; nextCursor: string | null }> {
  const rows = await ctx.db
    .select()
    .from(jobs)
    .where(
      and(
        eq(jobs.tenantId, tenantId),
        opts.status ? eq(jobs.status, opts.status) : undefined,
        opts.cursor ? lt(jobs.id, opts.cursor) : undefined,
      ),
    )
    .orderBy(desc(jobs.id))
    .limit(opts.limit + 1);
  return page(rows, opts.limit);
}

/** Splits `limit + 1` rows into a page and the cursor of the next (the last id shown). */
export function page<T extends { id: string }>(rows: T[], limit: number): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? items[items.length - 1]!.id : null };
}
