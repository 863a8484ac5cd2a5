/** API keys: created, listed, revoked per tenant; authenticated by prefix lookup and constant-time hash compare. */
import { and, desc, eq, getTableColumns, isNull, sql } from 'drizzle-orm';
import { newId } from '../domain/ids.ts';
import { type QuotaOverrides, quotaOverridesOf, type TenantStatus } from '../domain/quotas.ts';
import { ALL_SCOPES, type KeyScope, normalizeScopes } from '../domain/scopes.ts';
import { shardOf } from '../domain/shard.ts';
import { auditChanges } from './audit-log.ts';
import type { StoreContext } from './context.ts';
import { apiKeyPrefix, apiKeyShard, generateApiKey, sha256Hex, timingSafeEqualStrings } from './credentials.ts';
import type { Db, Executor } from './db.ts';
import { apiKeys, tenants } from './schema.ts';
import { ofTenant } from './tenant-scope.ts';

export type ApiKeyInfo = {
  keyId: string;
  name: string;
  prefix: string;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  /** What the key may do (domain/scopes.ts), in stored form (`normalizeScopes`). */
  scopes: KeyScope[];
};

/** `lastUsedAt` is written at most this often per key, so authentication stays a read. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** Creates a key, with its audit entry; `key` in the result is the only time the secret is visible. */
export async function createApiKey(
  ctx: StoreContext,
  tenantId: string,
  input: { name: string; expiresAt: Date | null; scopes?: readonly string[] },
): Promise<ApiKeyInfo & { key: string }> {
  const scopes = normalizeScopes(input.scopes ?? [ALL_SCOPES]);
  const { key, prefix, hash } = await generateApiKey(shardOf(tenantId));
  const row = {
    shard: shardOf(tenantId),
    id: newId(),
    tenantId,
    name: input.name,
    prefix,
    keyHash: hash,
    createdAt: new Date(ctx.clock.now()),
    expiresAt: input.expiresAt,
    scopes,
  };
  await (ctx.db as Db).transaction(async (tx) => {
    await tx.insert(apiKeys).values(row);
    await auditChanges(tx, ctx, tenantId, [{ action: 'api_key.created', target: { type: 'api_key', id: row.id } }]);
  });
  return { keyId: row.id, name: row.name, prefix, createdAt: row.createdAt, expiresAt: row.expiresAt, lastUsedAt: null, scopes, key };
}

/** The tenant's keys that are not revoked, newest first, without secrets. */
export async function listApiKeys(ctx: StoreContext, tenantId: string): Promise<ApiKeyInfo[]> {
  const rows = await ctx.db
    .select()
    .from(apiKeys)
    .where(and(ofTenant(apiKeys, tenantId), isNull(apiKeys.revokedAt)))
    .orderBy(desc(apiKeys.id));
  return rows.map((r) => ({
    keyId: r.id,
    name: r.name,
    prefix: r.prefix,
    createdAt: r.createdAt,
    expiresAt: r.expiresAt,
    lastUsedAt: r.lastUsedAt,
    scopes: r.scopes as KeyScope[],
  }));
}

/** Revokes a key at once, with its audit entry. @returns false when the tenant has no such key */
export async function revokeApiKey(ctx: StoreContext, tenantId: string, keyId: string): Promise<boolean> {
  return (ctx.db as Db).transaction(async (tx) => {
    const rows = await tx
      .update(apiKeys)
      .set({ revokedAt: new Date(ctx.clock.now()) })
      .where(and(ofTenant(apiKeys, tenantId), eq(apiKeys.id, keyId), isNull(apiKeys.revokedAt)))
      .returning({ id: apiKeys.id });
    if (rows.length > 0) await auditChanges(tx, ctx, tenantId, [{ action: 'api_key.revoked', target: { type: 'api_key', id: keyId } }]);
    return rows.length > 0;
  });
}

