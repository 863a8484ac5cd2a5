/**
 * An interruptible sleep: the dispatcher sleeps until the earliest due time it knows, and a NOTIFY of an earlier
 * run, or `stop()`, cuts the sleep short.
 */
export class Wakeup {
  private timer: NodeJS.Timeout | null = null;
  private resolve: ((how: 'timeout' | 'woken') => void) | null = null;
  private wakeAt = Infinity;

  /**
   * Sleeps `ms` milliseconds (epoch deadline `nowMs + ms`), unless woken first.
   * @returns 'timeout' when the time ran out, 'woken' when `wake`/`wakeBy` ended it
   */
  sleep(ms: number, nowMs: number): Promise<'timeout' | 'woken'> {
    this.wakeAt = nowMs + ms;
    return new Promise((resolve) => {
      this.resolve = resolve;
      this.timer = setTimeout(() => this.end('timeout'), Math.max(0, ms));
    });
  }

  /** Ends the current sleep now. */
  wake(): void {
    this.end('woken');
  }

  private end(how: 'timeout' | 'woken'): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.wakeAt = Infinity;
    const r = this.resolve;
    this.resolve = null;
    r?.(how);
  }

  /** Ends the current sleep if `dueMs` (epoch) comes before its end. */
  wakeBy(dueMs: number): void {
    if (this.resolve && dueMs < this.wakeAt) this.wake();
  }
}
