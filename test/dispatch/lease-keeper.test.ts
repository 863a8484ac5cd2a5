/**
 * The lease keeper (src/dispatch/engine/lease-keeper.ts):
 * - against a database that fails (no database needed): `round()` never throws, a failed renewal and reap are logged,
 *   nothing is released; no renewal without unsent runs; `start()` runs a round every `intervalMs` on the clock until
 *   `stop()`;
 * - on every database target: renewal of the unsent runs' leases (on the database and the run objects), release of the
 *   runs whose lease was lost, reaping of any owner's expired leases (`round()` and `reapOnce`).
 * Time is a ManualClock moved by hand: rounds come only when a test ticks the clock past `intervalMs`.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { createLeaseKeeper, reapOnce } from '../../src/dispatch/engine/lease-keeper.ts';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { createJob } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { reapExpiredLeases } from '../../src/store/queue/reap-leases.ts';
import { renewLeases } from '../../src/store/queue/renew-leases.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { claimed, downDb } from '../support/engine.ts';
import { recordingLogger } from '../support/logger.ts';
import { runById, T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

describe('lease keeper without a database', () => {
  it('round() never throws: a failed renewal (each bucket) and a failed reap are logged, nothing is released', async () => {
    const log = recordingLogger();
    const released: string[] = [];
    const run = claimed('a1');
    const keeper = createLeaseKeeper({
      db: downDb,
      clock: new ManualClock(T0),
      logger: log,
      options: { owner: 'owner-1', leaseMarginMs: 1_000, intervalMs: 60_000 },
      unsent: () => [run],
      release: (xs) => released.push(...xs),
    });
    await keeper.round();
    expect(log.entries.map((e) => [e.level, e.msg])).toEqual([
      ['error', 'renewing the leases of queued runs failed in one bucket; the others were renewed'],
      ['error', 'reaper failed'],
    ]);
    expect(released).toEqual([]);
    expect(run.leaseExpiresAtMs).toBe(T0 + 2_000);
    await expect(keeper.reap()).rejects.toThrow('database down');
  });

  it('renews nothing when no run is unsent', async () => {
    const log = recordingLogger();
    const keeper = createLeaseKeeper({
      db: downDb,
      clock: new ManualClock(T0),
      logger: log,
      options: { owner: 'owner-1', leaseMarginMs: 1_000, intervalMs: 60_000 },
      unsent: () => [],
      release: () => {},
    });
    await keeper.round();
    expect(log.entries.map((e) => e.msg)).toEqual(['reaper failed']);
  });

  it('start() runs rounds every intervalMs by the clock until stop()', async () => {
    const log = recordingLogger();
    const clock = new ManualClock(T0);
    const keeper = createLeaseKeeper({
      db: downDb,
      clock,
      logger: log,
      options: { owner: 'owner-1', leaseMarginMs: 1_000, intervalMs: 10 },
      unsent: () => [],
      release: () => {},
    });
    keeper.start();
    try {
      await clock.tick(9);
      expect(log.entries).toEqual([]);
      await clock.tick(1);
      expect(log.entries).toHaveLength(1);
      await clock.tick(10);
      expect(log.entries).toHaveLength(2);
    } finally {
      await keeper.stop();
    }
    expect(clock.pendingTimers).toBe(0);
    await clock.tick(100);
    expect(log.entries).toHaveLength(2);
    expect(log.entries.every((e) => e.msg === 'reaper failed')).toBe(true);
  });
});

/** Lease = callback timeout (1000 ms) + this margin. */
const MARGIN = 500;
const LEASE = 1_000 + MARGIN;

