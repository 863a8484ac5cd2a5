/**
 * The run queue (src/dispatch/engine/run-queue.ts) on its own, with attempts that end when a test says: per-destination
 * slots, what it holds (`held`, `free`, `unsent()`, `inFlight()`, `saturatedDestinations()`, `destinationRoom()`), waiting for a run's due
 * time on the clock, released runs (and a later claim of a released run), runs whose lease ran out before their slot,
 * abandoned attempts, `slotFreed()` and `drained()`.
 * Time is a ManualClock moved by hand: a run due later is sent only once a test ticks the clock to its due time.
 * (What a destination is, however its URL is spelled: run-queue-destination.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { createRunQueue, type RunQueueOptions } from '../../src/dispatch/engine/run-queue.ts';
import type { AttemptOutcome } from '../../src/domain/attempt-outcome.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { claimed, deferred, ids, isSettled, outcomeOf, settle } from '../support/engine.ts';
import { T0 } from '../support/store.ts';

/** A run queue on a ManualClock at T0 whose attempts end when the test says. */
function queueFixture(options: Partial<RunQueueOptions> = {}) {
  const clock = new ManualClock(T0);
  const attempts = new Map<string, { resolve: (o: AttemptOutcome | null) => void }>();
  const attempted: string[] = [];
  const outcomes: string[] = [];
  const late: string[] = [];
  const queue = createRunQueue({
    clock,
    options: { concurrency: 10, perDestination: 2, backlog: 0, ...options },
    attempt: (run) => {
      attempted.push(run.runId);
      const d = deferred<AttemptOutcome | null>();
      attempts.set(run.runId, d);
      return d.promise;
    },
    onOutcome: (o, run) => {
      expect(o.runId).toBe(run.runId);
      outcomes.push(o.runId);
    },
    onLateOutcome: (o) => late.push(o.runId),
  });
  return {
    clock,
    queue,
    attempted,
    outcomes,
    late,
    /** Ends the attempt of `runId` with a success (or `null`: abandoned). */
    finish(runId: string, outcome: AttemptOutcome | null = outcomeOf(runId)) {
      const a = attempts.get(runId);
      if (!a) throw new Error(`${runId} was not attempted`);
      a.resolve(outcome);
    },
  };
}

