/**
 * Time source and timers for everything time-dependent. Values are UTC epoch milliseconds.
 * Production code takes a `Clock` from its caller instead of calling `Date.now()` or `setTimeout`, so tests can move
 * time by hand (`ManualClock`) and never wait on a real timer.
 */
export interface Clock {
  /** Current time, UTC epoch milliseconds. */
  now(): number;
  /**
   * Resolves after `ms` milliseconds ('timeout'), or as soon as `signal` aborts ('aborted'); never rejects. A pending
   * sleep does not keep a Node process alive.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<'timeout' | 'aborted'>;
  /**
   * Calls `fn` every `ms` milliseconds, first `ms` from now, until the returned function is called. A call that comes
   * while the previous one's promise is pending is skipped (a slow round is not queued behind). Does not keep a Node
   * process alive.
   */
  every(ms: number, fn: () => unknown): () => void;
}

/** `setTimeout`'s timer, unref'd where the runtime has it (Node), so it keeps no process alive. */
function unrefTimer<T>(timer: T): T {
  (timer as { unref?: () => void }).unref?.();
  return timer;
}

/** Calls `fn`, skipped while its previous call's promise is pending. */
function skippingOverlaps(fn: () => unknown): () => void {
  let busy = false;
  return () => {
    if (busy) return;
    const result = fn();
    if (result instanceof Promise) {
      busy = true;
      void result.finally(() => (busy = false)).catch(() => {});
    }
  };
}

/** The wall clock and the runtime's timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep(ms, signal) {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve('aborted');
      const onAbort = () => {
        clearTimeout(timer);
        resolve('aborted');
      };
      const timer = unrefTimer(
        setTimeout(
          () => {
            signal?.removeEventListener('abort', onAbort);
            resolve('timeout');
          },
          Math.max(0, ms),
        ),
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
  every(ms, fn) {
    const timer = unrefTimer(setInterval(skippingOverlaps(fn), ms));
    return () => clearInterval(timer);
  },
};

/**
 * A clock that reads `base` shifted by `offsetMs`: the time of another host (the database's, docs/design.md "One
 * clock"), on this host's timers. Durations are unaffected: `sleep` and `every` are `base`'s. The offset is set by
 * whoever measures it (src/store/db-time.ts), and may change at any time.
 */
export class OffsetClock implements Clock {
  /** Added to `base.now()`, in whole ms (positive when this host's clock is behind). */
  offsetMs = 0;
  constructor(private readonly base: Clock = systemClock) {}
  now(): number {
    return this.base.now() + this.offsetMs;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<'timeout' | 'aborted'> {
    return this.base.sleep(ms, signal);
  }
  every(ms: number, fn: () => unknown): () => void {
    return this.base.every(ms, fn);
  }
}

/** A timer of a ManualClock: due at `at` (epoch ms), in creation order among equals. */
type ManualTimer = { at: number; seq: number; fire: () => void };

/**
 * A clock that stands still until moved, and whose timers fire only when it is moved past them; for tests and the
 * node protocol's logical time. `advance` fires what falls due in order, each at its own time; `tick` does the same
 * and lets the code each timer wakes run (and schedule new timers) before the next one fires.
 */
export class ManualClock implements Clock {
  private timers: ManualTimer[] = [];
  private seq = 0;
  /** Every sleep asked for, in ms, in order (tests read what a module waited for). */
  readonly sleeps: number[] = [];

  constructor(private ms: number) {}
  now(): number {
    return this.ms;
  }
  /** Sets the time (epoch ms): forward, firing the timers due by then; backward, firing none (they wait for their time). */
  set(ms: number): void {
    if (ms >= this.ms) this.advance(ms - this.ms);
    else this.ms = ms;
  }
  /** Moves the time forward by `ms` milliseconds, firing the timers due by then, each at its own time. */
  advance(ms: number): void {
    const end = this.ms + Math.max(0, ms);
    for (let t = this.nextDue(end); t; t = this.nextDue(end)) {
      this.ms = Math.max(this.ms, t.at);
      t.fire();
    }
    this.ms = end;
  }
  /**
   * `advance`, letting the promise callbacks a timer wakes run (a turn of the event loop) before the next timer fires,
   * so that timers they set within the span fire too.
   */
  async tick(ms: number): Promise<void> {
    const end = this.ms + Math.max(0, ms);
    await settle();
    for (let t = this.nextDue(end); t; t = this.nextDue(end)) {
      this.ms = Math.max(this.ms, t.at);
      t.fire();
      await settle();
    }
    this.ms = end;
  }
  /** Moves the time to the next timer and fires it (then lets what it woke run); false when there is none. */
  async tickToNext(): Promise<boolean> {
    const next = this.nextTimerAt();
    if (next === null) return false;
    await this.tick(next - this.ms);
    return true;
  }
  /** When the next timer is due (epoch ms), or null when none is pending. */
  nextTimerAt(): number | null {
    return this.timers.reduce<number | null>((min, t) => (min === null || t.at < min ? t.at : min), null);
  }
  /** Timers pending. */
  get pendingTimers(): number {
    return this.timers.length;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<'timeout' | 'aborted'> {
    this.sleeps.push(ms);
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve('aborted');
      const onAbort = () => {
        this.remove(timer);
        resolve('aborted');
      };
      const timer: ManualTimer = {
        at: this.ms + Math.max(0, ms),
        seq: this.seq++,
        fire: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve('timeout');
        },
      };
      this.timers.push(timer);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
  every(ms: number, fn: () => unknown): () => void {
    const call = skippingOverlaps(fn);
    const timer: ManualTimer = {
      at: this.ms + ms,
      seq: this.seq++,
      fire: () => {
        timer.at += ms;
        timer.seq = this.seq++;
        this.timers.push(timer);
        call();
      },
    };
    this.timers.push(timer);
    return () => this.remove(timer);
  }
  /** Removes and returns the earliest timer due by `end`, if any. */
  private nextDue(end: number): ManualTimer | undefined {
    let best: ManualTimer | undefined;
    for (const t of this.timers) if (t.at <= end && (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq))) best = t;
    if (best) this.remove(best);
    return best;
  }
  private remove(timer: ManualTimer): void {
    const i = this.timers.indexOf(timer);
    if (i >= 0) this.timers.splice(i, 1);
  }
}

/** Lets every promise callback already queued run, and those they queue in turn (one turn of the event loop). */
function settle(): Promise<void> {
  return new Promise((r) => setTimeout(r, 0));
}

/** RFC 3339 UTC with milliseconds, the one time format of the API (`2026-12-01T09:00:00.000Z`). */
export function toIso(ms: number): string {
  return new Date(ms).toISOString();
}

/** `toIso` for nullable values. */
export function toIsoOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : toIso(ms);
}
