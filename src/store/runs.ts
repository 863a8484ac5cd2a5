/** Runs and their attempt log, read side, scoped by tenant. */
import { and, asc, desc, eq, gte, lt, ne, type SQL, sql } from 'drizzle-orm';
import { RUN_TRIGGER, type RunStatus } from '../domain/states.ts';
import type { StoreContext } from './context.ts';
import type { Executor } from './db.ts';
import { page } from './paging.ts';
import { attempts, runs } from './schema.ts';
import { ofTenant } from './tenant-scope.ts';

export type RunRow = typeof runs.$inferSelect;
export type AttemptRow = typeof attempts.$inferSelect;

type ListOpts = { status?: RunStatus; limit: number; cursor?: string };

/**
 * A job's runs, newest first (the caller has checked the job belongs to the tenant): never its result deliveries
 * (`trigger = 'result'`, `listResultDeliveries`). A notification endpoint's hidden job lists its deliveries here.
 */
export function listRuns(
  ctx: StoreContext,
  tenantId: string,
  jobId: string,
  opts: ListOpts,
): Promise<{ items: RunRow[]; nextCursor: string | null }> {
  return jobRunsPage(ctx, tenantId, jobId, ne(runs.trigger, RUN_TRIGGER.result), opts);
}

/**
 * A job's result deliveries (`trigger = 'result'`: its runs' results posted to `onSuccess`/`onFailure`), newest first,
 * `limit` at a time after `cursor` (the caller has checked the job belongs to the tenant). Read on `runs_job_idx`.
 * @returns the page and the cursor of the next one (null at the end)
 */
export function listResultDeliveries(
  ctx: StoreContext,
  tenantId: string,
  jobId: string,
  opts: { limit: number; cursor?: string },
): Promise<{ items: RunRow[]; nextCursor: string | null }> {
  return jobRunsPage(ctx, tenantId, jobId, eq(runs.trigger, RUN_TRIGGER.result), opts);
}

/** A page of the job's runs matching `which` (and `opts.status`), newest first, after `opts.cursor`. */
async function jobRunsPage(
  ctx: StoreContext,
  tenantId: string,
  jobId: string,
  which: SQL,
  opts: ListOpts,
): Promise<{ items: RunRow[]; nextCursor: string | null }> {
  const rows = await ctx.db
    .select()
    .from(runs)
    .where(
      and(
        ofTenant(runs, tenantId),
        eq(runs.jobId, jobId),
        which,
        opts.status ? eq(runs.status, opts.status) : undefined,
        opts.cursor ? lt(runs.id, opts.cursor) : undefined,
      ),
    )
    .orderBy(desc(runs.id))
    .limit(opts.limit + 1);
  return page(rows, opts.limit);
}

/** What the tenant-wide runs feed (`GET /v1/runs`) asks for; every given part must match. */
export type TenantRunsOptions = ListOpts & {
  /** Only this job's runs (the caller has checked it is a UUID; another tenant's job simply matches nothing). */
  jobId?: string;
  /** Runs scheduled at or after this instant (inclusive). */
  since?: Date;
  /** Runs scheduled before this instant (exclusive). */
  until?: Date;
};

/**
 * The statement `listTenantRuns` sends (not yet run), for tests that EXPLAIN it: the tenant's runs, never a
 * notification's delivery (those belong to hidden jobs), newest first (ids are UUID v7), `limit + 1` rows.
 * Served by `runs_tenant_idx` (tenant_id, id) walked backwards, or by `runs_job_idx` with `jobId`; `since`/`until`
 * and `status` filter along the way (no index of their own: each would cost every run's insert on the hot path).
 */
export function tenantRunsQuery(db: Executor, tenantId: string, opts: TenantRunsOptions) {
  return db
    .select()
    .from(runs)
    .where(
      and(
        ofTenant(runs, tenantId),
        ne(runs.trigger, 'notification'),
        ne(runs.trigger, RUN_TRIGGER.result),
        opts.jobId ? eq(runs.jobId, opts.jobId) : undefined,
        opts.status ? eq(runs.status, opts.status) : undefined,
        opts.since ? gte(runs.scheduledFor, opts.since) : undefined,
        opts.until ? lt(runs.scheduledFor, opts.until) : undefined,
        opts.cursor ? lt(runs.id, opts.cursor) : undefined,
      ),
    )
    .orderBy(desc(runs.id))
    .limit(opts.limit + 1);
}

/**
 * Every run of the tenant's jobs matching `opts`, newest first, `limit` at a time after `cursor` (the last run id of
 * the previous page).
 * @returns the page and the cursor of the next one (null at the end)
 */
export async function listTenantRuns(
  ctx: StoreContext,
  tenantId: string,
  opts: TenantRunsOptions,
): Promise<{ items: RunRow[]; nextCursor: string | null }> {
  return page(await tenantRunsQuery(ctx.db, tenantId, opts), opts.limit);
}

/**
 * A dead letter of the tenant: a run that ended `failed`, not dismissed, and not a notification's delivery (the
 * generated column `dead_letter`, the predicate of the partial index `runs_tenant_dead_idx`, so lists read it in order).
 */
export function deadLetterCondition(tenantId: string): SQL {
  // Not a result delivery either (its failure is not the job's): a condition beside the index's predicate, which still serves.
  return and(ofTenant(runs, tenantId), sql`${runs.deadLetter}`, ne(runs.trigger, RUN_TRIGGER.result))!;
}

/**
 * The statement `listDeadLetters` sends (not yet run), for tests that EXPLAIN it: the tenant's dead letters
 * (`deadLetterCondition`) below `cursor`, newest first, `limit + 1` rows, read in order from `runs_tenant_dead_idx`.
 */
export function deadLettersQuery(db: Executor, tenantId: string, opts: Omit<ListOpts, 'status'>) {
  return db
    .select()
    .from(runs)
    .where(and(deadLetterCondition(tenantId), opts.cursor ? lt(runs.id, opts.cursor) : undefined))
    .orderBy(desc(runs.id))
    .limit(opts.limit + 1);
}

/** The tenant's dead letters (`deadLetterCondition`), newest first, `limit` at a time after `cursor`. */
export async function listDeadLetters(
  ctx: StoreContext,
  tenantId: string,
  opts: Omit<ListOpts, 'status'>,
): Promise<{ items: RunRow[]; nextCursor: string | null }> {
  return page(await deadLettersQuery(ctx.db, tenantId, opts), opts.limit);
}

/** A run of the tenant with its attempts in order, or null (also for another tenant's run or a notification's delivery). */
export async function getRun(ctx: StoreContext, tenantId: string, runId: string): Promise<{ run: RunRow; attempts: AttemptRow[] } | null> {
  // A notification's delivery is not the tenant's run (its history is the endpoint's deliveries).
  const [run] = await ctx.db
    .select()
    .from(runs)
    .where(and(ofTenant(runs, tenantId), eq(runs.id, runId), ne(runs.trigger, 'notification'), ne(runs.trigger, RUN_TRIGGER.result)));
  if (!run) return null;
  const log = await ctx.db
    .select()
    .from(attempts)
    .where(and(eq(attempts.shard, run.shard), eq(attempts.runId, runId)))
    .orderBy(asc(attempts.attempt));
  return { run, attempts: log };
}
