/** Backoff between tries of a failing database write or claim; the waits themselves go through the engine's Clock. */

/**
 * Waits between tries of a failing database write or claim, in ms: `minMs`, then doubling up to `maxMs` (no jitter:
 * each dispatcher retries its own statements, which do not contend with one another's).
 */
export function* backoffDelays(minMs: number, maxMs: number): Generator<number, never> {
  for (let ms = minMs; ; ms = Math.min(ms * 2, maxMs)) yield ms;
}
