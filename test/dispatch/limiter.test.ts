/**
 * The per-destination cap (src/dispatch/limiter.ts) on its own (issue #29 point 6): at most `perKey` tasks per key,
 * waiters served first come, first served per key, keys independent; and nothing else: there is no overall cap (the
 * run queue's concurrency is that), so any number of keys run side by side.
 */
import { describe, expect, it } from 'vitest';
import { Limiter } from '../../src/dispatch/limiter.ts';

const settle = () => new Promise<void>((r) => setImmediate(r));

/** Starts `acquire(key)` and records, in `order`, the label once it has its slot. */
function start(limiter: Limiter, key: string, label: string, order: string[]): Promise<void> {
  return limiter.acquire(key).then(() => {
    order.push(label);
  });
}

describe('Limiter', () => {
  it('lets perKey tasks of a key run and makes the next wait for a release', async () => {
    const limiter = new Limiter(2);
    const order: string[] = [];
    void start(limiter, 'a', 'a1', order);
    void start(limiter, 'a', 'a2', order);
    void start(limiter, 'a', 'a3', order);
    await settle();
    expect(order).toEqual(['a1', 'a2']);
    expect(limiter.activeByKey.get('a')).toBe(2);
    limiter.release('a');
    await settle();
    expect(order).toEqual(['a1', 'a2', 'a3']);
    expect(limiter.activeByKey.get('a')).toBe(2);
  });

  it('serves the waiters of a key first come, first served, one per release', async () => {
    const limiter = new Limiter(1);
    const order: string[] = [];
    for (const label of ['w0', 'w1', 'w2', 'w3']) void start(limiter, 'k', label, order);
    await settle();
    expect(order).toEqual(['w0']);
    for (const expected of [
      ['w0', 'w1'],
      ['w0', 'w1', 'w2'],
      ['w0', 'w1', 'w2', 'w3'],
    ]) {
      limiter.release('k');
      await settle();
      expect(order).toEqual(expected);
    }
    expect(limiter.activeByKey.get('k')).toBe(1);
    limiter.release('k');
    expect(limiter.activeByKey.has('k')).toBe(false);
  });

  it('keeps keys independent: a full key does not hold up another', async () => {
    const limiter = new Limiter(1);
    const order: string[] = [];
    void start(limiter, 'a', 'a1', order);
    void start(limiter, 'a', 'a2', order);
    void start(limiter, 'b', 'b1', order);
    await settle();
    expect(order).toEqual(['a1', 'b1']);
    limiter.release('b');
    await settle();
    expect(order).toEqual(['a1', 'b1']);
    expect(new Map(limiter.activeByKey)).toEqual(new Map([['a', 1]]));
  });

  it('has no overall cap: many keys run at once, and there is no `total` or `free` to go wrong', async () => {
    const limiter = new Limiter(2);
    const order: string[] = [];
    for (let i = 0; i < 50; i++) void start(limiter, `k${i}`, `k${i}`, order);
    await settle();
    expect(order).toHaveLength(50);
    expect(limiter.activeByKey.size).toBe(50);
    expect('total' in limiter).toBe(false);
    expect('free' in limiter).toBe(false);
    for (let i = 0; i < 50; i++) limiter.release(`k${i}`);
    expect(limiter.activeByKey.size).toBe(0);
  });

  it('drops a key once its last task is released', async () => {
    const limiter = new Limiter(3);
    await limiter.acquire('a');
    await limiter.acquire('a');
    limiter.release('a');
    expect(limiter.activeByKey.get('a')).toBe(1);
    limiter.release('a');
    expect(limiter.activeByKey.has('a')).toBe(false);
  });

  it.each([0, -1, Number.NaN])('refuses perKey %s (every task would wait forever)', (perKey) => {
    expect(() => new Limiter(perKey)).toThrow(RangeError);
  });
});
