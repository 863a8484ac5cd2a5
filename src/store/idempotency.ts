/**
 * `Idempotency-Key` (as in the IETF draft "The Idempotency-Key HTTP Header Field") for job registration, triggers and
 * replays: the first request with a key makes the job or run; a repeat of the same request within
 * `IDEMPOTENCY_TTL_MS` gets that one back; a repeat with another request is a conflict. The key row is inserted in
 * the same transaction as what it makes, so two concurrent identical requests serialize on the unique index and
 * only one is made.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { JobSpec } from '../domain/job.ts';
import { shardOf } from '../domain/shard.ts';
import type { RunTrigger } from '../domain/states.ts';
import type { StoreContext } from './context.ts';
import type { Db, Executor } from './db.ts';
import { insertTriggeredRun } from './job-lifecycle.ts';
import { type CreateJobOptions, createJob, getJob, type JobRow } from './jobs.ts';
import { idempotencyKeys } from './schema.ts';
import { ofTenant } from './tenant-scope.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

export type IdempotentResult = { kind: 'created'; job: JobRow } | { kind: 'replayed'; job: JobRow } | { kind: 'mismatch' };
/** The outcome of a trigger or replay under an `Idempotency-Key`: the run it made now, or the first request's. */
export type IdempotentRunResult = { kind: 'created' | 'replayed'; runId: string } | { kind: 'mismatch' } | { kind: 'not_found' };

type KeyRow = typeof idempotencyKeys.$inferSelect;

/**
 * Takes `(tenant, key)` inside `tx`, forgetting an expired use first. A concurrent first use of the same key holds
 * the unique index until it commits, so this waits and then sees its row.
 * @returns null when this request is the key's first use (the caller then records what it made with `recordUse`),
 *   else the row of the first use
 */
async function claimKey(tx: Executor, tenantId: string, key: string, requestHash: string, nowMs: number): Promise<KeyRow | null> {
  await tx.execute(sql`delete from idempotency_keys where shard = ${shardOf(tenantId)} and tenant_id = ${tenantId} and key = ${key}
    and created_at < ${new Date(nowMs - IDEMPOTENCY_TTL_MS).toISOString()}::timestamptz`);
  const claimed = await tx
    .insert(idempotencyKeys)
    .values({ shard: shardOf(tenantId), tenantId, key, requestHash, createdAt: new Date(nowMs) })
    .onConflictDoNothing()
    .returning({ key: idempotencyKeys.key });
  if (claimed.length > 0) return null;
  const [row] = await tx
    .select()
    .from(idempotencyKeys)
    .where(and(ofTenant(idempotencyKeys, tenantId), eq(idempotencyKeys.key, key)));
  // Deleted in between (retention): treat as another request's, which the caller answers as a conflict.
  return row ?? { shard: shardOf(tenantId), tenantId, key, requestHash: '', jobId: null, runId: null, createdAt: new Date(nowMs) };
}

function recordUse(tx: Executor, tenantId: string, key: string, made: { jobId: string } | { runId: string }) {
  return tx
    .update(idempotencyKeys)
    .set(made)
    .where(and(ofTenant(idempotencyKeys, tenantId), eq(idempotencyKeys.key, key)));
}

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
  return (ctx.db as Db).transaction(async (tx) => {
    const first = await claimKey(tx, tenantId, key, requestHash, ctx.clock.now());
    if (first) {
      if (first.requestHash !== requestHash || !first.jobId) return { kind: 'mismatch' };
      const job = await getJob({ ...ctx, db: tx }, tenantId, first.jobId);
      return job ? { kind: 'replayed', job } : { kind: 'mismatch' };
    }
    const job = await createJob({ ...ctx, db: tx }, tenantId, spec, registeredAtMs, opts);
    await recordUse(tx, tenantId, key, { jobId: job.id });
    return { kind: 'created', job };
  });
}

/**
 * Triggers (or replays into) a run of `jobId` once per `(tenant, key)`: a repeat within 24 h answers the first
 * request's run and makes none.
 * @param requestHash a digest of the request (method and path: which job or run it names); a repeat must match it
 * @throws JobStateError when the job is canceled (nothing is recorded for the key then)
 */
export async function triggerRunIdempotently(
  ctx: StoreContext,
  tenantId: string,
  key: string,
  requestHash: string,
  jobId: string,
  trigger: RunTrigger,
  replayOf?: string,
): Promise<IdempotentRunResult> {
  return (ctx.db as Db)
    .transaction(async (tx): Promise<IdempotentRunResult> => {
      const now = ctx.clock.now();
      const first = await claimKey(tx, tenantId, key, requestHash, now);
      if (first) return first.requestHash === requestHash && first.runId ? { kind: 'replayed', runId: first.runId } : { kind: 'mismatch' };
      const runId = await insertTriggeredRun(tx, now, tenantId, jobId, trigger, replayOf, ctx.source);
      // No such job: the key stays unused (the transaction is rolled back by the caller's 404).
      if (!runId) throw new NoSuchJob();
      await recordUse(tx, tenantId, key, { runId });
      return { kind: 'created', runId };
    })
    .catch((err: unknown): IdempotentRunResult => {
      if (err instanceof NoSuchJob) return { kind: 'not_found' };
      throw err;
    });
}

/** Rolls back a keyed trigger whose job is not the tenant's. */
class NoSuchJob extends Error {}
