/**
 * What a bucket's claim tells its caller about the bucket afterwards (claim-runs.ts `BucketClaim.nextDueAtMs`, passed
 * to `FairClaim.onBucketDue`): the due time of its earliest waiting run, the first past the horizon or a next occurrence
 * the claim made, whichever is sooner; null when none waits; undefined when the claim took its limit's worth (more may
 * be due within the horizon) or gave runs back. The claim pacer sleeps on it instead of reading every bucket.
 */
import { describe, expect, it } from 'vitest';
import { shardOf } from '../../src/domain/shard.ts';
import { createJob } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { updateTenant } from '../../src/store/tenants.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import type { JobSpecInput } from '../support/store.ts';
import { T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

const HORIZON = 250;

describe.each(DATABASE_TARGETS)('the claim tells its bucket’s next due time on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;

  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });

  const at = (ms: number) => ({ type: 'once', at: new Date(ms).toISOString() }) as const;
  const job = (o: JobSpecInput) => createJob(store.ctx, tenantId, testJobSpec(T0, o), T0);

  /** Claims at `nowMs` with the horizon; returns the runs' ids and what each bucket told. */
  async function claim(nowMs: number, limit = 100) {
    const told = new Map<number, number | null | undefined>();
    const runs = await claimRuns(store.database.db, {
      owner: 'A',
      limit,
      nowMs,
      leaseMarginMs: 1,
      horizonMs: HORIZON,
      onBucketDue: (shard, due) => told.set(shard, due),
    });
    return { runs, told };
  }

  it('tells the first run due past the horizon, and null once none waits', async () => {
    await job({ schedule: at(T0) });
    await job({ schedule: at(T0 + 100) });
    await job({ schedule: at(T0 + 10_000) });
    const first = await claim(T0);
    expect(first.runs).toHaveLength(2);
    expect([...first.told]).toEqual([[shardOf(tenantId), T0 + 10_000]]);
    const last = await claim(T0 + 10_000);
    expect(last.runs).toHaveLength(1);
    expect([...last.told]).toEqual([[shardOf(tenantId), null]]);
  });

  it('tells the next occurrence the claim made when it comes first', async () => {
    await job({ schedule: { type: 'interval', everyMs: 5_000 } });
    await job({ schedule: at(T0 + 60_000) });
    const { runs, told } = await claim(T0);
    expect(runs).toHaveLength(1);
    expect([...told]).toEqual([[shardOf(tenantId), T0 + 5_000]]);
  });

  it('cannot tell after a claim of its limit’s worth, or one that gave runs back', async () => {
    await job({ schedule: at(T0) });
    await job({ schedule: at(T0 + 10) });
    const full = await claim(T0, 1);
    expect(full.runs).toHaveLength(1);
    expect([...full.told]).toEqual([[shardOf(tenantId), undefined]]);
    // A suspended tenant's run is claimed and given back (parked): the claim does not follow where.
    await updateTenant(store.ctx, tenantId, { status: 'suspended' });
    const held = await claim(T0 + 10);
    expect(held.runs).toEqual([]);
    expect([...held.told]).toEqual([[shardOf(tenantId), undefined]]);
  });
});
