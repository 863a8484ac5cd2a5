/**
 * A claim that fails in one bucket (on Citus: the worker holding it is down) goes on with the other buckets when the
 * caller passes `onBucketError` (the dispatcher does), and throws when every bucket it tried failed, so that the
 * caller backs off; without `onBucketError` the first failure is thrown. The failure is made with a trigger that
 * refuses the claim's update in one bucket.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { shardOf } from '../../src/domain/shard.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { openTestStore, refuseRunUpdatesInBucket, T0, type TestStore, tenantsInTwoBuckets } from '../support/store.ts';

describe.each(DATABASE_TARGETS.filter((t) => t.kind !== 'citus'))('a claim with a failing bucket on $kind', (target) => {
  let store: TestStore;
  let a: string;
  let b: string;
  const claim = (onBucketError?: (shard: number, err: unknown) => void) =>
    claimRuns(store.database.db, { owner: 'isolation', limit: 10, nowMs: T0, leaseMarginMs: 1_000, onBucketError });
  /** Claims in bucket `shard` (null: in any) fail: the claim's update sets a lease owner. */
  const refuseBucket = (shard: number | null) => refuseRunUpdatesInBucket(store.database, shard, 'new.lease_owner is not null');

  beforeAll(async () => {
    store = await openTestStore(target);
    ({ a, b } = await tenantsInTwoBuckets(store.ctx));
    await refuseBucket(shardOf(a));
  });
  afterAll(() => store?.close());
  // Every test starts from the four runs waiting, whatever the one before claimed.
  beforeEach(async () => {
    await store.database.db.execute(
      sql`update runs set status = 'scheduled', attempts = 0, lease_owner = null, lease_expires_at = null, next_attempt_at = ${new Date(T0).toISOString()}::timestamptz`,
    );
  });

  /** The messages along an error's `cause` chain (drizzle wraps the driver's error). */
  const chain = (err: unknown): string => {
    const out: string[] = [];
    for (let e = err as { message?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) out.push(String(e.message));
    return out.join(' | ');
  };

  it('without onBucketError, throws the failing bucket error', async () => {
    expect(chain(await claim().catch((e: unknown) => e))).toMatch(/bucket down/);
  });

  it("with onBucketError, reports the failing bucket and claims the other bucket's runs", async () => {
    const failed: number[] = [];
    const claimed = await claim((shard) => failed.push(shard));
    expect(failed).toContain(shardOf(a));
    expect(claimed.map((r) => r.shard)).toEqual([shardOf(b), shardOf(b)]);
  });

  it('throws when every bucket it tried failed', async () => {
    await refuseBucket(null);
    const failed: number[] = [];
    await expect(claim((shard) => failed.push(shard))).rejects.toThrow(/every bucket tried/);
    expect(new Set(failed)).toEqual(new Set([shardOf(a), shardOf(b)]));
  });
});
