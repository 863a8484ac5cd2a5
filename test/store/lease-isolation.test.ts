/**
 * Lease upkeep with a failing bucket (on Citus: the worker holding it is down): a renewal and a reap that fail in one
 * bucket go on with the others when the caller passes `onBucketError` (the lease keeper does), and the lease keeper
 * does not take the failing bucket's unsent runs for lost. The failure is made with a trigger that refuses every
 * update of a run in one bucket.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLeaseKeeper } from '../../src/dispatch/engine/lease-keeper.ts';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { shardOf } from '../../src/domain/shard.ts';
import { query } from '../../src/store/db.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { reapExpiredLeases } from '../../src/store/queue/reap-leases.ts';
import { renewLeases } from '../../src/store/queue/renew-leases.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { recordingLogger } from '../support/logger.ts';
import { openTestStore, refuseRunUpdatesInBucket, T0, type TestStore, tenantsInTwoBuckets } from '../support/store.ts';

/** Where the renewals move the leases to: 10 minutes on. */
const RENEWED = T0 + 600_000;

describe.each(DATABASE_TARGETS.filter((t) => t.kind !== 'citus'))('lease upkeep with a failing bucket on $kind', (target) => {
  let store: TestStore;
  let a: string;
  let b: string;
  let claimed: ClaimedRun[];

  const ofTenant = (t: string) => claimed.filter((r) => r.tenantId === t);
  const renewals = () => claimed.map((r) => ({ shard: r.shard, runId: r.runId, attempt: r.attempt, leaseExpiresAtMs: RENEWED }));
  const leasesOf = async (tenantId: string) =>
    (
      await query<{ status: string; lease: string | null }>(
        store.database.db,
        sql`select status, lease_expires_at::text as lease from runs where tenant_id = ${tenantId} order by id`,
      )
    ).map((r) => ({ status: r.status, lease: r.lease === null ? null : Date.parse(r.lease) }));

  beforeAll(async () => {
    store = await openTestStore(target);
    ({ a, b } = await tenantsInTwoBuckets(store.ctx));
    claimed = await claimRuns(store.database.db, { owner: 'keeper', limit: 10, nowMs: T0, leaseMarginMs: 1_000 });
    expect(claimed).toHaveLength(4);
    await refuseRunUpdatesInBucket(store.database, shardOf(a));
  });
  afterAll(() => store?.close());

  it('renewLeases without onBucketError throws the failing bucket error', async () => {
    await expect(renewLeases(store.database.db, 'keeper', renewals())).rejects.toThrow();
  });

  it("renewLeases with onBucketError renews the other bucket's leases and names the failing bucket", async () => {
    const failed: number[] = [];
    const held = await renewLeases(store.database.db, 'keeper', renewals(), (shard) => failed.push(shard));
    expect(failed).toEqual([shardOf(a)]);
    expect([...held].sort()).toEqual(
      ofTenant(b)
        .map((r) => r.runId)
        .sort(),
    );
    expect((await leasesOf(b)).map((r) => r.lease)).toEqual([RENEWED, RENEWED]);
    expect((await leasesOf(a)).map((r) => r.lease)).toEqual(
      ofTenant(a)
        .map((r) => r.leaseExpiresAtMs)
        .sort(),
    );
  });

  it("the lease keeper's round releases none of the failing bucket's unsent runs, and logs the bucket", async () => {
    const released: string[] = [];
    const log = recordingLogger();
    const keeper = createLeaseKeeper({
      db: store.database.db,
      clock: new ManualClock(T0 + 1),
      logger: log,
      options: { owner: 'keeper', leaseMarginMs: 1_000, intervalMs: 60_000 },
      unsent: () => claimed,
      release: (ids) => released.push(...ids),
    });
    await keeper.round();
    expect(released).toEqual([]);
    const renewalErrors = log.entries.filter(
      (e) => e.msg === 'renewing the leases of queued runs failed in one bucket; the others were renewed',
    );
    expect(renewalErrors.map((e) => e.fields.shard)).toEqual([shardOf(a)]);
  });

  it('reapExpiredLeases with onBucketError reaps the other bucket and names the failing one; without it, throws', async () => {
    const later = RENEWED + 1;
    const failed: number[] = [];
    expect(await reapExpiredLeases(store.database.db, later, undefined, (shard) => failed.push(shard))).toBe(2);
    expect(failed).toEqual([shardOf(a)]);
    expect((await leasesOf(b)).map((r) => r.status)).toEqual(['retrying', 'retrying']);
    expect((await leasesOf(a)).map((r) => r.status)).toEqual(['running', 'running']);
    await expect(reapExpiredLeases(store.database.db, later)).rejects.toThrow();
  });
});
