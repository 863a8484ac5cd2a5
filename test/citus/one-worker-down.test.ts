/**
 * With one Citus worker stopped, every queue statement of a bucket on the other worker still goes through: the claim,
 * the lease renewal, the finish (its attempt log, failures in a row, a pause and the events) and the reaper. A
 * statement that reached for every node (as the finish's attempt log did, an INSERT … SELECT from a CTE's result,
 * which Citus sends to every node) fails here, and with it the live worker's tenants' outcomes while any worker is down.
 * The stopped worker's bucket fails, and only it.
 */

import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import { PAUSED_REASON } from '../../src/domain/events.ts';
import { shardOf } from '../../src/domain/shard.ts';
import { query } from '../../src/store/db.ts';
import { createJob } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { finishRuns } from '../../src/store/queue/finish-runs.ts';
import { reapExpiredLeases } from '../../src/store/queue/reap-leases.ts';
import { renewLeases } from '../../src/store/queue/renew-leases.ts';
import { CITUS_TESTS } from '../support/citus.ts';
import { createTestTenantIn, FAILED_500, openTestStore, T0, type TestStore, testJobSpec, testOutcome } from '../support/store.ts';

describe.runIf(CITUS_TESTS)('one Citus worker down', () => {
  let store: TestStore;
  let live: string;
  let down: string;
  /** The live worker's job that pauses after one failure. */
  let pausing: string;

  beforeAll(async () => {
    store = await openTestStore({ kind: 'citus' });
    const [stopped, running] = store.cluster!.workerPorts as [number, number];
    const placed = new Map<number, string>();
    for (let i = 0; i < 40 && placed.size < 2; i++) {
      const tenant = await createTestTenantIn(store.ctx, `t${i}`);
      const port = await store.cluster!.workerOf(shardOf(tenant));
      if (!placed.has(port)) placed.set(port, tenant);
    }
    live = placed.get(running)!;
    down = placed.get(stopped)!;
    // On the live worker: a job that succeeds, one that fails and pauses (pauseAfterFailures 1), one left to the reaper.
    await createJob(store.ctx, live, testJobSpec(T0), T0);
    pausing = (
      await createJob(
        store.ctx,
        live,
        { ...testJobSpec(T0, { schedule: { type: 'interval', everyMs: 60_000 } }), pauseAfterFailures: 1 },
        T0,
      )
    ).id;
    await createJob(store.ctx, live, testJobSpec(T0), T0);
    await createJob(store.ctx, down, testJobSpec(T0), T0);
    await store.cluster!.killNode(stopped);
  }, 180_000);
  afterAll(() => store?.close(), 120_000);

  it("claims, renews, finishes and reaps the live worker's runs; only the stopped worker's bucket fails", async () => {
    const db = store.database.db;
    const failed: number[] = [];
    const onBucketError = (shard: number) => failed.push(shard);

    const claimed: ClaimedRun[] = await claimRuns(db, { owner: 'A', limit: 10, nowMs: T0, leaseMarginMs: 1_000, onBucketError });
    expect(claimed.map((r) => r.tenantId)).toEqual([live, live, live]);
    // The due buckets are read bucket by bucket when the read across them fails: the stopped one may not be tried.
    expect(failed.filter((shard) => shard !== shardOf(down))).toEqual([]);

    const renewals = claimed.map((r) => ({ shard: r.shard, runId: r.runId, attempt: r.attempt, leaseExpiresAtMs: T0 + 5_000 }));
    expect([...(await renewLeases(db, 'A', renewals))].sort()).toEqual(claimed.map((r) => r.runId).sort());

    const failing = claimed.find((r) => r.jobId === pausing)!;
    const [ok, left] = claimed.filter((r) => r !== failing) as [ClaimedRun, ClaimedRun];
    const recorded = await finishRuns(db, 'A', [testOutcome(ok), testOutcome(failing, FAILED_500)]);
    expect([...recorded].sort()).toEqual([ok.runId, failing.runId].sort());
    const [job] = await query<{ status: string; paused_reason: string }>(
      db,
      sql`select status, paused_reason from jobs where shard = ${failing.shard} and id = ${failing.jobId}`,
    );
    expect(job).toEqual({ status: 'paused', paused_reason: PAUSED_REASON.consecutiveFailures });

    expect(await reapExpiredLeases(db, T0 + 60_000, undefined, onBucketError)).toBe(1);
    const [reaped] = await query<{ status: string }>(db, sql`select status from runs where shard = ${left.shard} and id = ${left.runId}`);
    expect(reaped!.status).toBe('retrying');
    expect(failed.filter((shard) => shard !== shardOf(down))).toEqual([]);
  });
});
