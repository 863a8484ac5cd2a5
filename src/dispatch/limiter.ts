/**
 * The per-destination cap of a dispatcher: at most `perKey` tasks at once per key (a destination), so one tenant's
 * thousand due jobs cannot flood its endpoint. Waiters are served first-come, first-served per key.
 *
 * It caps nothing overall: the dispatcher's concurrency is the run queue's (every held run counts against it from its
 * claim on), and that they cannot starve other tenants' callbacks is the claim's part: it leaves a saturated
 * destination's runs unclaimed.
 */
export class Limiter {
  private readonly perKeyActive = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();

  /**
   * @param perKey most tasks at once per key
   * @throws RangeError when `perKey` is below 1 (or NaN): every task would wait forever
   */
  constructor(readonly perKey: number) {
    if (!(perKey >= 1)) throw new RangeError(`perKey must be at least 1, got ${perKey}`);
  }

  /** Tasks running per key (those waiting for their key's slot not counted); keys with none are absent. */
  get activeByKey(): ReadonlyMap<string, number> {
    return this.perKeyActive;
  }

  /** Takes a slot of `key`, waiting for one while `perKey` tasks of it run. Call `release(key)` after. */
  async acquire(key: string): Promise<void> {
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
    const q = this.waiting.get(key);
    const next = q?.shift();
    if (next) {
      if (q!.length === 0) this.waiting.delete(key);
      next(); // the slot passes to the waiter: the count stays
      return;
    }
    const n = (this.perKeyActive.get(key) ?? 1) - 1;
    if (n <= 0) this.perKeyActive.delete(key);
    else this.perKeyActive.set(key, n);
  }
}
