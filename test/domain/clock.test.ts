/** The ManualClock's timers (src/domain/clock.ts): they fire only when the clock is moved past them, in time order. */
import { describe, expect, it } from 'vitest';
import { ManualClock, OffsetClock } from '../../src/domain/clock.ts';

describe('ManualClock', () => {
  it('fires sleeps in time order, each at its own time, and only when moved past them', async () => {
    const clock = new ManualClock(1_000);
    const fired: [string, number][] = [];
    void clock.sleep(30).then(() => fired.push(['b', clock.now()]));
    void clock.sleep(10).then(() => fired.push(['a', clock.now()]));
    await clock.tick(9);
    expect(fired).toEqual([]);
    await clock.tick(100);
    expect(fired).toEqual([
      ['a', 1_010],
      ['b', 1_030],
    ]);
    expect(clock.now()).toBe(1_109);
  });

  it('ends a sleep at once when its signal aborts, and forgets its timer', async () => {
    const clock = new ManualClock(0);
    const stop = new AbortController();
    const slept = clock.sleep(1_000, stop.signal);
    stop.abort();
    expect(await slept).toBe('aborted');
    expect(clock.pendingTimers).toBe(0);
  });

  it('calls `every` on each interval, skipping a call while the last one is pending, until stopped', async () => {
    const clock = new ManualClock(0);
    let calls = 0;
    let release: () => void = () => {};
    const stop = clock.every(100, () => {
      calls++;
      return new Promise<void>((r) => (release = r));
    });
    await clock.tick(350);
    expect(calls).toBe(1); // the 200 and 300 ticks came while the first call was pending
    release();
    await clock.tick(100);
    expect(calls).toBe(2);
    stop();
    release();
    await clock.tick(1_000);
    expect(calls).toBe(2);
  });

  it('`tick` fires a timer set by a timer that fired within the same span', async () => {
    const clock = new ManualClock(0);
    const fired: number[] = [];
    void clock.sleep(10).then(() => clock.sleep(10).then(() => fired.push(clock.now())));
    await clock.tick(50);
    expect(fired).toEqual([20]);
  });

  it('`set` moves backward too, firing nothing', async () => {
    const clock = new ManualClock(1_000);
    let fired = false;
    void clock.sleep(10).then(() => (fired = true));
    clock.set(500);
    expect(clock.now()).toBe(500);
    await clock.tick(0);
    expect(fired).toBe(false);
    clock.set(1_010);
    await clock.tick(0);
    expect(fired).toBe(true);
  });
});

describe('OffsetClock', () => {
  it("reads its base shifted by the offset, and sleeps on its base's timers", async () => {
    const base = new ManualClock(10_000);
    const clock = new OffsetClock(base);
    clock.offsetMs = -3_000;
    expect(clock.now()).toBe(7_000);
    let done = false;
    void clock.sleep(100).then(() => (done = true));
    await base.tick(100);
    expect(done).toBe(true);
  });
});
