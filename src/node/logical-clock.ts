/**
 * The node's time (docs/protocol.md: "`now` for scheduling is the wall clock unless a message carries
 * `current_time`, which then sets the node's logical clock").
 */
import { type Clock, ManualClock, systemClock } from '../domain/clock.ts';

/**
 * A clock that follows `base` (the wall clock by default) until `set` is first called, and from then on stands
 * at the last time set (a `ManualClock`); it moves only when set again, backwards included. Values are UTC epoch ms.
 */
export class LogicalClock implements Clock {
  private manual: ManualClock | null = null;

  /** @param base the clock to follow until the first `set` */
  constructor(private readonly base: Clock = systemClock) {}

  /** Current time, UTC epoch ms. */
  now(): number {
    return this.manual ? this.manual.now() : this.base.now();
  }

  /** Sets the logical time (UTC epoch ms); the wall clock is no longer followed. */
  set(ms: number): void {
    if (this.manual) this.manual.set(ms);
    else this.manual = new ManualClock(ms);
  }

  /** Timers run on the base clock: the protocol's logical time moves only by messages, which fire nothing. */
  sleep(ms: number, signal?: AbortSignal): Promise<'timeout' | 'aborted'> {
    return this.base.sleep(ms, signal);
  }
  every(ms: number, fn: () => unknown): () => void {
    return this.base.every(ms, fn);
  }

  /** True once `set` has been called. */
  get isLogical(): boolean {
    return this.manual !== null;
  }
}