describe('run queue', () => {
  it('keeps at most perDestination attempts in flight per destination while other destinations proceed', async () => {
    const f = queueFixture({ perDestination: 2 });
    f.queue.add(claimed('a1', 'https://a.example/one'));
    f.queue.add(claimed('a2', 'https://A.example/two?x=1'));
    f.queue.add(claimed('a3', 'https://a.example/three'));
    f.queue.add(claimed('port', 'https://a.example:8443/one'));
    f.queue.add(claimed('scheme', 'http://a.example/one'));
    f.queue.add(claimed('b1', 'https://b.example/one'));
    await settle();
    expect(f.attempted.sort()).toEqual(['a1', 'a2', 'b1', 'port', 'scheme']);
    expect(f.queue.inFlightByDestination.get('https://a.example')).toBe(2);
    expect(f.queue.inFlightByDestination.get('https://a.example:8443')).toBe(1);
    f.finish('b1');
    f.finish('port');
    await settle();
    expect(f.attempted).not.toContain('a3');
    f.finish('a2');
    await settle();
    // a3 gets the slot a2 freed.
    expect(f.attempted).toContain('a3');
    expect(f.queue.inFlightByDestination.get('https://a.example')).toBe(2);
    expect(f.outcomes.sort()).toEqual(['a2', 'b1', 'port']);
  });

  it('counts waiting, queued and in-flight runs in held and free', async () => {
    const f = queueFixture({ concurrency: 5, perDestination: 1 });
    expect([f.queue.held, f.queue.free]).toEqual([0, 5]);
    f.queue.add(claimed('later', 'https://b.example/', T0 + 1_000));
    f.queue.add(claimed('a1'));
    f.queue.add(claimed('a2'));
    f.queue.add(claimed('a3'));
    await settle();
    expect(f.attempted).toEqual(['a1']);
    expect([f.queue.held, f.queue.free]).toEqual([4, 1]);
    f.finish('a1');
    await settle();
    expect(f.attempted).toEqual(['a1', 'a2']);
    expect([f.queue.held, f.queue.free]).toEqual([3, 2]);
    await f.clock.tick(1_000);
    expect(f.attempted).toEqual(['a1', 'a2', 'later']);
    expect([f.queue.held, f.queue.free]).toEqual([3, 2]);
    f.finish('a2');
    f.finish('later');
    await settle();
    expect(f.attempted).toEqual(['a1', 'a2', 'later', 'a3']);
    f.finish('a3');
    await f.queue.drained();
    expect([f.queue.held, f.queue.free]).toEqual([0, 5]);
  });

  it('lists in unsent() the runs waiting for their due time or a slot, not those in flight', async () => {
    const f = queueFixture({ perDestination: 1 });
    f.queue.add(claimed('later', 'https://b.example/', T0 + 1_000));
    f.queue.add(claimed('a1'));
    f.queue.add(claimed('a2'));
    await settle();
    expect(ids(f.queue.unsent()).sort()).toEqual(['a2', 'later']);
    expect(ids(f.queue.inFlight())).toEqual(['a1']);
    f.finish('a1');
    await settle();
    expect(f.attempted).toEqual(['a1', 'a2']);
    expect(ids(f.queue.unsent())).toEqual(['later']);
    expect(ids(f.queue.inFlight())).toEqual(['a2']);
    // The objects themselves, so a renewal can move their lease.
    const later = f.queue.unsent()[0]!;
    later.leaseExpiresAtMs += 1;
    expect(f.queue.unsent()[0]!.leaseExpiresAtMs).toBe(T0 + 1_000 + 2_000 + 1);
  });

  it('names a destination saturated once its held runs reach its limit, and gives the room left under it', async () => {
    const f = queueFixture({ perDestination: 2 });
    expect(f.queue.destinationRoom('https://a.example')).toBe(2);
    f.queue.add(claimed('a1'));
    f.queue.add(claimed('b1', 'https://b.example/'));
    await settle();
    expect(f.queue.saturatedDestinations()).toEqual([]);
    expect(f.queue.destinationRoom('https://a.example')).toBe(1);
    f.queue.add(claimed('a2'));
    await settle();
    expect(f.queue.saturatedDestinations()).toEqual(['https://a.example']);
    expect(f.queue.destinationRoom('https://a.example')).toBe(0);
    // Runs waiting for their due time count too: they are held, and start soon.
    f.queue.add(claimed('b2', 'https://b.example/', T0 + 1_000));
    await settle();
    expect(f.queue.saturatedDestinations().sort()).toEqual(['https://a.example', 'https://b.example']);
    // Room is never below 0, however many runs are held (a claim elsewhere, a limit that fell).
    f.queue.add(claimed('a3'));
    await settle();
    expect(f.queue.destinationRoom('https://a.example')).toBe(0);
    f.finish('a1');
    await settle();
    expect(f.attempted).toContain('a3');
    f.finish('a2');
    await settle();
    expect(f.queue.saturatedDestinations()).toEqual(['https://b.example']);
    expect(f.queue.destinationRoom('https://a.example')).toBe(1);
  });

  it('never attempts a run released before its slot, and its entry ends', async () => {
    const f = queueFixture({ perDestination: 1 });
    f.queue.add(claimed('a1'));
    f.queue.add(claimed('a2'));
    f.queue.add(claimed('a3'));
    f.queue.add(claimed('later', 'https://b.example/', T0 + 1_000));
    await settle();
    f.queue.release(['a2', 'later']);
    expect(f.queue.isReleased('a2')).toBe(true);
    expect(f.queue.isReleased('a1')).toBe(false);
    expect(ids(f.queue.unsent())).toEqual(['a3']);
    f.finish('a1');
    await settle();
    // a3 gets the slot: a2 gave it up unsent.
    expect(f.attempted).toEqual(['a1', 'a3']);
    await f.clock.tick(1_000);
    f.finish('a3');
    await f.queue.drained();
    expect(f.attempted).toEqual(['a1', 'a3']);
    expect(f.outcomes).toEqual(['a1', 'a3']);
    expect(f.late).toEqual([]);
    expect(f.queue.held).toBe(0);
  });

  it('hands the outcome of a run released while in flight to onLateOutcome, not onOutcome', async () => {
    const f = queueFixture();
    f.queue.add(claimed('a1'));
    f.queue.add(claimed('a2'));
    await settle();
    f.queue.release(['a1']);
    f.finish('a1');
    f.finish('a2');
    await f.queue.drained();
    expect(f.late).toEqual(['a1']);
    expect(f.outcomes).toEqual(['a2']);
  });

  it('does not attempt a run whose lease has run out (lease ≤ now) by the time it gets its slot', async () => {
    const f = queueFixture({ perDestination: 1 });
    f.queue.add(claimed('a1'));
    f.queue.add(claimed('expired', undefined, T0, { leaseExpiresAtMs: T0 + 2_000 }));
    f.queue.add(claimed('renewed', undefined, T0, { leaseExpiresAtMs: T0 + 2_000 }));
    await settle();
    // While they wait, a renewal extends one lease (on the object), and time passes to the other's expiry exactly.
    f.queue.unsent().find((r) => r.runId === 'renewed')!.leaseExpiresAtMs = T0 + 10_000;
    await f.clock.tick(2_000);
    f.finish('a1');
    await settle();
    expect(f.attempted).toEqual(['a1', 'renewed']);
    f.finish('renewed');
    await f.queue.drained();
    expect(f.attempted).toEqual(['a1', 'renewed']);
    expect(f.outcomes).toEqual(['a1', 'renewed']);
  });

  it('waits for a run’s due time by the clock before attempting it', async () => {
    const f = queueFixture();
    f.queue.add(claimed('later', undefined, T0 + 500));
    f.queue.add(claimed('now', undefined, T0));
    await settle();
    expect(f.attempted).toEqual(['now']);
    expect(f.clock.sleeps).toEqual([500]);
    await f.clock.tick(499);
    expect(f.attempted).toEqual(['now']);
    await f.clock.tick(1);
    expect(f.attempted).toEqual(['now', 'later']);
    f.finish('now');
    f.finish('later');
    await f.queue.drained();
  });

  it('ends a run abandoned by its attempt (null) without an outcome', async () => {
    const f = queueFixture();
    f.queue.add(claimed('a1'));
    await settle();
    f.finish('a1', null);
    await f.queue.drained();
    expect(f.outcomes).toEqual([]);
    expect(f.late).toEqual([]);
    expect(f.queue.held).toBe(0);
  });

  it('resolves slotFreed() when a run finishes, or when woken', async () => {
    const f = queueFixture();
    f.queue.add(claimed('a1'));
    await settle();
    const freed = f.queue.slotFreed();
    expect(await isSettled(freed)).toBe(false);
    f.finish('a1');
    await freed;
    expect(f.queue.held).toBe(0);
    const woken = f.queue.slotFreed();
    expect(await isSettled(woken)).toBe(false);
    f.queue.wake();
    await woken;
  });

  it('resolves drained() when every held run is done', async () => {
    const f = queueFixture({ perDestination: 1 });
    await f.queue.drained();
    f.queue.add(claimed('a1'));
    f.queue.add(claimed('a2'));
    f.queue.add(claimed('later', 'https://b.example/', T0 + 1_000));
    const drained = f.queue.drained();
    await settle();
    expect(f.attempted).toEqual(['a1']);
    f.finish('a1');
    await settle();
    expect(f.attempted).toEqual(['a1', 'a2']);
    f.finish('a2');
    expect(await isSettled(drained)).toBe(false);
    // A run added while drained() waits is waited for too.
    f.queue.add(claimed('added', 'https://c.example/'));
    await f.clock.tick(1_000);
    expect(f.attempted.sort()).toEqual(['a1', 'a2', 'added', 'later']);
    f.finish('later');
    expect(await isSettled(drained)).toBe(false);
    f.finish('added');
    await drained;
    expect(f.queue.held).toBe(0);
    expect(f.outcomes.sort()).toEqual(['a1', 'a2', 'added', 'later']);
  });
});

describe('run queue regressions', () => {
  it('a run released once is sent when the same queue gets a later claim of it (release is per claim)', async () => {
    const attempted: string[] = [];
    const blocker = deferred();
    const q = createRunQueue({
      clock: new ManualClock(T0),
      options: { concurrency: 10, perDestination: 1, backlog: 0 },
      attempt: async (r) => {
        attempted.push(`${r.runId}#${r.attempt}`);
        if (r.runId === 'blocker') await blocker.promise;
        return outcomeOf(r.runId);
      },
      onOutcome: () => {},
    });
    q.add(claimed('blocker'));
    q.add(claimed('r1', undefined, T0, { attempt: 1, leaseExpiresAtMs: T0 + 60_000 }));
    await settle();
    q.release(['r1']); // the lease keeper found its lease lost
    blocker.resolve();
    await q.drained();
    q.add(claimed('r1', undefined, T0, { attempt: 2, leaseExpiresAtMs: T0 + 60_000 })); // given back by a reaper, claimed again
    await q.drained();
    expect(attempted).toEqual(['blocker#1', 'r1#2']);
  });
});
