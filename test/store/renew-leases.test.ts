/**
 * `renewLeases` (src/store/queue/renew-leases.ts) on every database target: it extends only leases the caller still
 * holds (same owner, same attempt, still running), never shortens one, and a renewed lease is not reaped.
 */
import { describe, expect, it } from 'vitest';
import { createJob } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { reapExpiredLeases } from '../../src/store/queue/reap-leases.ts';
import { renewLeases } from '../../src/store/queue/renew-leases.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { runById, T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

/** Lease = callback timeout (1000 ms) + this margin. */
const MARGIN = 1;
const LEASE = 1000 + MARGIN;

describe.each(DATABASE_TARGETS)('lease renewal on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;

  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });

  const job = () => createJob(store.ctx, tenantId, testJobSpec(T0, { callback: { timeoutMs: 1000 } }), T0);
  const claim = (owner: string, nowMs: number) => claimRuns(store.database.db, { owner, limit: 100, nowMs, leaseMarginMs: MARGIN });

  it('extends a held lease, so the reaper leaves it alone past its first expiry', async () => {
    await job();
    const [run] = await claim('A', T0);
    const later = T0 + 10 * LEASE;
    const held = await renewLeases(store.database.db, 'A', [
      { shard: run!.shard, runId: run!.runId, attempt: run!.attempt, leaseExpiresAtMs: later },
    ]);
    expect(held).toEqual(new Set([run!.runId]));
    expect(await runById(store.database, run!.runId)).toMatchObject({ status: 'running', leaseOwner: 'A', leaseExpiresAtMs: later });
    expect(await reapExpiredLeases(store.database.db, T0 + 5 * LEASE)).toBe(0);
    expect((await runById(store.database, run!.runId)).status).toBe('running');
  });

  it('never shortens a lease', async () => {
    await job();
    const [run] = await claim('A', T0);
    const held = await renewLeases(store.database.db, 'A', [
      { shard: run!.shard, runId: run!.runId, attempt: run!.attempt, leaseExpiresAtMs: T0 + 1 },
    ]);
    expect(held.has(run!.runId)).toBe(true);
    expect((await runById(store.database, run!.runId)).leaseExpiresAtMs).toBe(T0 + LEASE);
  });

  it('does not renew a lease held by another owner, of another attempt, or already reaped', async () => {
    await job();
    await job();
    const [a, b] = await claim('A', T0);
    const far = T0 + 100 * LEASE;
    // Another owner, and a stale attempt number: not held.
    expect(
      await renewLeases(store.database.db, 'B', [{ shard: a!.shard, runId: a!.runId, attempt: a!.attempt, leaseExpiresAtMs: far }]),
    ).toEqual(new Set());
    expect(
      await renewLeases(store.database.db, 'A', [{ shard: a!.shard, runId: a!.runId, attempt: a!.attempt + 1, leaseExpiresAtMs: far }]),
    ).toEqual(new Set());
    expect((await runById(store.database, a!.runId)).leaseExpiresAtMs).toBe(T0 + LEASE);
    // Reaped: given back to the queue, so a renewal by its old holder reports it lost.
    expect(await reapExpiredLeases(store.database.db, T0 + LEASE + 1)).toBe(2);
    const held = await renewLeases(
      store.database.db,
      'A',
      [a!, b!].map((r) => ({ shard: r.shard, runId: r.runId, attempt: r.attempt, leaseExpiresAtMs: far })),
    );
    expect(held).toEqual(new Set());
    expect(await runById(store.database, a!.runId)).toMatchObject({ status: 'retrying', leaseOwner: null, leaseExpiresAtMs: null });
  });

  it('does nothing for an empty list', async () => {
    expect(await renewLeases(store.database.db, 'A', [])).toEqual(new Set());
  });
});
