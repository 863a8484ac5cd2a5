/**
 * Concurrency limits of the dispatcher: at most `total` callbacks in flight, and at most `perKey` to one destination,
 * so one tenant's thousand due jobs cannot flood its endpoint. (That they cannot starve other tenants' callbacks is
 * the dispatcher's part: it leaves a saturated destination's runs unclaimed.) Waiters are served first-come,
 * first-served per key.
 */
export class Limiter {
  private active = 0;
  private readonly perKeyActive = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();

  /**
   * @param total most tasks at once overall (the dispatcher sizes claims by its own count, so this rarely waits)
   * @param perKey most tasks at once per key
   */
  constructor(
    readonly total: number,
    readonly perKey: number,
  ) {}

  /** Slots not taken overall. */
  get free(): number {
    return this.total - this.active;
  }

  get inFlight(): number {
    return this.active;
  }

  /** Tasks running per key (those waiting for their key's slot not counted); keys with none are absent. */
  get activeByKey(): ReadonlyMap<string, number> {
    return this.perKeyActive;
  }

  /** Takes a slot for `key` (overall slot taken at once; the per-key slot may wait). Call `release(key)` after. */
  async acquire(key: string): Promise<void> {
    this.active++;
    const n = this.perKeyActive.get(key) ?? 0;
    if (n < this.perKey) {
      this.perKeyActive.set(key, n + 1);
      return;
    }
    await new Promise<void>((resolve) => {
      const q = this.waiting.get(key);
      if (q) q.push(resolve);
      else this.waiting.set(key, [resolve]);
    });
  }

  /** Gives back a slot of `key`, handing it straight to the next waiter of that key if any. */
  release(key: string): void {
    this.active--;
    const q = this.waiting.get(key);
    const next = q?.shift();
    if (next) {
      if (q!.length === 0) this.waiting.delete(key);
      next(); // the per-key slot passes to the waiter
      return;
    }
    const n = (this.perKeyActive.get(key) ?? 1) - 1;
    if (n === 0) this.perKeyActive.delete(key);
    else this.perKeyActive.set(key, n);
  }
}
