/**
 * Retention: finished runs (with their attempts, in the same statement) and expired idempotency keys are deleted in
 * batches, bucket by bucket, so the tables the dispatcher and the API read stay small. Each batch is its own short
 * statement, so pruning never holds locks on many rows at once and never touches waiting or running runs.
 */
import { sql } from 'drizzle-orm';
import { uuidV7LowerBound } from '../domain/ids.ts';
import { SHARD_COUNT } from '../domain/shard.ts';
import { FINAL_RUN_STATUSES } from '../domain/states.ts';
import { type Db, query } from './db.ts';
import { IDEMPOTENCY_TTL_MS } from './idempotency.ts';

/** Most rows one pruning statement deletes. */
export const PRUNE_BATCH_DEFAULT = 5_000;

const finalStatuses = sql.raw(FINAL_RUN_STATUSES.map((s) => `'${s}'`).join(', '));

/**
 * Deletes up to `limit` runs in a final state that finished before `cutoffMs` (epoch ms), and their attempts, bucket
 * by bucket (each statement names one). Rows locked by another statement are skipped (the next pass takes them).
 * @returns how many runs were deleted; call again while it returns `limit`
 */
export async function pruneFinishedRuns(db: Db, cutoffMs: number, limit = PRUNE_BATCH_DEFAULT): Promise<number> {
  let deleted = 0;
  for (let shard = 0; shard < SHARD_COUNT && deleted < limit; shard++) deleted += await pruneShard(db, shard, cutoffMs, limit - deleted);
  return deleted;
}

async function pruneShard(db: Db, shard: number, cutoffMs: number, limit: number): Promise<number> {
  const cutoff = new Date(cutoffMs).toISOString();
  const [row] = await query<{ n: number | string }>(
    db,
    // A run that finished before the cutoff was created before it: its v7 id is below the cutoff's, so the scan walks
    // the primary key from the oldest rows instead of needing an index on finished_at (one less index to maintain on
    // every finish, the hot path). Attempts go in the same statement: no trigger or foreign key cascades (schema.ts).
    sql`with gone as (
          delete from runs where shard = ${shard} and id in (
            select id from runs where shard = ${shard} and id < ${uuidV7LowerBound(cutoffMs)}::uuid
              and status in (${finalStatuses}) and finished_at < ${cutoff}::timestamptz
            order by id limit ${limit} for update skip locked)
          returning id),
        attempts_gone as (delete from attempts a using gone g where a.shard = ${shard} and a.run_id = g.id)
        select count(*) as n from gone`,
  );
  return Number(row?.n ?? 0);
}

/** Deletes idempotency keys older than `IDEMPOTENCY_TTL_MS` (24 h) at `nowMs`, bucket by bucket. @returns how many */
export async function pruneIdempotencyKeys(db: Db, nowMs: number, limit = PRUNE_BATCH_DEFAULT): Promise<number> {
  const cutoff = new Date(nowMs - IDEMPOTENCY_TTL_MS).toISOString();
  let deleted = 0;
  for (let shard = 0; shard < SHARD_COUNT && deleted < limit; shard++) {
    const rows = await query<{ key: string }>(
      db,
      sql`delete from idempotency_keys where shard = ${shard} and ctid in (
            select ctid from idempotency_keys where shard = ${shard} and created_at < ${cutoff}::timestamptz limit ${limit - deleted})
          returning key`,
    );
    deleted += rows.length;
  }
  return deleted;
}
