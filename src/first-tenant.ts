/**
 * The first tenant of an embedded database: on the first start of `chime serve` over an empty embedded database,
 * a tenant is created and its API key and signing secret are written to `first-tenant.json` in CHIME_DATA_DIR
 * (mode 0600), so a new user can call the API at once without a second process opening the locked database.
 */
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import type { StoreContext } from './store/context.ts';
import { type Db, query } from './store/db.ts';
import { createTenant } from './store/tenants.ts';

/** Name of the file, in CHIME_DATA_DIR, that holds the first tenant's secrets. */
export const FIRST_TENANT_FILE = 'first-tenant.json';
/** Name of the tenant made on the first start. */
export const FIRST_TENANT_NAME = 'default';

/** The JSON of a created tenant, as `POST /v1/tenants` answers and `chime tenant create` prints. */
export type CreatedTenantJson = { tenant: { tenantId: string; name: string; createdAt: string }; apiKey: string; signingSecret: string };

/** `createTenant`'s result in the API's shape (times as RFC 3339 UTC strings). */
export function createdTenantJson(t: Awaited<ReturnType<typeof createTenant>>): CreatedTenantJson {
  return { tenant: { ...t.tenant, createdAt: t.tenant.createdAt.toISOString() }, apiKey: t.apiKey, signingSecret: t.signingSecret };
}

/**
 * Creates the first tenant when the database has none, writing its secrets to `<dataDir>/first-tenant.json` (mode
 * 0600) before the tenant commits: a crash in between leaves no tenant, and the next start makes a new one and
 * overwrites the file, so the file never names a tenant whose key was lost.
 * @returns the file's path and what it holds, or null when the database had a tenant already
 * @throws the file system's error when the file cannot be written (nothing is committed then)
 */
export async function ensureFirstTenant(
  store: StoreContext,
  dataDir: string,
): Promise<{ file: string; created: CreatedTenantJson } | null> {
  return (store.db as Db).transaction(async (tx) => {
    // Serializes two starts on one database (the embedded one is locked to one process; this is for any other).
    await tx.execute(sql`lock table tenants in share row exclusive mode`);
    const [{ any } = { any: false }] = await query<{ any: boolean }>(tx, sql`select exists (select 1 from tenants) as any`);
    if (any) return null;
    const created = createdTenantJson(await createTenant({ ...store, db: tx }, FIRST_TENANT_NAME));
    const file = join(dataDir, FIRST_TENANT_FILE);
    await writeFile(file, `${JSON.stringify(created, null, 2)}\n`, { mode: 0o600 });
    await chmod(file, 0o600); // an existing file keeps its mode through writeFile
    return { file, created };
  });
}
