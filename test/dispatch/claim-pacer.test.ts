/**
 * The claim pacer (src/dispatch/engine/claim-pacer.ts) on its own, with injected store reads and a fake run queue:
 * - `claimBatch`: its arguments (owner, limit, now, horizon, margin, the Rotation, the destinations to skip), the due
 *   buckets read unless given, the store's error;
 * - the loop: claim again at once after a full claim, read the due buckets after a partial one and claim at once what
 *   is due, or sleep on the due time the partial claim told (`withTold`) until a wake-up is asked for or `pollMs`
 *   passes; keep a read for the claims until then and through a sleep that ran its time (not a woken one), back off
 *   after a failing claim, wait for a slot when the queue is full and for a quarter batch of slots for a few ms, look
 *   past saturated destinations at most every interval, stop at once while it sleeps; pass the queue's destination
 *   room to each claim and, once a look past saturated destinations found nothing, claim their room and one more;
 * - `claimWaitMs` at its edges (the rest: claim-wait.test.ts).
 * Time is a ManualClock moved by hand: the pacer's sleeps (its Wakeup's, the slot gathering, the error backoff) end only
 * when a test ticks the clock past them, or when woken.
 */
import { describe, expect, it } from 'vitest';
import {
  type ClaimPacer,
  type ClaimPacerDeps,
  CONTENDED_SLEEP_MS,
  claimBatch,
  claimWaitMs,
  createClaimPacer,
  withTold,
} from '../../src/dispatch/engine/claim-pacer.ts';
import { Wakeup } from '../../src/dispatch/engine/wakeup.ts';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { type BucketDue, Rotation } from '../../src/domain/fair-share.ts';
import type { Db } from '../../src/store/db.ts';
import type { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { claimed, ids, isSettled, noDb, settle } from '../support/engine.ts';
import { recordingLogger } from '../support/logger.ts';
import { T0 } from '../support/store.ts';

/** The part of a run queue the pacer uses, with `free` set by the test. */
function fakeQueue(free: number, saturated: string[] = []) {
  let waiter: (() => void) | null = null;
  const q = {
    free,
    added: [] as ClaimedRun[],
    saturated,
    slotWaits: 0,
    add(run: ClaimedRun) {
      q.added.push(run);
      q.free--;
    },
    slotFreed() {
      q.slotWaits++;
      return new Promise<void>((r) => (waiter = r));
    },
    wake() {
      const w = waiter;
      waiter = null;
      w?.();
    },
    saturatedDestinations: () => q.saturated,
    /** A held run finished. */
    freeSlot() {
      q.free++;
      q.wake();
    },
  };
  return q;
}

type ClaimArgs = Parameters<typeof claimRuns>[1];

/**
 * Fake store reads for the pacer: each claim and due-bucket read is logged in `events`, in order; `claims` answers
 * each claim (by call number, from 1), `due` each read.
 */
function fakeStore(
  claims: (args: ClaimArgs, call: number) => ClaimedRun[] | Promise<ClaimedRun[]>,
  due: (call: number) => BucketDue[] = () => [],
) {
  const events: string[] = [];
  const claimCalls: ClaimArgs[] = [];
  let dueCalls = 0;
  return {
    events,
    claimCalls,
    store: {
      claimRuns: async (db: Db, args: ClaimArgs) => {
        expect(db).toBe(noDb);
        claimCalls.push(args);
        events.push(`claim ${args.limit}`);
        return claims(args, claimCalls.length);
      },
      dueBuckets: async (db: Db) => {
        expect(db).toBe(noDb);
        events.push('due');
        return due(++dueCalls);
      },
    },
  };
}

const pacerOptions = { owner: 'owner-1', batchSize: 2, leaseMarginMs: 5_000, lookaheadMs: 250, pollMs: 60_000 };

/** Runs r<from>… r<from+n-1>. */
const batch = (from: number, n: number) => Array.from({ length: n }, (_, i) => claimed(`r${from + i}`));

/** A pacer on a ManualClock at T0 over `store` and `queue`, with its own Wakeup and a recording logger. */
function pacerOf(store: ReturnType<typeof fakeStore>['store'], queue: ReturnType<typeof fakeQueue>, o: Partial<typeof pacerOptions> = {}) {
  const clock = new ManualClock(T0);
  const wakeup = new Wakeup(clock);
  const logger = recordingLogger();
  const pacer = createClaimPacer({ db: noDb, clock, logger, wakeup, queue, options: { ...pacerOptions, ...o }, store });
  return { clock, wakeup, logger, pacer };
}

/** Stops `pacer`, which must end within a turn of the event loop, the clock standing still. */
async function stopAtOnce(pacer: ClaimPacer): Promise<void> {
  const stopped = pacer.stop();
  expect(await isSettled(stopped)).toBe(true);
  await stopped;
}

describe('claimBatch', () => {
  /** claimBatch's dependencies on `clock` and `store`. */
  const depsOf = (clock: ManualClock, store: ClaimPacerDeps['store'], observeClaim?: (sec: number) => void) => ({
    db: noDb,
    clock,
    logger: recordingLogger(),
    options: pacerOptions,
    store,
    observeClaim,
  });

  it('passes owner, limit, now, horizon, margin, skipped destinations and the Rotation given, and returns every run claimed', async () => {
    const clock = new ManualClock(T0);
    const s = fakeStore((_args, call) => (call === 1 ? batch(1, 3) : batch(4, 1)));
    const observed: number[] = [];
    const deps = depsOf(clock, s.store, (sec) => observed.push(sec));
    const rotation = new Rotation();
    expect(ids(await claimBatch(deps, { limit: 5, horizonMs: 250, rotation }))).toEqual(['r1', 'r2', 'r3']);
    clock.advance(1_000);
    expect(ids(await claimBatch(deps, { limit: 3, horizonMs: 0, rotation, skipDestinations: ['https://a.example'] }))).toEqual(['r4']);
    expect(s.claimCalls).toHaveLength(2);
    expect(s.claimCalls[0]).toMatchObject({
      owner: 'owner-1',
      limit: 5,
      nowMs: T0,
      horizonMs: 250,
      leaseMarginMs: 5_000,
      skipDestinations: [],
    });
    expect(s.claimCalls[1]).toMatchObject({
      owner: 'owner-1',
      limit: 3,
      nowMs: T0 + 1_000,
      horizonMs: 0,
      leaseMarginMs: 5_000,
      skipDestinations: ['https://a.example'],
    });
    expect(s.claimCalls[0]!.rotation).toBe(rotation);
    expect(s.claimCalls[1]!.rotation).toBe(rotation);
    expect(observed).toEqual([0, 0]);
  });

  it('reads the due buckets for its claim unless it is given them', async () => {
    const read: BucketDue[] = [{ shard: 1, dueAtMs: T0 }];
    const given: BucketDue[] = [{ shard: 2, dueAtMs: T0 + 40 }];
    const s = fakeStore(
      () => [],
      () => read,
    );
    const deps = depsOf(new ManualClock(T0), s.store);
    await claimBatch(deps, { limit: 5, horizonMs: 0, rotation: new Rotation() });
    await claimBatch(deps, { limit: 5, horizonMs: 0, rotation: new Rotation(), buckets: given });
    expect(s.events).toEqual(['due', 'claim 5', 'claim 5']);
    expect(s.claimCalls.map((c) => c.buckets)).toEqual([read, given]);
  });

  it('throws the store’s error', async () => {
    const s = fakeStore(() => {
      throw new Error('database down');
    });
    const observed: number[] = [];
    await expect(
      claimBatch(
        depsOf(new ManualClock(T0), s.store, (sec) => observed.push(sec)),
        { limit: 5, horizonMs: 0, rotation: new Rotation() },
      ),
    ).rejects.toThrow('database down');
    expect(observed).toEqual([]);
  });
});

describe('claim pacer', () => {
  it('claims again at once after a full claim, and reads the due buckets to sleep only after a partial one', async () => {
    const queue = fakeQueue(5);
    const s = fakeStore((args, call) => (call <= 2 ? batch(call * 10, args.limit) : []));
    const { clock, pacer } = pacerOf(s.store, queue);
    pacer.start();
    await settle();
    // The first claim reads the buckets; limits are the batch size (2) twice, then the one free slot left.
    expect(s.events).toEqual(['due', 'claim 2', 'claim 2', 'claim 1', 'due']);
    expect(queue.added).toHaveLength(4);
    // Nothing due: it sleeps for pollMs.
    expect(clock.sleeps).toEqual([60_000]);
    await stopAtOnce(pacer);
    expect(s.events).toEqual(['due', 'claim 2', 'claim 2', 'claim 1', 'due']);
  });

  it('after a partial claim reads the due buckets and claims at once what is due, with the buckets it read', async () => {
    const queue = fakeQueue(10);
    const read = [[{ shard: 1, dueAtMs: T0 - 5 }], [{ shard: 3, dueAtMs: T0 - 1 }]];
    const s = fakeStore(
      (_, call) => (call === 1 ? batch(1, 1) : []),
      (call) => read[call - 1] ?? [],
    );
    const { clock, pacer } = pacerOf(s.store, queue);
    pacer.start();
    await settle();
    expect(s.events).toEqual(['due', 'claim 2', 'due', 'claim 2', 'due']);
    expect(s.claimCalls.map((c) => c.buckets)).toEqual([read[0], read[1]]);
    expect(ids(queue.added)).toEqual(['r1']);
    expect(clock.sleeps).toEqual([60_000]);
    await stopAtOnce(pacer);
  });

  it('keeps the due buckets it read for the claims that follow, until a wake-up is asked for or pollMs has passed by the clock', async () => {
    const queue = fakeQueue(20);
    const read = [[{ shard: 1, dueAtMs: T0 }], [{ shard: 2, dueAtMs: T0 + 40 }], [{ shard: 3, dueAtMs: T0 + 40 }]];
    let fixture!: ReturnType<typeof pacerOf>;
    // Full claims; the first takes 999 ms, the second 1 ms (the clock moves while they run); a run is announced
    // during the third.
    const s = fakeStore(
      (args, call) => {
        if (call === 1) fixture.clock.advance(999);
        if (call === 2) fixture.clock.advance(1);
        if (call === 3) fixture.wakeup.wakeBy(T0 + 30_000);
        return call <= 4 ? batch(call * 10, args.limit) : [];
      },
      (call) => read[call - 1] ?? [],
    );
    fixture = pacerOf(s.store, queue, { pollMs: 1_000 });
    fixture.pacer.start();
    await settle();
    // The second claim starts 999 ms after the read: it uses it; the third, 1,000 ms after: it reads again; the fourth
    // follows the announcement: it reads again.
    expect(s.events.slice(0, 7)).toEqual(['due', 'claim 2', 'claim 2', 'due', 'claim 2', 'due', 'claim 2']);
    expect(s.claimCalls.slice(0, 4).map((c) => c.buckets)).toEqual([read[0], read[0], read[1], read[2]]);
    await stopAtOnce(fixture.pacer);
  });

  it('claims with the due buckets read before a sleep that ran its time, however old', async () => {
    // The first claim is partial; the read after it finds a run entering the lookahead in 150 ms (a 150 ms sleep).
    const read = [[{ shard: 1, dueAtMs: T0 - 5 }], [{ shard: 3, dueAtMs: T0 + 400 }]];
    const s = fakeStore(
      (_, call) => (call === 1 ? batch(1, 1) : []),
      (call) => read[call - 1] ?? [],
    );
    const { clock, pacer } = pacerOf(s.store, fakeQueue(10));
    pacer.start();
    await settle();
    expect(s.events).toEqual(['due', 'claim 2', 'due']);
    expect(clock.sleeps).toEqual([150]);
    await clock.tick(149);
    expect(s.events).toHaveLength(3);
    // 150 ms old, past the 50 ms a read serves otherwise: still the one the claim after the sleep uses.
    await clock.tick(1);
    expect(s.events).toEqual(['due', 'claim 2', 'due', 'claim 2', 'due']);
    expect(s.claimCalls.map((c) => c.buckets)).toEqual([read[0], read[1]]);
    expect(s.claimCalls[1]!.nowMs).toBe(T0 + 150);
    await stopAtOnce(pacer);
  });

  it('reads the due buckets again before the claim after a sleep that was woken', async () => {
    const read = [[{ shard: 1, dueAtMs: T0 - 5 }], [{ shard: 3, dueAtMs: T0 + 400 }], [{ shard: 4, dueAtMs: T0 + 10 }]];
    const s = fakeStore(
      (_, call) => (call === 1 ? batch(1, 1) : []),
      (call) => read[call - 1] ?? [],
    );
    const { wakeup, pacer } = pacerOf(s.store, fakeQueue(10));
    pacer.start();
    await settle();
    expect(s.events).toEqual(['due', 'claim 2', 'due']);
    // Woken during the sleep (a run announced), the clock standing still.
    wakeup.wake();
    await settle();
    expect(s.events).toEqual(['due', 'claim 2', 'due', 'due', 'claim 2', 'due']);
    expect(s.claimCalls.map((c) => c.buckets)).toEqual([read[0], read[2]]);
    await stopAtOnce(pacer);
  });

  it('sleeps until the due time its last claim told, without reading the buckets, and reads them again after pollMs', async () => {
    // Steady traffic in bucket 1: each claim takes one run and tells the next, 300 ms after the last.
    const s = fakeStore(
      (args, call) => {
        args.onBucketDue?.(1, T0 + 300 * call);
        return batch(call, 1);
      },
      (call) => (call === 1 ? [{ shard: 1, dueAtMs: T0 }] : []),
    );
    const { clock, pacer } = pacerOf(s.store, fakeQueue(100), { pollMs: 1_000 });
    pacer.start();
    await settle();
    // The run told enters the lookahead (250 ms) in 50 ms: the sleep follows it, no read.
    expect(s.events).toEqual(['due', 'claim 2']);
    expect(clock.sleeps).toEqual([50]);
    await clock.tick(50);
    expect(s.events).toEqual(['due', 'claim 2', 'claim 2']);
    expect(s.claimCalls[1]!.buckets).toEqual([{ shard: 1, dueAtMs: T0 + 300 }]);
    // Each claim 300 ms after the last, by what the claims told, until the read is a poll old (1,000 ms): the sleep
    // after the claim at 1,250 ms is planned on a read.
    for (const ms of [350, 650, 950]) {
      await clock.tick(300);
      expect(clock.now() - T0).toBe(ms);
    }
    expect(s.events).toEqual(['due', 'claim 2', 'claim 2', 'claim 2', 'claim 2', 'claim 2']);
    await clock.tick(300);
    expect(s.events).toEqual(['due', 'claim 2', 'claim 2', 'claim 2', 'claim 2', 'claim 2', 'claim 2', 'due']);
    await stopAtOnce(pacer);
  });

  it('reads the buckets before the sleep after a claim when a wake-up was asked for since its read, or a bucket could not tell', async () => {
    const told: (number | undefined)[] = [T0 + 300, T0 + 600, undefined];
    const read = [[{ shard: 1, dueAtMs: T0 }], [{ shard: 1, dueAtMs: T0 + 600 }]];
    const s = fakeStore(
      (args, call) => {
        args.onBucketDue?.(1, told[call - 1]);
        return batch(call, 1);
      },
      (call) => read[call - 1] ?? [],
    );
    const { clock, wakeup, pacer } = pacerOf(s.store, fakeQueue(100));
    pacer.start();
    await settle();
    expect(s.events).toEqual(['due', 'claim 2']);
    // A run announced due later than the sleep's end: the sleep goes on, but the next sleep is planned on a read.
    wakeup.wakeBy(T0 + 30_000);
    await clock.tick(50);
    expect(s.events).toEqual(['due', 'claim 2', 'claim 2', 'due']);
    // The read serves the claim after the sleep; that claim cannot tell: read again.
    await clock.tick(300);
    expect(s.events).toEqual(['due', 'claim 2', 'claim 2', 'due', 'claim 2', 'due']);
    expect(s.claimCalls[2]!.buckets).toEqual(read[1]);
    await stopAtOnce(pacer);
  });

  it('logs a failing claim and retries it after a backoff by the clock', async () => {
    const queue = fakeQueue(10);
    const failure = new Error('database down');
    const s = fakeStore((_, call) => {
      if (call === 1) throw failure;
      return call === 2 ? batch(1, 1) : [];
    });
    const { clock, logger: log, pacer } = pacerOf(s.store, queue);
    pacer.start();
    await settle();
    const failed = log.entries.filter((e) => e.msg === 'claim failed; retrying');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ level: 'error', fields: { err: failure, backoffMs: 100 } });
    expect(clock.sleeps).toEqual([100]);
    await clock.tick(99);
    expect(s.events).toEqual(['due', 'claim 2']);
    await clock.tick(1);
    // The failed claim's buckets are read again for the retry.
    expect(s.events).toEqual(['due', 'claim 2', 'due', 'claim 2', 'due']);
    expect(ids(queue.added)).toEqual(['r1']);
    await stopAtOnce(pacer);
  });

  it('stop() resolves at once while the loop sleeps, and nothing is claimed after it', async () => {
    const s = fakeStore(() => []);
    const { clock, pacer } = pacerOf(s.store, fakeQueue(10));
    pacer.start();
    await settle();
    // Nothing due: the loop sleeps for pollMs (a minute).
    expect(s.events).toEqual(['due', 'claim 2', 'due']);
    expect(clock.pendingTimers).toBe(1);
    await stopAtOnce(pacer);
    expect(clock.pendingTimers).toBe(0);
    await clock.tick(120_000);
    expect(s.events).toEqual(['due', 'claim 2', 'due']);
  });

  it('waits for slotFreed() instead of claiming while the queue has no free slot', async () => {
    const queue = fakeQueue(0);
    const s = fakeStore(() => batch(1, 1));
    const { pacer } = pacerOf(s.store, queue);
    pacer.start();
    await settle();
    expect(queue.slotWaits).toBe(1);
    expect(s.claimCalls).toEqual([]);
    queue.freeSlot();
    await settle();
    // One slot: a full claim of 1, then no slot again.
    expect(s.claimCalls.map((c) => c.limit)).toEqual([1]);
    expect(queue.slotWaits).toBe(2);
    // stop() ends the wait for a slot.
    await stopAtOnce(pacer);
    expect(s.claimCalls).toHaveLength(1);
  });

  it('with fewer free slots than a quarter batch, waits for more before claiming, for a few ms by the clock', async () => {
    const queue = fakeQueue(1);
    const s = fakeStore((args) => batch(1, args.limit));
    const { clock, pacer } = pacerOf(s.store, queue, { batchSize: 8 });
    pacer.start();
    await settle();
    expect(queue.slotWaits).toBe(1);
    expect(clock.sleeps).toEqual([5]);
    expect(s.claimCalls).toEqual([]);
    // A second slot makes a quarter batch (2): claimed at once.
    queue.freeSlot();
    await settle();
    expect(s.claimCalls.map((c) => c.limit)).toEqual([2]);
    // Full again; one slot frees and the clock stands still: no claim.
    queue.freeSlot();
    await clock.tick(4);
    expect(s.claimCalls).toHaveLength(1);
    // Once the wait is over by the clock, the one slot is claimed.
    await clock.tick(1);
    expect(s.claimCalls.map((c) => c.limit)).toEqual([2, 1]);
    await stopAtOnce(pacer);
  });

  it('with a destination saturated, claims past it, then not again until the interval has passed by the clock', async () => {
    const queue = fakeQueue(10, ['https://a.example']);
    const s = fakeStore(
      () => [],
      () => [{ shard: 0, dueAtMs: T0 }],
    );
    const { clock, pacer } = pacerOf(s.store, queue);
    pacer.start();
    await settle();
    expect(s.claimCalls).toHaveLength(1);
    expect(s.claimCalls[0]!.skipDestinations).toEqual(['https://a.example']);
    // Only the saturated destination has due runs: the loop waits for one of its slots.
    expect(queue.slotWaits).toBe(1);
    // A slot freeing wakes the loop, but the clock stands still: no claim.
    queue.freeSlot();
    await settle();
    expect(queue.slotWaits).toBe(2);
    expect(s.claimCalls).toHaveLength(1);
    // The claim past it found nothing: the interval doubled (100 ms, then 200 ms).
    await clock.tick(199);
    expect(s.claimCalls).toHaveLength(1);
    await clock.tick(1);
    expect(s.claimCalls).toHaveLength(2);
    expect(s.claimCalls[1]).toMatchObject({ nowMs: T0 + 200, skipDestinations: ['https://a.example'] });
    await stopAtOnce(pacer);
  });
});

