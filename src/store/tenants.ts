/** Tenants: the unit of isolation. Creating one also makes its first API key and signing secret. */
import { and, eq, sql } from 'drizzle-orm';
import type { AuditChange } from '../domain/audit.ts';
import { newId } from '../domain/ids.ts';
import { patchQuotaOverrides, type QuotaName, type QuotaOverrides, quotaOverridesOf, type TenantStatus } from '../domain/quotas.ts';
import { shardOf } from '../domain/shard.ts';
import { createApiKey } from './api-keys.ts';
import { auditChanges } from './audit-log.ts';
import type { StoreContext } from './context.ts';
import { type Db, query } from './db.ts';
import { releaseHeldRuns } from './queue/hold-runs.ts';
import { tenants } from './schema.ts';
import { createSigningSecret } from './signing-secrets.ts';

export type Tenant = { tenantId: string; name: string; createdAt: Date };

/**
 * Creates a tenant with one API key named "default" and one signing secret (and, with `ctx.source`, their audit
 * entries), in one transaction.
 * @returns the tenant and the two secrets, which are never readable again
 */
export async function createTenant(ctx: StoreContext, name: string): Promise<{ tenant: Tenant; apiKey: string; signingSecret: string }> {
  return (ctx.db as Db).transaction(async (tx) => {
    const c = { ...ctx, db: tx };
    const tenantId = newId();
    const createdAt = new Date(ctx.clock.now());
    await tx.insert(tenants).values({ shard: shardOf(tenantId), id: tenantId, name, createdAt });
    await auditChanges(tx, ctx, tenantId, [{ action: 'tenant.created', target: { type: 'tenant', id: tenantId } }]);
    const key = await createApiKey(c, tenantId, { name: 'default', expiresAt: null });
    const { secret: signingSecret } = await createSigningSecret(c, tenantId);
    return { tenant: { tenantId, name, createdAt }, apiKey: key.key, signingSecret };
  });
}

/** The tenant, or null. */
export async function getTenant(ctx: StoreContext, tenantId: string): Promise<Tenant | null> {
  const [row] = await ctx.db
    .select()
    .from(tenants)
    .where(and(eq(tenants.shard, shardOf(tenantId)), eq(tenants.id, tenantId)));
  return row ? { tenantId: row.id, name: row.name, createdAt: row.createdAt } : null;
}

/** The tables with a `tenant_id` whose rows go with their tenant (`deleteTenant`; `attempts` go through their runs). */
export const TENANT_OWNED_TABLES = [
  'runs',
  'jobs',
  'notification_endpoints',
  'idempotency_keys',
  'api_keys',
  'signing_secrets',
  'audit_log',
  'tenant_callbacks',
  'flow_controls',
  'calendars',
  'open_jobs',
] as const;

/**
 * Deletes a tenant and everything it owns (attempts, runs, jobs, notification endpoints, idempotency keys, API keys,
 * signing secrets, its audit log, callback counts, flow controls and calendars), in one transaction. Tables carry no foreign keys or triggers to cascade (schema.ts, `jobs`), so
 * each is an explicit statement, every one naming the tenant's bucket.
 * @returns false when there was no such tenant
 */
export async function deleteTenant(ctx: StoreContext, tenantId: string): Promise<boolean> {
  const shard = shardOf(tenantId);
  return (ctx.db as Db).transaction(async (tx) => {
    await tx.execute(sql`delete from attempts a using runs r
      where a.shard = ${shard} and r.shard = ${shard} and r.tenant_id = ${tenantId} and a.run_id = r.id`);
    for (const table of TENANT_OWNED_TABLES) {
      await tx.execute(sql`delete from ${sql.identifier(table)} where shard = ${shard} and tenant_id = ${tenantId}`);
    }
    const gone = await tx
      .delete(tenants)
      .where(and(eq(tenants.shard, shard), eq(tenants.id, tenantId)))
      .returning({ id: tenants.id });
    return gone.length > 0;
  });
}

/** A tenant as the operator sees it (`/v1/admin/tenants`): its status, open jobs and quota overrides. */
export type TenantAdminView = Tenant & {
  status: TenantStatus;
  /** Its jobs `active` and `paused` (callback jobs; an endpoint's hidden job is not counted). */
  jobs: { active: number; paused: number };
  /** The operator's overrides of the configured quotas. */
  quotaOverrides: QuotaOverrides;
};

type TenantRow = { shard: number; id: string; name: string; created_at: Date | string; status: string; quotas: unknown };

/** Open jobs (`active`, `paused`) of each of `rows`' tenants, one statement. */
async function openJobCounts(ctx: StoreContext, rows: readonly TenantRow[]): Promise<Map<string, { active: number; paused: number }>> {
  const counts = new Map<string, { active: number; paused: number }>();
  if (rows.length === 0) return counts;
  const found = await query<{ tenant_id: string; active: number | string; paused: number | string }>(
    ctx.db,
    sql`select j.tenant_id, count(*) filter (where j.status = 'active') as active, count(*) filter (where j.status = 'paused') as paused
        from jobs j
        join jsonb_to_recordset(${JSON.stringify(rows.map((r) => ({ shard: Number(r.shard), id: r.id })))}::jsonb) as t(shard smallint, id uuid)
          on j.shard = t.shard and j.tenant_id = t.id
        where j.status in ('active', 'paused') and j.kind = 'callback'
        group by j.tenant_id`,
  );
  for (const f of found) counts.set(f.tenant_id, { active: Number(f.active), paused: Number(f.paused) });
  return counts;
}

