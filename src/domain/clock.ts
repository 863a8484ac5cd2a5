/**
 * Time source for everything time-dependent. Values are UTC epoch milliseconds.
 * Production code takes a `Clock` from its caller instead of calling `Date.now()`, so tests can move time.
 */
export interface Clock {
  /** Current time, UTC epoch milliseconds. */
  now(): number;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that stands still until moved; for tests and the node protocol's logical time. */
export class ManualClock implements Clock {
  constructor(private ms: number) {}
  now(): number {
    return this.ms;
  }
  /** Sets the time (epoch ms). */
  set(ms: number): void {
    this.ms = ms;
  }
  /** Moves the time forward by `ms` milliseconds. */
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** RFC 3339 UTC with milliseconds, the one time format of the API (`2026-12-01T09:00:00.000Z`). */
export function toIso(ms: number): string {
  return new Date(ms).toISOString();
}

/** `toIso` for nullable values. */
export function toIsoOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : toIso(ms);
}