describe('the claim pacer and destination room', () => {
  it("passes the queue's destinationRoom to its claims; after an empty look past saturated destinations, a freed slot brings a claim of their room and one more", async () => {
    const queue = Object.assign(fakeQueue(100, ['https://a.example']), {
      destinationRoom: (d: string) => (d === 'https://a.example' ? 3 : 16),
      heldRoom: () => 3,
    });
    const s = fakeStore(
      (_args, call) => (call === 2 ? [claimed('b1', 'https://b.example/x')] : []),
      () => [{ shard: 0, dueAtMs: T0 }],
    );
    const { pacer } = pacerOf(s.store, queue, { batchSize: 10 });
    pacer.start();
    await settle();
    expect(s.claimCalls).toHaveLength(1);
    expect(s.claimCalls[0]).toMatchObject({ limit: 10, skipDestinations: ['https://a.example'] });
    expect(s.claimCalls[0]!.destinationRoom).toBe(queue.destinationRoom);
    // It found nothing: the loop waits for a slot of the saturated destination, which frees one.
    expect(queue.slotWaits).toBe(1);
    queue.saturated = [];
    queue.freeSlot();
    await settle();
    expect(s.claimCalls[1]).toMatchObject({ limit: 4, skipDestinations: [] });
    expect(s.claimCalls[1]!.destinationRoom).toBe(queue.destinationRoom);
    // The one more was another destination's run: others have runs due, the next claim is a full one.
    await settle();
    expect(s.claimCalls[2]).toMatchObject({ limit: 10, skipDestinations: [] });
    await stopAtOnce(pacer);
  });
});

