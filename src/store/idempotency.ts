/**
 * `Idempotency-Key` for job registration (as in the IETF draft "The Idempotency-Key HTTP Header Field"): the first
 * request with a key creates the job; a repeat with the same body within `IDEMPOTENCY_TTL_MS` gets that job back; a
 * repeat with another body is a conflict. The key row is inserted in the same transaction as the job, so two
 * concurrent identical requests serialize on the unique index and only one job is made.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { JobSpec } from '../domain/job.ts';
import type { StoreContext } from './context.ts';
import type { Db } from './db.ts';
import { getJob, insertJob, type CreateJobOptions, type JobRow } from './jobs.ts';
import { idempotencyKeys } from './schema.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

export type IdempotentResult = { kind: 'created'; job: JobRow } | { kind: 'replayed'; job: JobRow } | { kind: 'mismatch' };

/**
 * Creates the job once per `(tenant, key)`.
 * @param requestHash a digest of the request body; a repeat must match it
 * @throws the driver's unique violation when the job's own `key` is taken (as `createJob`)
 * @throws QuotaExceededError past `opts.maxActiveJobs` (a replay is answered before the quota is looked at)
 */
export async function createJobIdempotently(
  ctx: StoreContext,
  tenantId: string,
  key: string,
  requestHash: string,
  spec: JobSpec,
  registeredAtMs: number,
  opts: CreateJobOptions = {},
): Promise<IdempotentResult> {
  const now = ctx.clock.now();
  return (ctx.db as Db).transaction(async (tx) => {
    // An expired key is forgotten first, so it can be used again.
    await tx.execute(sql`delete from idempotency_keys where tenant_id = ${tenantId} and key = ${key}
      and created_at < ${new Date(now - IDEMPOTENCY_TTL_MS).toISOString()}::timestamptz`);
    const claimed = await tx
      .insert(idempotencyKeys)
      .values({ tenantId, key, requestHash, createdAt: new Date(now) })
      .onConflictDoNothing()
      .returning({ key: idempotencyKeys.key });
    if (claimed.length === 0) {
      const [row] = await tx.select().from(idempotencyKeys).where(and(eq(idempotencyKeys.tenantId, tenantId), eq(idempotencyKeys.key, key)));
      if (!row || row.requestHash !== requestHash || !row.jobId) return { kind: 'mismatch' };
      const job = await getJob({ ...ctx, db: tx }, tenantId, row.jobId);
      return job ? { kind: 'replayed', job } : { kind: 'mismatch' };
    }
    const job = await insertJob({ ...ctx, db: tx }, tenantId, spec, registeredAtMs, opts);
    await tx.update(idempotencyKeys).set({ jobId: job.id }).where(and(eq(idempotencyKeys.tenantId, tenantId), eq(idempotencyKeys.key, key)));
    return { kind: 'created', job };
  });
}
