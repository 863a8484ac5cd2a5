/** Splitting a batch by bucket, so that each statement of the hot path names one (src/domain/shard.ts). */

/**
 * Groups `items` by their `shard`, keeping their order within each group.
 * @returns the groups in the order their buckets first appear
 */
export function byBucket<T extends { shard: number }>(items: readonly T[]): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const group = groups.get(item.shard);
    if (group) group.push(item);
    else groups.set(item.shard, [item]);
  }
  return groups;
}

/**
 * Runs `fn` once per bucket of `items`, one after another (a pool of one connection, PGlite, could not run them at
 * once anyway), and unites the ids each returns.
 */
export async function eachBucket<T extends { shard: number }>(
  items: readonly T[],
  fn: (shard: number, group: T[]) => Promise<Set<string> | void>,
): Promise<Set<string>> {
  const all = new Set<string>();
  for (const [shard, group] of byBucket(items)) for (const id of (await fn(shard, group)) ?? []) all.add(id);
  return all;
}