function adminView(r: TenantRow, jobs: { active: number; paused: number } | undefined): TenantAdminView {
  return {
    tenantId: r.id,
    name: r.name,
    createdAt: r.created_at instanceof Date ? r.created_at : new Date(r.created_at),
    status: r.status === 'suspended' ? 'suspended' : 'active',
    jobs: jobs ?? { active: 0, paused: 0 },
    quotaOverrides: quotaOverridesOf(r.quotas),
  };
}

/**
 * A page of every tenant, oldest first (ids are UUID v7, time-ordered), with its open jobs counted: a read of every
 * bucket, for the operator only.
 * @param page.limit most tenants (1–100) @param page.cursor the last tenant id of the previous page
 * @returns the tenants and the cursor of the next page (null: none)
 */
export async function listTenants(
  ctx: StoreContext,
  page: { limit: number; cursor?: string },
): Promise<{ items: TenantAdminView[]; nextCursor: string | null }> {
  const rows = await query<TenantRow>(
    ctx.db,
    sql`select shard, id, name, created_at, status, quotas from tenants
        ${page.cursor ? sql`where id > ${page.cursor}::uuid` : sql``}
        order by id limit ${page.limit + 1}`,
  );
  const more = rows.length > page.limit;
  const pageRows = rows.slice(0, page.limit);
  const counts = await openJobCounts(ctx, pageRows);
  return { items: pageRows.map((r) => adminView(r, counts.get(r.id))), nextCursor: more ? pageRows.at(-1)!.id : null };
}

/** The tenant as the operator sees it, or null. */
export async function getTenantAdmin(ctx: StoreContext, tenantId: string): Promise<TenantAdminView | null> {
  const [row] = await query<TenantRow>(
    ctx.db,
    sql`select shard, id, name, created_at, status, quotas from tenants where shard = ${shardOf(tenantId)} and id = ${tenantId}`,
  );
  if (!row) return null;
  return adminView(row, (await openJobCounts(ctx, [row])).get(row.id));
}

/** What `updateTenant` changes: the status, and quota overrides (a number sets one, null removes it). */
export type TenantPatch = { status?: TenantStatus; quotas?: Partial<Record<QuotaName, number | null>> };

/**
 * Changes a tenant's status and quota overrides, in one transaction that locks its row. Suspending takes effect for
 * the next request with its keys (read with each key: api-keys.ts) and the next claim of its runs (hold-runs.ts);
 * resuming also makes the runs held meanwhile due now (`releaseHeldRuns`), after the tenant's row is updated.
 * The audit entries of what changed (`tenant.suspended`, `tenant.resumed`, `tenant.quotas_changed` naming the quotas)
 * are written in the same transaction, as `ctx.source` (the admin routes: `{ type: 'admin' }`).
 * @returns the tenant after the change, or null when there is no such tenant
 */
export async function updateTenant(ctx: StoreContext, tenantId: string, patch: TenantPatch): Promise<TenantAdminView | null> {
  const shard = shardOf(tenantId);
  const changed = await (ctx.db as Db).transaction(async (tx) => {
    const [row] = await query<TenantRow>(
      tx,
      sql`select shard, id, name, created_at, status, quotas from tenants where shard = ${shard} and id = ${tenantId} for update`,
    );
    if (!row) return false;
    const before = adminView(row, undefined);
    const status = patch.status ?? before.status;
    const quotas = patch.quotas ? patchQuotaOverrides(before.quotaOverrides, patch.quotas) : before.quotaOverrides;
    await tx
      .update(tenants)
      .set({ status, quotas })
      .where(and(eq(tenants.shard, shard), eq(tenants.id, tenantId)));
    if (before.status === 'suspended' && status === 'active') await releaseHeldRuns(tx, tenantId, ctx.clock.now());
    const target = { type: 'tenant', id: tenantId };
    const entries: AuditChange[] = [];
    if (status !== before.status) entries.push({ action: status === 'suspended' ? 'tenant.suspended' : 'tenant.resumed', target });
    const quotaNames = [...new Set([...Object.keys(before.quotaOverrides), ...Object.keys(quotas)])] as QuotaName[];
    const changedQuotas = quotaNames.filter((q) => before.quotaOverrides[q] !== quotas[q]).sort();
    if (changedQuotas.length > 0) entries.push({ action: 'tenant.quotas_changed', target, changes: changedQuotas });
    await auditChanges(tx, ctx, tenantId, entries);
    return true;
  });
  return changed ? getTenantAdmin(ctx, tenantId) : null;
}