/**
 * What the key lookup reads: the key's row, and its tenant's status and quota overrides from the same statement (a
 * join on the tenant's primary key, in the key's bucket), so that a suspended tenant and its quotas cost no second
 * round trip per request.
 */
const KEY_WITH_TENANT = { ...getTableColumns(apiKeys), tenantStatus: tenants.status, tenantQuotas: tenants.quotas };

/** The lookups of every authenticated request, built once per database handle (drizzle's prepared queries). */
const keyLookups = new WeakMap<Executor, ReturnType<typeof buildKeyLookups>>();

function buildKeyLookups(db: Executor) {
  return {
    inBucket: db
      .select(KEY_WITH_TENANT)
      .from(apiKeys)
      .leftJoin(tenants, and(eq(tenants.shard, apiKeys.shard), eq(tenants.id, apiKeys.tenantId)))
      .where(and(eq(apiKeys.shard, sql.placeholder('shard')), eq(apiKeys.prefix, sql.placeholder('prefix'))))
      .prepare('api_key_by_bucket_prefix'),
    anywhere: db
      .select(KEY_WITH_TENANT)
      .from(apiKeys)
      .leftJoin(tenants, and(eq(tenants.shard, apiKeys.shard), eq(tenants.id, apiKeys.tenantId)))
      .where(eq(apiKeys.prefix, sql.placeholder('prefix')))
      .prepare('api_key_by_prefix'),
  };
}

/**
 * The prepared `select … from api_keys where [shard = $1 and] prefix = $2`: the query builder's work (building the
 * SQL text and selection on every call, 5–8 % of a `POST /v1/jobs`'s CPU in the API) is done once per handle; only
 * the values and the row mapping remain per request.
 */
function keyLookupsOf(db: Executor) {
  let q = keyLookups.get(db);
  if (!q) keyLookups.set(db, (q = buildKeyLookups(db)));
  return q;
}

/**
 * Finds the tenant a presented key belongs to: prefix lookup, then a constant-time comparison of SHA-256 hashes. The
 * same statement reads the tenant's status and quota overrides (KEY_WITH_TENANT): the caller refuses a suspended
 * tenant's keys (`403 tenant_suspended`, src/api/app.ts) and limits by the tenant's quotas.
 * @returns the tenant id, key id, prefix, scopes, the tenant's status and its quota overrides, or null for an unknown,
 *   revoked or expired key
 */
export async function authenticateApiKey(
  ctx: StoreContext,
  presented: string,
): Promise<{
  tenantId: string;
  keyId: string;
  prefix: string;
  scopes: KeyScope[];
  tenantStatus: TenantStatus;
  quotas: QuotaOverrides;
} | null> {
  const prefix = apiKeyPrefix(presented);
  const shard = apiKeyShard(presented);
  if (!prefix || shard === null) return null;
  const hash = sha256Hex(presented);
  const lookups = keyLookupsOf(ctx.db);
  let [row] = await lookups.inBucket.execute({ shard, prefix });
  // A key older than the bucket rule (credentials.ts) names a random bucket: a miss looks in every bucket.
  if (!row) [row] = await lookups.anywhere.execute({ prefix });
  if (!row || !timingSafeEqualStrings(row.keyHash, hash) || row.revokedAt) return null;
  const now = ctx.clock.now();
  if (row.expiresAt && row.expiresAt.getTime() <= now) return null;
  if (!row.lastUsedAt || now - row.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    await ctx.db
      .update(apiKeys)
      .set({ lastUsedAt: new Date(now) })
      .where(and(eq(apiKeys.shard, row.shard), eq(apiKeys.id, row.id)));
  }
  return {
    tenantId: row.tenantId,
    keyId: row.id,
    prefix: row.prefix,
    scopes: row.scopes as KeyScope[],
    tenantStatus: row.tenantStatus === 'suspended' ? 'suspended' : 'active',
    quotas: quotaOverridesOf(row.tenantQuotas),
  };
}
