/** The one WHERE that scopes a statement to one tenant's rows, naming its bucket first (src/domain/shard.ts). */
import { and, eq, type SQL } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { shardOf } from '../domain/shard.ts';

/**
 * `shard = shardOf(tenantId) and tenant_id = tenantId` on a tenant-owned table: the bucket lets the planner use the
 * table's shard-led indexes, and routes the statement to one shard of a distributed database.
 * @param table a table with `shard` and `tenantId` columns (jobs, runs, api keys, …)
 * @throws TypeError when `tenantId` is not a UUID (shardOf)
 */
export function ofTenant(table: { shard: AnyPgColumn; tenantId: AnyPgColumn }, tenantId: string): SQL {
  return and(eq(table.shard, shardOf(tenantId)), eq(table.tenantId, tenantId))!;
}