describe.each(DATABASE_TARGETS)('lease keeper on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  /** The keepers' clock, at T0 for each test (the store's own is not used: the jobs and claims below name their times). */
  let clock: ManualClock;

  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });
  beforeEach(() => {
    clock = new ManualClock(T0);
  });

  const job = () => createJob(store.ctx, tenantId, testJobSpec(T0, { callback: { timeoutMs: 1_000 } }), T0);
  const claim = (owner: string) => claimRuns(store.database.db, { owner, limit: 100, nowMs: T0, leaseMarginMs: MARGIN });

  function keeperOf(unsent: ClaimedRun[]) {
    const log = recordingLogger();
    const released: string[] = [];
    const reaped: number[] = [];
    const keeper = createLeaseKeeper({
      db: store.database.db,
      clock,
      logger: log,
      options: { owner: 'A', leaseMarginMs: MARGIN, intervalMs: 60_000 },
      unsent: () => unsent,
      release: (xs) => released.push(...xs),
      onReaped: (n) => reaped.push(n),
    });
    return { keeper, log, released, reaped };
  }

  it('round() extends the leases of the unsent runs the owner holds, on the database and on the run objects', async () => {
    await job();
    await job();
    const runs = await claim('A');
    expect(runs).toHaveLength(2);
    expect(runs.map((r) => r.leaseExpiresAtMs)).toEqual([T0 + LEASE, T0 + LEASE]);
    const k = keeperOf(runs);
    clock.set(T0 + 800);
    await k.keeper.round();
    for (const r of runs) {
      expect(r.leaseExpiresAtMs).toBe(T0 + 800 + LEASE);
      expect(await runById(store.database, r.runId)).toMatchObject({
        status: 'running',
        leaseOwner: 'A',
        leaseExpiresAtMs: T0 + 800 + LEASE,
      });
    }
    expect(k.released).toEqual([]);
    expect(k.reaped).toEqual([]);
    expect(k.log.entries).toEqual([]);
    // Renewed, they outlive their first lease: a round past it reaps nothing.
    clock.set(T0 + LEASE + 100);
    await k.keeper.round();
    expect(k.reaped).toEqual([]);
    expect((await runById(store.database, runs[0]!.runId)).status).toBe('running');
  });

  it('round() releases the runs whose lease was lost, and leaves their objects alone', async () => {
    await job();
    await job();
    const [kept, lost] = await claim('A');
    // `kept` was renewed in time; `lost` was not, and another dispatcher's reaper took it back.
    await renewLeases(store.database.db, 'A', [
      { shard: kept!.shard, runId: kept!.runId, attempt: kept!.attempt, leaseExpiresAtMs: T0 + 10 * LEASE },
    ]);
    expect(await reapExpiredLeases(store.database.db, T0 + LEASE + 1)).toBe(1);
    const k = keeperOf([kept!, lost!]);
    clock.set(T0 + LEASE + 2);
    await k.keeper.round();
    expect(k.released).toEqual([lost!.runId]);
    expect(lost!.leaseExpiresAtMs).toBe(T0 + LEASE);
    // The object takes the lease the round asked for (the database keeps the longer one it had).
    expect(kept!.leaseExpiresAtMs).toBe(T0 + LEASE + 2 + LEASE);
    expect((await runById(store.database, kept!.runId)).leaseExpiresAtMs).toBe(T0 + 10 * LEASE);
    expect(await runById(store.database, lost!.runId)).toMatchObject({ status: 'retrying', leaseOwner: null });
  });

  it('round() reaps expired leases of any owner and reports them to onReaped', async () => {
    await job();
    await job();
    const runs = await claim('B');
    const k = keeperOf([]);
    clock.set(T0 + LEASE - 1);
    await k.keeper.round();
    expect(k.reaped).toEqual([]);
    clock.set(T0 + LEASE + 1);
    await k.keeper.round();
    expect(k.reaped).toEqual([2]);
    for (const r of runs) expect(await runById(store.database, r.runId)).toMatchObject({ status: 'retrying', leaseOwner: null });
    expect(k.log.entries.map((e) => [e.level, e.msg, e.fields.runs])).toEqual([['warn', 'reclaimed runs whose lease expired', 2]]);
  });

  it('reapOnce reaps the leases expired by the clock, logs them and returns how many', async () => {
    await job();
    const [run] = await claim('B');
    const log = recordingLogger();
    clock.set(T0 + LEASE);
    expect(await reapOnce({ db: store.database.db, clock, logger: log })).toBe(0);
    expect(log.entries).toEqual([]);
    clock.set(T0 + LEASE + 1);
    expect(await reapOnce({ db: store.database.db, clock, logger: log })).toBe(1);
    expect(await runById(store.database, run!.runId)).toMatchObject({ status: 'retrying', leaseOwner: null });
    expect(log.entries.map((e) => [e.level, e.msg, e.fields.runs])).toEqual([['warn', 'reclaimed runs whose lease expired', 1]]);
  });
});
