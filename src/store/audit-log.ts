/**
 * The audit log (API.md "Access control and audit"): entries are written by the store function that makes the change,
 * in its transaction or its one statement, so an entry exists exactly when its change does (docs/design.md invariant
 * 11); read newest first by `GET /v1/audit-log`; pruned after the retention (`pruneAuditLog`).
 */
import { and, desc, eq, gte, lt, type SQL, sql } from 'drizzle-orm';
import type { AuditAction, AuditActor, AuditChange, ChangeSource } from '../domain/audit.ts';
import { newId, uuidV7LowerBound } from '../domain/ids.ts';
import { SHARD_COUNT, shardOf } from '../domain/shard.ts';
import type { StoreContext } from './context.ts';
import { type Db, type Executor, query } from './db.ts';
import { page } from './paging.ts';
import { auditLog } from './schema.ts';
import { ofTenant } from './tenant-scope.ts';

export type AuditRow = typeof auditLog.$inferSelect;

/** A change of one tenant to record (`AuditChange` with its tenant). */
export type AuditSeed = AuditChange & { tenantId: string };

/**
 * The rows of `seeds` (of one bucket) made by `source` at `nowMs` (epoch ms) as one JSON array, for a statement that
 * inserts them itself (`auditInsert`); null when there is nothing to write (no seeds, or no source: a change no request or system
 * rule made, as in the CLI's and tests' direct calls).
 */
export function auditRowsJson(source: ChangeSource | undefined, nowMs: number, seeds: readonly AuditSeed[]): string | null {
  if (!source || seeds.length === 0) return null;
  const at = new Date(nowMs).toISOString();
  const actor = actorColumns(source.actor);
  return JSON.stringify(
    seeds.map((s) => ({
      id: newId(),
      tenant_id: s.tenantId,
      at,
      ...actor,
      action: s.action,
      target_type: s.target.type,
      target_id: s.target.id,
      request_id: source.requestId,
      changes: s.changes && s.changes.length > 0 ? [...s.changes] : null,
    })),
  );
}

function actorColumns(actor: AuditActor): { actor_type: string; key_id: string | null; key_prefix: string | null; reason: string | null } {
  if (actor.type === 'api_key') return { actor_type: actor.type, key_id: actor.keyId, key_prefix: actor.prefix, reason: null };
  if (actor.type === 'system') return { actor_type: actor.type, key_id: null, key_prefix: null, reason: actor.reason };
  return { actor_type: actor.type, key_id: null, key_prefix: null, reason: null };
}

/**
 * The INSERT of `auditRowsJson`'s rows, all of bucket `shard`, to run as a statement or as a CTE of a statement that
 * makes the change (the registration path writes its jobs, their runs and their entries in one statement). The bucket
 * is a constant, as in the other inserts, so that Citus routes the statement to one shard.
 */
export function auditInsert(rowsJson: string, shard: number): SQL {
  return sql`insert into audit_log (shard, id, tenant_id, at, actor_type, key_id, key_prefix, reason, action, target_type,
                                    target_id, request_id, changes)
    select ${shard}::smallint, v.id, v.tenant_id, v.at, v.actor_type, v.key_id, v.key_prefix, v.reason, v.action, v.target_type,
           v.target_id, v.request_id,
           case when v.changes is not null then array(select jsonb_array_elements_text(v.changes)) end
    from jsonb_to_recordset(${rowsJson}::jsonb) as v(id uuid, tenant_id uuid, at timestamptz, actor_type text,
         key_id uuid, key_prefix text, reason text, action text, target_type text, target_id text, request_id text, changes jsonb)`;
}

/**
 * Records `seeds` as made by `source`, in the caller's transaction `tx`: one statement per bucket of their tenants
 * (nothing without a source).
 * @param nowMs the change's time, epoch ms
 */
export async function recordAudit(
  tx: Executor,
  source: ChangeSource | undefined,
  nowMs: number,
  seeds: readonly AuditSeed[],
): Promise<void> {
  if (!source) return;
  const byShard = new Map<number, AuditSeed[]>();
  for (const s of seeds) {
    const shard = shardOf(s.tenantId);
    const list = byShard.get(shard);
    if (list) list.push(s);
    else byShard.set(shard, [s]);
  }
  for (const [shard, list] of byShard) {
    const json = auditRowsJson(source, nowMs, list);
    if (json) await tx.execute(auditInsert(json, shard));
  }
}

/**
 * `recordAudit` for changes of one tenant by `ctx.source`, at the store clock's now: what a store function that makes
 * one tenant's change calls inside its transaction.
 */
export function auditChanges(tx: Executor, ctx: StoreContext, tenantId: string, changes: readonly AuditChange[]): Promise<void> {
  return recordAudit(
    tx,
    ctx.source,
    ctx.clock.now(),
    changes.map((c) => ({ ...c, tenantId })),
  );
}

/** What `GET /v1/audit-log` filters by; every given part must match. */
export type AuditLogOptions = {
  action?: AuditAction;
  /** Entries made with this API key. */
  keyId?: string;
  /** Entries at or after this instant (inclusive). */
  since?: Date;
  /** Entries before this instant (exclusive). */
  until?: Date;
  limit: number;
  /** The last entry id of the previous page. */
  cursor?: string;
};

/**
 * The tenant's audit entries, newest first (ids are UUID v7), `limit` at a time after `cursor`, through
 * `audit_log_tenant_idx` walked backwards, the filters applied along the way.
 * @returns the page and the cursor of the next one (null at the end)
 */
export async function listAuditLog(
  ctx: StoreContext,
  tenantId: string,
  opts: AuditLogOptions,
): Promise<{ items: AuditRow[]; nextCursor: string | null }> {
  const rows = await ctx.db
    .select()
    .from(auditLog)
    .where(
      and(
        ofTenant(auditLog, tenantId),
        opts.action ? eq(auditLog.action, opts.action) : undefined,
        opts.keyId ? eq(auditLog.keyId, opts.keyId) : undefined,
        opts.since ? gte(auditLog.at, opts.since) : undefined,
        opts.until ? lt(auditLog.at, opts.until) : undefined,
        opts.cursor ? lt(auditLog.id, opts.cursor) : undefined,
      ),
    )
    .orderBy(desc(auditLog.id))
    .limit(opts.limit + 1);
  return page(rows, opts.limit);
}

/**
 * Deletes up to `limit` audit entries older than `cutoffMs` (epoch ms), bucket by bucket on the primary key (an
 * entry's v7 id is below the cutoff's exactly when it was made before it). Rows locked elsewhere are skipped.
 * @returns how many were deleted; call again while it returns `limit`
 */
export async function pruneAuditLog(db: Db, cutoffMs: number, limit: number): Promise<number> {
  const bound = uuidV7LowerBound(cutoffMs);
  let deleted = 0;
  for (let shard = 0; shard < SHARD_COUNT && deleted < limit; shard++) {
    const rows = await query<{ id: string }>(
      db,
      sql`delete from audit_log where shard = ${shard} and id in (
            select id from audit_log where shard = ${shard} and id < ${bound}::uuid order by id limit ${limit - deleted} for update skip locked)
          returning id`,
    );
    deleted += rows.length;
  }
  return deleted;
}
