/**
 * Wakes claimed runs at their due times from as few timer wake-ups as it can without firing one early: time is cut into
 * slots of `slotMs` (aligned on the epoch), and the runs due within one slot share one timer that fires at the slot's
 * end, which is at or after each of their due times. A run falls at most `slotMs` − 1 ms behind its time for it, and a
 * dispatcher firing N runs due within a few milliseconds of each other wakes once instead of N times (each wake-up of
 * the process costs CPU of its own, beyond the callback's).
 */
import type { Clock } from '../../domain/clock.ts';

/** The default slot: runs due within the same 2 ms fire from one wake-up, at most 1 ms after their time. */
export const COALESCE_MS = 2;

export interface DueTimer {
  /** Resolves at `dueAtMs` (epoch ms, by the clock) or up to `slotMs` − 1 ms after it; at once when it has passed. */
  untilDue(dueAtMs: number): Promise<void>;
}

/**
 * A timer of slots of `slotMs` ms (a whole number ≥ 1; 1: a timer per distinct due millisecond) on `clock`. A runtime
 * timer that fires early by the clock (the wall clock stepped back, say) sleeps again: nothing is released before its
 * slot's end.
 * @throws RangeError when `slotMs` is not a whole number ≥ 1
 */
export function createDueTimer(clock: Clock, slotMs: number = COALESCE_MS): DueTimer {
  if (!Number.isInteger(slotMs) || slotMs < 1) throw new RangeError(`slotMs must be a whole number ≥ 1, not ${slotMs}`);
  const slots = new Map<number, Array<() => void>>();

  async function fire(endMs: number): Promise<void> {
    for (let left = endMs - clock.now(); left > 0; left = endMs - clock.now()) await clock.sleep(left);
    const waiters = slots.get(endMs) ?? [];
    slots.delete(endMs);
    for (const resolve of waiters) resolve();
  }

  return {
    untilDue(dueAtMs) {
      if (dueAtMs <= clock.now()) return Promise.resolve();
      const endMs = Math.ceil(dueAtMs / slotMs) * slotMs;
      return new Promise<void>((resolve) => {
        const waiters = slots.get(endMs);
        if (waiters) waiters.push(resolve);
        else {
          slots.set(endMs, [resolve]);
          void fire(endMs);
        }
      });
    },
  };
}
