/**
 * Flow controls, per tenant (API.md "Destination control"): create or replace, read with their state (`inFlight`:
 * runs holding a slot; `waiting`: runs due and held back), list, delete. The claim applies them
 * (src/store/queue/claim-flow-runs.ts); the arithmetic is src/domain/flow-control.ts. Every statement names the
 * tenant's bucket, and each change writes its audit entry in its own transaction (docs/design.md invariant 11).
 */
import { and, asc, eq, gt, sql } from 'drizzle-orm';
import type { FlowControlSpec } from '../domain/flow-control.ts';
import { newId } from '../domain/ids.ts';
import { shardOf } from '../domain/shard.ts';
import { auditChanges } from './audit-log.ts';
import type { StoreContext } from './context.ts';
import { type Db, type Executor, query, uuidArray } from './db.ts';
import { openJobsNaming } from './open-jobs.ts';
import { flowControls } from './schema.ts';
import { ofTenant } from './tenant-scope.ts';

/** A flow control as the API shows it; times are ISO 8601 UTC. */
export type FlowControlView = {
  key: string;
  rate: { limit: number; periodMs: number } | null;
  parallelism: number | null;
  paused: boolean;
  /** Runs of its jobs holding a lease now (a request in flight, or claimed to start within the lookahead). */
  inFlight: number;
  /** Runs of its jobs that are due and waiting (held back by it, or about to be claimed). */
  waiting: number;
  createdAt: string;
  updatedAt: string;
};

type FlowRow = typeof flowControls.$inferSelect;

/** A flow control is still named by open jobs of its tenant (`count` of them): it cannot be deleted. */
export class FlowControlInUseError extends Error {
  override name = 'FlowControlInUseError';
  constructor(readonly jobs: number) {
    super(`${jobs} job(s) name this flow control; change their flowControlKey first`);
  }
}

/**
 * Creates the tenant's flow control `key`, or replaces its settings (PUT semantics: what is absent is none; the rate's
 * log of recent starts is kept, so a replacement cannot open a burst).
 * @returns the flow control with its state, and whether it was created
 */
export async function putFlowControl(
  ctx: StoreContext,
  tenantId: string,
  key: string,
  spec: FlowControlSpec,
): Promise<{ flowControl: FlowControlView; created: boolean }> {
  const shard = shardOf(tenantId);
  const now = new Date(ctx.clock.now());
  const values = {
    rateLimit: spec.rate?.limit ?? null,
    ratePeriodMs: spec.rate?.periodMs ?? null,
    parallelism: spec.parallelism,
    paused: spec.paused,
    updatedAt: now,
  };
  return (ctx.db as Db).transaction(async (tx) => {
    const [before] = await tx
      .select()
      .from(flowControls)
      .where(and(ofTenant(flowControls, tenantId), eq(flowControls.key, key)))
      .for('update');
    let row: FlowRow;
    if (before) {
      [row] = (await tx
        .update(flowControls)
        .set(values)
        .where(and(eq(flowControls.shard, shard), eq(flowControls.id, before.id)))
        .returning()) as [FlowRow];
      const changes = changedFields(before, row);
      if (changes.length > 0) {
        await auditChanges(tx, ctx, tenantId, [{ action: 'flow_control.updated', target: { type: 'flow_control', id: key }, changes }]);
      }
    } else {
      // A concurrent creation of the same key makes this insert do nothing: that one's row is then updated as above.
      const inserted = await tx
        .insert(flowControls)
        .values({ shard, id: newId(), tenantId, key, ...values, createdAt: now })
        .onConflictDoNothing()
        .returning();
      if (inserted.length === 0) return putFlowControl({ ...ctx, db: tx }, tenantId, key, spec);
      row = inserted[0]!;
      await auditChanges(tx, ctx, tenantId, [{ action: 'flow_control.created', target: { type: 'flow_control', id: key } }]);
    }
    return { flowControl: await withState(tx, row, ctx.clock.now()), created: !before };
  });
}

/** The tenant's flow control `key` with its state, or null. */
export async function getFlowControl(ctx: StoreContext, tenantId: string, key: string): Promise<FlowControlView | null> {
  const [row] = await (ctx.db as Db)
    .select()
    .from(flowControls)
    .where(and(ofTenant(flowControls, tenantId), eq(flowControls.key, key)));
  return row ? withState(ctx.db, row, ctx.clock.now()) : null;
}

/**
 * The tenant's flow controls by key, `limit` per page after the key `cursor`.
 * @returns the page and the cursor of the next (null: none)
 */
