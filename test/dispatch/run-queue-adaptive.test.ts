/**
 * The run queue's adaptive per-destination limit (issue #34 points 2 and 6) on a ManualClock, with attempts that end
 * when a test says: a 429 takes slots away (released slots are not handed on until fewer than the new limit run), answers
 * give them back (waiters admitted as the limit grows), switched off nothing changes; `limitByDestination` names the
 * destinations held; the room a claim may fill is the limit less the runs held, plus, for a destination that answers
 * fast, the runs its slots free within `soonMs` (at most `backlog`), and it counts as saturated only once that room is
 * below half its backlog (no claim per callback).
 */
import { describe, expect, it } from 'vitest';
import { createRunQueue, type RunQueueOptions } from '../../src/dispatch/engine/run-queue.ts';
import type { AttemptOutcome } from '../../src/domain/attempt-outcome.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { claimed, deferred, outcomeOf, settle } from '../support/engine.ts';
import { T0 } from '../support/store.ts';

const A = 'https://a.example';

/** A queue on a ManualClock at T0 whose attempts end when the test says; `inFlight()` counts a's requests under way. */
function fixture(options: Partial<RunQueueOptions>) {
  const attempts = new Map<string, (o: AttemptOutcome | null) => void>();
  const attempted: string[] = [];
  const queue = createRunQueue({
    clock: new ManualClock(T0),
    options: { concurrency: 100, perDestination: 4, backlog: 0, adaptive: true, ...options },
    attempt: (run) => {
      attempted.push(run.runId);
      const d = deferred<AttemptOutcome | null>();
      attempts.set(run.runId, d.resolve);
      return d.promise;
    },
    onOutcome: () => {},
  });
  const add = (n: number, prefix = 'r') => {
    for (let i = 0; i < n; i++) queue.add(claimed(`${prefix}${i}`));
  };
  /** Ends the oldest attempt not ended yet with `status` (5 ms after its start). */
  const answer = async (status: number) => {
    const [id, resolve] = attempts.entries().next().value!;
    attempts.delete(id);
    resolve({ ...outcomeOf(id), responseStatus: status });
    await settle();
  };
  return { queue, attempted, add, answer, inFlight: () => queue.inFlightByDestination.get(A) ?? 0 };
}

describe('the run queue with adaptive limits', () => {
  it('takes slots away on a 429 and gives them back as answers come within the usual latency', async () => {
    const f = fixture({ perDestination: 4 });
    f.add(20);
    await settle();
    expect(f.attempted).toHaveLength(4);
    expect(f.queue.limitByDestination).toEqual(new Map([[A, 4]]));
    // 4 × 0.9 = 3.6: three slots; the rejected request's slot is not handed on.
    await f.answer(429);
    expect(f.queue.limitByDestination.get(A)).toBe(3);
    expect(f.inFlight()).toBe(3);
    expect(f.attempted).toHaveLength(4);
    // Each answer frees a slot for the next waiter, and grows the limit by 0.2 / 3.6 (cautious: below the last pushback).
    const seen: number[] = [];
    for (let i = 0; i < 12; i++) {
      await f.answer(200);
      seen.push(f.inFlight());
    }
    expect(f.queue.limitByDestination.get(A)).toBe(4);
    // The growth to 4 let one more waiter in than the answers freed.
    expect(seen[0]).toBe(3);
    expect(seen.at(-1)).toBe(4);
    expect(f.attempted).toHaveLength(4 + 12 + 1);
  });

  it('switched off, keeps perDestination slots whatever the answers', async () => {
    const f = fixture({ perDestination: 4, adaptive: false });
    f.add(10);
    await settle();
    for (let i = 0; i < 3; i++) await f.answer(429);
    expect(f.inFlight()).toBe(4);
    expect(f.queue.limitByDestination.get(A)).toBe(4);
  });

  it('gives as room the limit less the runs held, and names only destinations held in limitByDestination', async () => {
    const f = fixture({ perDestination: 4 });
    expect(f.queue.destinationRoom(A)).toBe(4);
    expect(f.queue.limitByDestination.size).toBe(0);
    f.add(3);
    await settle();
    expect(f.queue.destinationRoom(A)).toBe(1);
    expect(f.queue.saturatedDestinations()).toEqual([]);
    f.add(1, 'more');
    await settle();
    expect(f.queue.destinationRoom(A)).toBe(0);
    expect(f.queue.saturatedDestinations()).toEqual([A]);
    // A 429 lowers the limit to 3 with 3 held: still no room, however many runs are held.
    await f.answer(429);
    expect(f.queue.destinationRoom(A)).toBe(0);
    for (let i = 0; i < 3; i++) await f.answer(200);
    expect(f.queue.destinationRoom(A)).toBe(3);
    expect(f.queue.limitByDestination.size).toBe(0);
  });

  it('holds more of a fast destination, what its slots free within soonMs, and claims it again only at half that room', async () => {
    // The answers take 5 ms: 2 slots free 100 runs' worth in 250 ms; the backlog caps it at 10.
    const f = fixture({ perDestination: 2, backlog: 10, soonMs: 250 });
    f.add(2);
    await settle();
    // No answer yet: its latency is unknown, nothing beyond the limit.
    expect(f.queue.destinationRoom(A)).toBe(0);
    await f.answer(200);
    expect(f.queue.destinationRoom(A)).toBe(2 + 10 - 1);
    f.add(6, 'b');
    await settle();
    // 7 held of 12: room 5, half the backlog, worth a claim.
    expect(f.queue.destinationRoom(A)).toBe(5);
    expect(f.queue.saturatedDestinations()).toEqual([]);
    f.add(1, 'c');
    await settle();
    expect(f.queue.destinationRoom(A)).toBe(4);
    expect(f.queue.saturatedDestinations()).toEqual([A]);
  });
});
