/**
 * An interruptible sleep on the engine's clock: the claim pacer sleeps until the earliest due time it knows, and a
 * NOTIFY of an earlier run, a retry written, a reap or `stop()` cuts the sleep short.
 */
import type { Clock } from '../../domain/clock.ts';

export class Wakeup {
  private ending: AbortController | null = null;
  private wakeAt = Infinity;
  private wakeUps = 0;

  constructor(private readonly clock: Clock) {}

  /**
   * How many wake-ups were asked for (`wake`, `wakeBy`), whether or not a sleep was under way: a reader of the due
   * times compares it with the count at its read to know whether anything was announced since.
   */
  get heard(): number {
    return this.wakeUps;
  }

  /**
   * Sleeps `ms` milliseconds on the clock, unless woken first (one sleep at a time).
   * @returns 'timeout' when the time ran out, 'woken' when `wake`/`wakeBy` ended it
   */
  async sleep(ms: number): Promise<'timeout' | 'woken'> {
    const ending = new AbortController();
    this.ending = ending;
    this.wakeAt = this.clock.now() + ms;
    const how = await this.clock.sleep(ms, ending.signal);
    if (this.ending === ending) {
      this.ending = null;
      this.wakeAt = Infinity;
    }
    return how === 'timeout' ? 'timeout' : 'woken';
  }

  /** Ends the current sleep now (nothing when none is under way). */
  wake(): void {
    this.wakeUps++;
    this.cancel();
  }

  /** Ends the current sleep without counting a wake-up (`heard`): the sleeper's own race with something else ended. */
  cancel(): void {
    const ending = this.ending;
    this.ending = null;
    this.wakeAt = Infinity;
    ending?.abort();
  }

  /** Ends the current sleep if `dueMs` (epoch) comes before its end. */
  wakeBy(dueMs: number): void {
    this.wakeUps++;
    if (this.ending && dueMs < this.wakeAt) this.wake();
  }
}