describe('withTold', () => {
  it('puts each bucket a claim told at its due time, drops one with none left, and keeps the others and those it could not tell', () => {
    const before = [
      { shard: 1, dueAtMs: T0 },
      { shard: 2, dueAtMs: T0 + 5_000, flows: true },
      { shard: 3, dueAtMs: T0 + 10 },
      { shard: 4, dueAtMs: T0 + 20 },
    ];
    const told = new Map<number, number | null | undefined>([
      [3, T0 + 900],
      [1, null],
      [4, undefined],
    ]);
    expect(withTold(before, told)).toEqual([
      { shard: 2, dueAtMs: T0 + 5_000, flows: true },
      { shard: 3, dueAtMs: T0 + 900 },
      { shard: 4, dueAtMs: T0 + 20 },
    ]);
  });
});

describe('claimWaitMs', () => {
  it('polls with nothing due, claims a due run at once, and pauses briefly when contended', () => {
    const o = { lookaheadMs: 250, pollMs: 2_000 };
    expect(claimWaitMs(null, T0, o, true)).toBe(2_000);
    expect(claimWaitMs(T0, T0, o, true)).toBe(0);
    expect(claimWaitMs(T0, T0, o, false)).toBe(CONTENDED_SLEEP_MS);
    expect(claimWaitMs(T0 + 10_000, T0, o, true)).toBe(2_000);
  });
});
