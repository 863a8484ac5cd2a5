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

/** Called with a bucket whose statement failed (on Citus, the worker holding it is down) and the error. */
export type OnBucketError = (shard: number, err: unknown) => void;

/**
 * Runs `fn`, the statements of bucket `shard`: a failure goes to `onBucketError`, so that the caller goes on with the
 * other buckets, or without one is thrown.
 * @returns what `fn` returns, or undefined when it failed and `onBucketError` took the error
 */
export async function inBucket<R>(shard: number, fn: () => Promise<R>, onBucketError?: OnBucketError): Promise<R | undefined> {
  try {
    return await fn();
  } catch (err) {
    if (!onBucketError) throw err;
    onBucketError(shard, err);
    return undefined;
  }
}

/**
 * Runs `fn` once per bucket of `items`, one after another (a pool of one connection, PGlite, could not run them at
 * once anyway), and unites the ids each returns.
 * @param onBucketError called with a bucket whose `fn` failed, the error and the bucket's items; the other buckets go
 *   on (on Citus, a worker that is down fails only the buckets it holds). Without it, the first failure is thrown.
 */
export async function eachBucket<T extends { shard: number }>(
  items: readonly T[],
  fn: (shard: number, group: T[]) => Promise<Set<string> | undefined>,
  onBucketError?: (shard: number, err: unknown, group: T[]) => void,
): Promise<Set<string>> {
  const all = new Set<string>();
  for (const [shard, group] of byBucket(items)) {
    const ids = await inBucket(shard, () => fn(shard, group), onBucketError && ((s, err) => onBucketError(s, err, group)));
    for (const id of ids ?? []) all.add(id);
  }
  return all;
}
