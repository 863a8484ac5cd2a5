/**
 * The per-destination cap of a dispatcher: at most a key's limit of tasks at once per key (a destination), so one
 * tenant's thousand due jobs cannot flood its endpoint. Waiters are served first-come, first-served per key. The limit
 * may be a function, read at each acquire and release (the adaptive limit, src/domain/adaptive-limit.ts): when it falls,
 * released slots are not handed on until fewer than it run; when it grows, `admit(key)` lets waiters in.
 *
 * It caps nothing overall: the dispatcher's concurrency is the run queue's (every held run counts against it from its
 * claim on), and that they cannot starve other tenants' callbacks is the claim's part: it leaves a saturated
 * destination's runs unclaimed.
 */
export class Limiter {
  private readonly perKeyActive = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();
  private readonly limitOf: (key: string) => number;

  /**
   * @param perKey most tasks at once per key: a number, or a function of the key (a result below 1 counts as 1)
   * @throws RangeError when `perKey` is a number below 1 (or NaN): every task would wait forever
   */
  constructor(perKey: number | ((key: string) => number)) {
    if (typeof perKey === 'number') {
      if (!(perKey >= 1)) throw new RangeError(`perKey must be at least 1, got ${perKey}`);
      this.limitOf = () => perKey;
    } else {
      this.limitOf = (key) => Math.max(1, perKey(key));
    }
  }

  /** Tasks running per key (those waiting for their key's slot not counted); keys with none are absent. */
  get activeByKey(): ReadonlyMap<string, number> {
    return this.perKeyActive;
  }

  /** Takes a slot of `key`, waiting for one while its limit of tasks run (or others wait before it). Call `release(key)` after. */
  async acquire(key: string): Promise<void> {
    const n = this.perKeyActive.get(key) ?? 0;
    if (n < this.limitOf(key) && !this.waiting.has(key)) {
      this.perKeyActive.set(key, n + 1);
      return;
    }
    await new Promise<void>((resolve) => {
      const q = this.waiting.get(key);
      if (q) q.push(resolve);
      else this.waiting.set(key, [resolve]);
    });
  }

  /** Gives back a slot of `key`, and lets the next waiters of that key in while fewer than its limit run. */
  release(key: string): void {
    const n = (this.perKeyActive.get(key) ?? 1) - 1;
    if (n <= 0) this.perKeyActive.delete(key);
    else this.perKeyActive.set(key, n);
    this.admit(key);
  }

  /** Lets waiters of `key` in, first come first served, while fewer than its limit run (call it when the limit grew). */
  admit(key: string): void {
    const q = this.waiting.get(key);
    if (!q) return;
    const limit = this.limitOf(key);
    let n = this.perKeyActive.get(key) ?? 0;
    while (q.length > 0 && n < limit) {
      n++;
      q.shift()!();
    }
    if (n > 0) this.perKeyActive.set(key, n);
    if (q.length === 0) this.waiting.delete(key);
  }
}