export async function listFlowControls(
  ctx: StoreContext,
  tenantId: string,
  opts: { limit: number; cursor?: string },
): Promise<{ items: FlowControlView[]; nextCursor: string | null }> {
  const rows = await (ctx.db as Db)
    .select()
    .from(flowControls)
    .where(and(ofTenant(flowControls, tenantId), opts.cursor === undefined ? undefined : gt(flowControls.key, opts.cursor)))
    .orderBy(asc(flowControls.key))
    .limit(opts.limit + 1);
  const page = rows.slice(0, opts.limit);
  const states = await statesOf(ctx.db, tenantId, page, ctx.clock.now());
  const items = page.map((r) => view(r, states.get(r.id)));
  return { items, nextCursor: rows.length > opts.limit ? items[items.length - 1]!.key : null };
}

/**
 * Deletes the tenant's flow control `key`.
 * @returns false when there is none
 * @throws FlowControlInUseError while open jobs (active or paused) name it (nothing deleted)
 */
export async function deleteFlowControl(ctx: StoreContext, tenantId: string, key: string): Promise<boolean> {
  const shard = shardOf(tenantId);
  return (ctx.db as Db).transaction(async (tx) => {
    const [row] = await tx
      .select({ id: flowControls.id })
      .from(flowControls)
      .where(and(ofTenant(flowControls, tenantId), eq(flowControls.key, key)))
      .for('update');
    if (!row) return false;
    const naming = (await openJobsNaming(tx, tenantId, 'flow_control_key', [key])).get(key) ?? 0;
    if (naming > 0) throw new FlowControlInUseError(naming);
    await tx.delete(flowControls).where(and(eq(flowControls.shard, shard), eq(flowControls.id, row.id)));
    await auditChanges(tx, ctx, tenantId, [{ action: 'flow_control.deleted', target: { type: 'flow_control', id: key } }]);
    return true;
  });
}

/** The keys among `keys` that the tenant has no flow control of (for a job's `flowControlKey`). */
export async function missingFlowControls(db: Executor, tenantId: string, keys: readonly string[]): Promise<string[]> {
  const wanted = [...new Set(keys)];
  if (wanted.length === 0) return [];
  const found = await query<{ key: string }>(
    db,
    sql`select key from flow_controls where shard = ${shardOf(tenantId)} and tenant_id = ${tenantId}
        and key in (select value from jsonb_array_elements_text(${JSON.stringify(wanted)}::jsonb))`,
  );
  const have = new Set(found.map((f) => f.key));
  return wanted.filter((k) => !have.has(k));
}

/** A flow control's state: its runs holding a lease, and its runs due and waiting. */
type FlowState = { inFlight: number; waiting: number };

/** `row` as shown, with its runs in flight and waiting at `nowMs` (epoch ms). */
async function withState(db: Executor, row: FlowRow, nowMs: number): Promise<FlowControlView> {
  const states = await statesOf(db, row.tenantId, [row], nowMs);
  return view(row, states.get(row.id));
}

/**
 * The state at `nowMs` (epoch ms) of each of the tenant's flow controls `rows`, by id, in one statement on the
 * tenant's shard (a page of the list is one query, not one per flow control).
 */
async function statesOf(db: Executor, tenantId: string, rows: readonly FlowRow[], nowMs: number): Promise<Map<string, FlowState>> {
  if (rows.length === 0) return new Map();
  const shard = shardOf(tenantId);
  const found = await query<{ id: string; in_flight: number | string; waiting: number | string }>(
    db,
    sql`select f.id,
          (select count(*) from runs where shard = ${shard} and flow_id = f.id and flow_leased) as in_flight,
          (select count(*) from runs r where r.shard = ${shard} and r.status in ('scheduled', 'retrying')
             and r.next_attempt_at <= ${new Date(nowMs).toISOString()}::timestamptz
             and r.job_id in (select id from jobs where tenant_id = ${tenantId} and shard = ${shard}
                              and flow_control_key = f.key)) as waiting
        from flow_controls f
        where f.shard = ${shard} and f.id = any(${uuidArray(rows.map((r) => r.id))}::uuid[])`,
  );
  return new Map(found.map((f) => [f.id, { inFlight: Number(f.in_flight), waiting: Number(f.waiting) }]));
}

/** `row` as the API shows it, with `state` (none: a flow control deleted meanwhile shows 0 and 0). */
function view(row: FlowRow, state: FlowState | undefined): FlowControlView {
  return {
    key: row.key,
    rate: row.rateLimit !== null && row.ratePeriodMs !== null ? { limit: row.rateLimit, periodMs: row.ratePeriodMs } : null,
    parallelism: row.parallelism,
    paused: row.paused,
    inFlight: state?.inFlight ?? 0,
    waiting: state?.waiting ?? 0,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** The settings a replacement changed, by their API names. */
function changedFields(a: FlowRow, b: FlowRow): string[] {
  const out: string[] = [];
  if (a.rateLimit !== b.rateLimit || a.ratePeriodMs !== b.ratePeriodMs) out.push('rate');
  if (a.parallelism !== b.parallelism) out.push('parallelism');
  if (a.paused !== b.paused) out.push('paused');
  return out;
}
