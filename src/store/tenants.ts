/** Tenants: the unit of isolation. Creating one also makes its first API key and signing secret. */
import { eq } from 'drizzle-orm';
import type { StoreContext } from './context.ts';
import { newId } from '../domain/ids.ts';
import { tenants } from './schema.ts';
import { createApiKey } from './api-keys.ts';
import { createSigningSecret } from './signing-secrets.ts';
import type { Db } from './db.ts';

export type Tenant = { tenantId: string; name: string; createdAt: Date };

/**
 * Creates a tenant with one API key named "default" and one signing secret, in one transaction.
 * @returns the tenant and the two secrets, which are never readable again
 */
export async function createTenant(
  ctx: StoreContext,
  name: string,
): Promise<{ tenant: Tenant; apiKey: string; signingSecret: string }> {
  return (ctx.db as Db).transaction(async (tx) => {
    const c = { ...ctx, db: tx };
    const tenantId = newId();
    const createdAt = new Date(ctx.clock.now());
    await tx.insert(tenants).values({ id: tenantId, name, createdAt });
    const key = await createApiKey(c, tenantId, { name: 'default', expiresAt: null });
    const signingSecret = await createSigningSecret(c, tenantId);
    return { tenant: { tenantId, name, createdAt }, apiKey: key.key, signingSecret };
  });
}

/** The tenant, or null. */
export async function getTenant(ctx: StoreContext, tenantId: string): Promise<Tenant | null> {
  const [row] = await ctx.db.select().from(tenants).where(eq(tenants.id, tenantId));
  return row ? { tenantId: row.id, name: row.name, createdAt: row.createdAt } : null;
}
