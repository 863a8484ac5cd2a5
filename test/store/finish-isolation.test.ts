/**
 * A finish that fails in one bucket (on Citus: the worker holding it is down) records the other buckets' outcomes when
 * the caller passes `onBucketError` (the dispatcher's outcome writer does, and retries that bucket alone), and hands
 * the failing bucket's outcomes to it; without `onBucketError` the first failure is thrown. The failure is made with a
 * trigger that refuses the finish's update in one bucket.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import { shardOf } from '../../src/domain/shard.ts';
import { query } from '../../src/store/db.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { finishRuns } from '../../src/store/queue/finish-runs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { openTestStore, refuseRunUpdatesInBucket, T0, type TestStore, tenantsInTwoBuckets, testOutcome } from '../support/store.ts';

describe.each(DATABASE_TARGETS.filter((t) => t.kind !== 'citus'))('a finish with a failing bucket on $kind', (target) => {
  let store: TestStore;
  let a: string;
  let b: string;
  let claimed: ClaimedRun[];

  /** The outcomes of bucket a's runs first, so that bucket b's come after the failure. */
  const outcomes = () =>
    [...claimed.filter((r) => r.tenantId === a), ...claimed.filter((r) => r.tenantId === b)].map((r) => testOutcome(r));
  const statusOf = async (tenantId: string) =>
    (await query<{ status: string }>(store.database.db, sql`select status from runs where tenant_id = ${tenantId} order by id`)).map(
      (r) => r.status,
    );

  beforeAll(async () => {
    store = await openTestStore(target);
    ({ a, b } = await tenantsInTwoBuckets(store.ctx));
    claimed = await claimRuns(store.database.db, { owner: 'isolation', limit: 10, nowMs: T0, leaseMarginMs: 60_000 });
    expect(claimed).toHaveLength(4);
    await refuseRunUpdatesInBucket(store.database, shardOf(a), `new.status = 'succeeded'`);
  });
  afterAll(() => store?.close());

  it('without onBucketError, throws the failing bucket error and records nothing after it', async () => {
    await expect(finishRuns(store.database.db, 'isolation', outcomes())).rejects.toThrow();
    expect(await statusOf(a)).toEqual(['running', 'running']);
    expect(await statusOf(b)).toEqual(['running', 'running']);
  });

  it("with onBucketError, hands over the failing bucket's outcomes and records the other bucket's", async () => {
    const failed: { shard: number; runIds: string[] }[] = [];
    const recorded = await finishRuns(store.database.db, 'isolation', outcomes(), (shard, _err, group) =>
      failed.push({ shard, runIds: group.map((o) => o.runId) }),
    );
    const ofTenant = (t: string) => claimed.filter((r) => r.tenantId === t).map((r) => r.runId);
    expect(failed).toEqual([{ shard: shardOf(a), runIds: ofTenant(a) }]);
    expect([...recorded].sort()).toEqual(ofTenant(b).sort());
    expect(await statusOf(a)).toEqual(['running', 'running']);
    expect(await statusOf(b)).toEqual(['succeeded', 'succeeded']);
  });
});
