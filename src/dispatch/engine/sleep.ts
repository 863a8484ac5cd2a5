/** Waiting, injectable: engine modules sleep through `Sleep`, so unit tests can run them on a manual clock. */

/** Resolves after `ms` milliseconds. */
export type Sleep = (ms: number) => Promise<void>;

/** `setTimeout` as a Sleep. */
export const realSleep: Sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/**
 * Waits between tries of a failing database write or claim, in ms: `minMs`, then doubling up to `maxMs` (no jitter:
 * each dispatcher retries its own statements, which do not contend with one another's).
 */
export function* backoffDelays(minMs: number, maxMs: number): Generator<number, never> {
  for (let ms = minMs; ; ms = Math.min(ms * 2, maxMs)) yield ms;
}
