/** Runs and their attempt log, read side, scoped by tenant. */
import { and, asc, desc, eq, isNull, lt, ne, type SQL } from 'drizzle-orm';
import { RUN_STATUS, type RunStatus } from '../domain/states.ts';
import type { StoreContext } from './context.ts';
import { page } from './jobs.ts';
import { attempts, runs } from './schema.ts';

export type RunRow = typeof runs.$inferSelect;
export type AttemptRow = typeof attempts.$inferSelect;

type ListOpts = { status?: RunStatus; limit: number; cursor?: string };

/** A job's runs, newest first (the caller has checked the job belongs to the tenant). */
export async function listRuns(
  ctx: StoreContext,
  tenantId: string,
  jobId: string,
  opts: ListOpts,
): Promise<{ items: RunRow[]; nextCursor: string | null }> {
  const rows = await ctx.db
    .select()
    .from(runs)
    .where(
      and(
        eq(runs.tenantId, tenantId),
        eq(runs.jobId, jobId),
        opts.status ? eq(runs.status, opts.status) : undefined,
        opts.cursor ? lt(runs.id, opts.cursor) : undefined,
      ),
    )
    .orderBy(desc(runs.id))
    .limit(opts.limit + 1);
  return page(rows, opts.limit);
}

/**
 * A dead letter of the tenant: a run that ended `failed`, not dismissed, and not a notification's delivery (the
 * predicate of the partial index `runs_tenant_dead_idx`, so lists read it in order).
 */
export function deadLetterCondition(tenantId: string): SQL {
  return and(eq(runs.tenantId, tenantId), eq(runs.status, RUN_STATUS.failed), isNull(runs.dismissedAt), ne(runs.trigger, 'notification'))!;
}

/** The tenant's dead letters (`deadLetterCondition`), newest first. */
export async function listDeadLetters(
  ctx: StoreContext,
  tenantId: string,
  opts: Omit<ListOpts, 'status'>,
): Promise<{ items: RunRow[]; nextCursor: string | null }> {
  const rows = await ctx.db
    .select()
    .from(runs)
    .where(and(deadLetterCondition(tenantId), opts.cursor ? lt(runs.id, opts.cursor) : undefined))
    .orderBy(desc(runs.id))
    .limit(opts.limit + 1);
  return page(rows, opts.limit);
}

/** A run of the tenant with its attempts in order, or null. */
export async function getRun(
  ctx: StoreContext,
  tenantId: string,
  runId: string,
): Promise<{ run: RunRow; attempts: AttemptRow[] } | null> {
  const [run] = await ctx.db.select().from(runs).where(and(eq(runs.tenantId, tenantId), eq(runs.id, runId)));
  if (!run) return null;
  const log = await ctx.db.select().from(attempts).where(eq(attempts.runId, runId)).orderBy(asc(attempts.attempt));
  return { run, attempts: log };
}
