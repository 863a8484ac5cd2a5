/**
 * The run queue's coalescing timer (src/dispatch/engine/due-timer.ts) on a manual clock: runs due within one slot share
 * one wake-up, none is released before its due time, none later than the slot's end; property-tested over arbitrary
 * due times and slot widths.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createDueTimer } from '../../src/dispatch/engine/due-timer.ts';
import { ManualClock } from '../../src/domain/clock.ts';

const T0 = Date.UTC(2026, 10, 27, 12, 0, 0);

/** Waits on `dueTimes` with a timer of `slotMs`, moves the clock timer by timer, and says when each was released. */
async function release(dueTimes: number[], slotMs: number): Promise<{ at: number[]; sleeps: number; maxArmed: number }> {
  const clock = new ManualClock(T0);
  const timer = createDueTimer(clock, slotMs);
  const at: number[] = new Array(dueTimes.length).fill(Number.NaN);
  const done = dueTimes.map((due, i) => timer.untilDue(due).then(() => (at[i] = clock.now())));
  const maxArmed = clock.pendingTimers;
  while (await clock.tickToNext()) {}
  await Promise.all(done);
  return { at, sleeps: clock.sleeps.length, maxArmed };
}

describe('due timer', () => {
  it('releases 100 runs due within one 4 ms slot from one wake-up, none before its time', async () => {
    const dues = Array.from({ length: 100 }, (_, i) => T0 + 1_001 + (i % 3));
    const r = await release(dues, 4);
    expect(r.sleeps).toBe(1);
    expect(r.maxArmed).toBe(1);
    for (const [i, at] of r.at.entries()) {
      expect(at).toBeGreaterThanOrEqual(dues[i]!);
      expect(at).toBe(T0 + 1_004);
    }
  });

  it('releases a run already due at once, without a timer', async () => {
    const clock = new ManualClock(T0);
    const timer = createDueTimer(clock, 4);
    await timer.untilDue(T0 - 5);
    await timer.untilDue(T0);
    expect(clock.sleeps).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('with slots of 1 ms, wakes once per distinct due millisecond, each run at its own time', async () => {
    const dues = [T0 + 5, T0 + 5, T0 + 6, T0 + 9];
    const r = await release(dues, 1);
    expect(r.at).toEqual(dues);
    expect(r.sleeps).toBe(3);
  });

  it('sleeps again when the timer fires before the slot ends by the clock', async () => {
    const manual = new ManualClock(T0);
    // The clock this dispatcher reads is 3 ms behind the one its timers run on from the moment the timer is armed.
    let skew = 0;
    const clock = { now: () => manual.now() - skew, sleep: manual.sleep.bind(manual), every: manual.every.bind(manual) };
    const timer = createDueTimer(clock, 4);
    let releasedAt: number | null = null;
    const p = timer.untilDue(T0 + 10).then(() => (releasedAt = clock.now()));
    skew = 3;
    await manual.tick(12);
    expect(releasedAt).toBeNull();
    await manual.tick(3);
    await p;
    expect(releasedAt).toBe(T0 + 12);
    expect(manual.sleeps).toEqual([12, 3]);
  });

  it('refuses a slot that is not a whole number ≥ 1', () => {
    const clock = new ManualClock(T0);
    expect(() => createDueTimer(clock, 0)).toThrow(/slotMs/);
    expect(() => createDueTimer(clock, 2.5)).toThrow(/slotMs/);
  });

  it('property: never early, at most slotMs − 1 late, one wake-up per slot with runs', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 5_000 }), { minLength: 1, maxLength: 200 }),
        fc.integer({ min: 1, max: 20 }),
        async (offsets, slotMs) => {
          const dues = offsets.map((o) => T0 + o);
          const r = await release(dues, slotMs);
          for (const [i, at] of r.at.entries()) {
            expect(at).toBeGreaterThanOrEqual(dues[i]!);
            expect(at - dues[i]!).toBeLessThan(slotMs);
          }
          expect(r.sleeps).toBe(new Set(dues.map((d) => Math.ceil(d / slotMs))).size);
        },
      ),
      { numRuns: 200 },
    );
  });
});
