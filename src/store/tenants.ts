/** Tenants: the unit of isolation. Creating one also makes its first API key and signing secret. */
import { and, eq, sql } from 'drizzle-orm';
import { newId } from '../domain/ids.ts';
import { shardOf } from '../domain/shard.ts';
import { createApiKey } from './api-keys.ts';
import type { StoreContext } from './context.ts';
import type { Db } from './db.ts';
import { tenants } from './schema.ts';
import { createSigningSecret } from './signing-secrets.ts';

export type Tenant = { tenantId: string; name: string; createdAt: Date };

/**
 * Creates a tenant with one API key named "default" and one signing secret, in one transaction.
 * @returns the tenant and the two secrets, which are never readable again
 */
export async function createTenant(ctx: StoreContext, name: string): Promise<{ tenant: Tenant; apiKey: string; signingSecret: string }> {
  return (ctx.db as Db).transaction(async (tx) => {
    const c = { ...ctx, db: tx };
    const tenantId = newId();
    const createdAt = new Date(ctx.clock.now());
    await tx.insert(tenants).values({ shard: shardOf(tenantId), id: tenantId, name, createdAt });
    const key = await createApiKey(c, tenantId, { name: 'default', expiresAt: null });
    const signingSecret = await createSigningSecret(c, tenantId);
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

/**
 * Deletes a tenant and everything it owns (attempts, runs, jobs, notification endpoints, idempotency keys, API keys,
 * signing secrets), in one transaction. Tables carry no foreign keys or triggers to cascade (schema.ts, `jobs`), so
 * each is an explicit statement, every one naming the tenant's bucket.
 * @returns false when there was no such tenant
 */
export async function deleteTenant(ctx: StoreContext, tenantId: string): Promise<boolean> {
  const shard = shardOf(tenantId);
  return (ctx.db as Db).transaction(async (tx) => {
    await tx.execute(sql`delete from attempts a using runs r
      where a.shard = ${shard} and r.shard = ${shard} and r.tenant_id = ${tenantId} and a.run_id = r.id`);
    for (const table of ['runs', 'jobs', 'notification_endpoints', 'idempotency_keys', 'api_keys', 'signing_secrets']) {
      await tx.execute(sql`delete from ${sql.identifier(table)} where shard = ${shard} and tenant_id = ${tenantId}`);
    }
    const gone = await tx
      .delete(tenants)
      .where(and(eq(tenants.shard, shard), eq(tenants.id, tenantId)))
      .returning({ id: tenants.id });
    return gone.length > 0;
  });
}
