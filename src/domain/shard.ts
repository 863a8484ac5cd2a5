/**
 * The tenant shard key: every tenant belongs to one of SHARD_COUNT buckets, and every row a tenant owns (jobs, runs,
 * attempts, keys, secrets, idempotency keys, notification endpoints) carries its bucket in `shard`, the first column
 * of its primary key and of its unique and due indexes. Statements on the dispatch hot path name one bucket each, so
 * a distributed PostgreSQL (Citus, distributed by `shard`) routes each to one node; the dispatcher shares its claims
 * out over the buckets with due work (docs/design.md, "Partitioning and fairness").
 */

/** Number of buckets. Fixed by migration 0013: changing it would move tenants between buckets. */
export const SHARD_COUNT = 64;

/**
 * The bucket of a tenant: the low 32 bits of its id (a UUID, whose last 62 bits are random in v4 and v7, RFC 9562
 * §5.4/§5.7) modulo SHARD_COUNT, so tenants spread evenly and the bucket never changes. Migration 0013 computes the
 * same in SQL (`chime_shard_of`), and test/domain/shard.test.ts checks that both agree.
 * @param tenantId a UUID in its text form (any case, with or without dashes)
 * @returns an integer in [0, SHARD_COUNT)
 * @throws TypeError when `tenantId` does not end in 8 hex digits
 */
export function shardOf(tenantId: string): number {
  const tail = tenantId.slice(-8);
  if (!/^[0-9a-fA-F]{8}$/.test(tail)) throw new TypeError(`not a UUID: ${tenantId}`);
  return Number.parseInt(tail, 16) % SHARD_COUNT;
}
