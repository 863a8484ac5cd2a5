/**
 * The adaptive per-destination limit (src/domain/adaptive-limit.ts) on its own, on a ManualClock: it starts at the
 * maximum; 429 and 503 take 10 % off, a timeout half, once per window of requests (signals of requests sent before the
 * last decrease count for nothing), never below 1; answers within the usual latency grow it by about one per round
 * trip, cautiously up to where the destination last pushed back, only while at least half of it is in use, never past
 * the maximum; slower answers hold it; switched off it is always the maximum; a destination unheard of for a while is
 * forgotten, and at most so many are remembered. Last, a simulated receiver that serves 8 at once and rejects beyond:
 * the limit settles under 9 with under 5 % of requests rejected and at least 90 % of 8's throughput.
 */
import { describe, expect, it } from 'vitest';
import { type AdaptiveLimitOptions, AdaptiveLimits, type LimitSample, loadSignalOf } from '../../src/domain/adaptive-limit.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { T0 } from '../support/store.ts';

const D = 'https://a.example';

function limitsOf(o: Partial<AdaptiveLimitOptions> = {}) {
  const clock = new ManualClock(T0);
  return { clock, limits: new AdaptiveLimits(clock, { max: 16, adaptive: true, ...o }) };
}

/** A sample of a request sent in the destination's current epoch. */
const sample = (limits: AdaptiveLimits, o: Partial<LimitSample> = {}): LimitSample => ({
  signal: 'answer',
  latencyMs: 100,
  epoch: limits.epochOf(D),
  inFlight: 16,
  ...o,
});

describe('loadSignalOf', () => {
  it('reads 429 and 503 as overload, the timeout class as timeout, other answers as answers, other errors as nothing', () => {
    expect(loadSignalOf({ responseStatus: 429, errorClass: 'bad_status' })).toBe('overload');
    expect(loadSignalOf({ responseStatus: 503, errorClass: 'bad_status' })).toBe('overload');
    expect(loadSignalOf({ responseStatus: 200, errorClass: null })).toBe('answer');
    expect(loadSignalOf({ responseStatus: 500, errorClass: 'bad_status' })).toBe('answer');
    expect(loadSignalOf({ responseStatus: null, errorClass: 'timeout' })).toBe('timeout');
    expect(loadSignalOf({ responseStatus: null, errorClass: 'connection_refused' })).toBe('none');
    expect(loadSignalOf({ responseStatus: null, errorClass: 'dns' })).toBe('none');
  });
});

describe('AdaptiveLimits', () => {
  it('starts every destination at the maximum (or the initial limit given, within 1..max)', () => {
    expect(limitsOf().limits.limitOf(D)).toBe(16);
    expect(limitsOf({ initial: 4 }).limits.limitOf(D)).toBe(4);
    expect(limitsOf({ initial: 0 }).limits.limitOf(D)).toBe(1);
    expect(limitsOf({ initial: 99 }).limits.limitOf(D)).toBe(16);
  });

  it('takes 10 % off on a 429 or 503 and half on a timeout, once per window of requests sent together', () => {
    const { limits } = limitsOf();
    // Eight requests sent together are all rejected: one decrease, not eight.
    const sentTogether = Array.from({ length: 8 }, () => sample(limits, { signal: 'overload', latencyMs: 1 }));
    for (const s of sentTogether) limits.record(D, s);
    expect(limits.limitOf(D)).toBe(14); // 16 × 0.9 = 14.4
    // A request sent after that decrease is a new signal.
    limits.record(D, sample(limits, { signal: 'overload' }));
    expect(limits.limitOf(D)).toBe(12); // 14.4 × 0.9 = 12.96
    limits.record(D, sample(limits, { signal: 'timeout' }));
    expect(limits.limitOf(D)).toBe(6); // 12.96 × 0.5 = 6.48
    // Other destinations are untouched.
    expect(limits.limitOf('https://b.example')).toBe(16);
  });

  it('never goes below 1', () => {
    const { limits } = limitsOf();
    for (let i = 0; i < 100; i++) limits.record(D, sample(limits, { signal: i % 2 ? 'overload' : 'timeout' }));
    expect(limits.limitOf(D)).toBe(1);
  });

  it('grows by about one per round trip past the last pushback, a fifth of that below it, and stops at the maximum', () => {
    const { limits } = limitsOf();
    for (let i = 0; i < 7; i++) limits.record(D, sample(limits, { signal: 'timeout' }));
    expect(limits.limitOf(D)).toBe(1); // 16 × 0.5^7 = 0.125, held at 1; the last pushback was at 1 too
    /** Answers a full round trip at the limit: as many answers as the limit, each with all of them in flight. */
    const roundTrip = () => {
      const n = limits.limitOf(D);
      for (let i = 0; i < n; i++) limits.record(D, sample(limits, { inFlight: n }));
    };
    const trips: number[] = [];
    while (limits.limitOf(D) < 16) {
      roundTrip();
      trips.push(limits.limitOf(D));
    }
    // Additive: one per round trip (give or take the rounding of a fractional limit), 15 round trips from 1 to 16.
    expect(trips.length).toBeGreaterThanOrEqual(14);
    expect(trips.length).toBeLessThanOrEqual(18);
    roundTrip();
    expect(limits.limitOf(D)).toBe(16);

    // Pushed back at 16: 14.4; below 16 the growth is a fifth as fast, about 8 round trips back to 16.
    limits.record(D, sample(limits, { signal: 'overload' }));
    expect(limits.limitOf(D)).toBe(14);
    let cautious = 0;
    while (limits.limitOf(D) < 16) {
      roundTrip();
      cautious++;
    }
    expect(cautious).toBeGreaterThanOrEqual(7);
    expect(cautious).toBeLessThanOrEqual(9);
  });

  it('does not grow while less than half the limit is in use (a limit not in use is not validated)', () => {
    const { limits } = limitsOf();
    limits.record(D, sample(limits, { signal: 'timeout' })); // 8
    for (let i = 0; i < 100; i++) limits.record(D, sample(limits, { inFlight: 3 }));
    expect(limits.limitOf(D)).toBe(8);
    for (let i = 0; i < 100; i++) limits.record(D, sample(limits, { inFlight: 4 }));
    expect(limits.limitOf(D)).toBeGreaterThan(8);
  });

  it('holds on answers slower than twice the usual latency, and grows again once the slower latency is the usual', () => {
    const { limits } = limitsOf();
    limits.record(D, sample(limits, { latencyMs: 100 }));
    expect(limits.usualLatencyMs(D)).toBe(100);
    limits.record(D, sample(limits, { signal: 'timeout' })); // 8
    // 250 ms answers: slower than 2 × 100, no growth at first while the average moves towards 250.
    limits.record(D, sample(limits, { latencyMs: 250, inFlight: 8 }));
    expect(limits.limitOf(D)).toBe(8);
    expect(limits.usualLatencyMs(D)).toBeCloseTo(107.5);
    for (let i = 0; i < 200; i++) limits.record(D, sample(limits, { latencyMs: 250, inFlight: 8 }));
    expect(limits.usualLatencyMs(D)).toBeGreaterThan(240);
    expect(limits.limitOf(D)).toBeGreaterThan(8);
    // Pushback answers (429 at once) do not count as the usual latency.
    limits.record(D, sample(limits, { signal: 'overload', latencyMs: 1 }));
    expect(limits.usualLatencyMs(D)).toBeGreaterThan(240);
  });

  it('switched off, is always the maximum, and still learns the usual latency', () => {
    const { limits } = limitsOf({ adaptive: false });
    for (let i = 0; i < 20; i++) limits.record(D, sample(limits, { signal: i % 2 ? 'overload' : 'timeout' }));
    expect(limits.limitOf(D)).toBe(16);
    limits.record(D, sample(limits, { latencyMs: 40 }));
    expect(limits.usualLatencyMs(D)).toBe(40);
  });

  it('forgets a destination unheard of for forgetAfterMs by its clock, and the least recently used past maxDestinations', () => {
    const { clock, limits } = limitsOf({ forgetAfterMs: 60_000, maxDestinations: 3 });
    limits.record(D, sample(limits, { signal: 'timeout' }));
    expect(limits.limitOf(D)).toBe(8);
    clock.advance(60_000);
    expect(limits.limitOf(D)).toBe(8); // not yet: used exactly forgetAfterMs ago
    clock.advance(1);
    expect(limits.limitOf(D)).toBe(16); // forgotten, whether used again or not
    limits.epochOf(D); // a request sent: the forgotten destination starts afresh
    expect(limits.limitOf(D)).toBe(16);
    expect(limits.usualLatencyMs(D)).toBeNull();

    for (const d of ['https://b.example', 'https://c.example', 'https://d.example']) {
      limits.record(d, { signal: 'timeout', latencyMs: 1, epoch: limits.epochOf(d), inFlight: 1 });
      expect(limits.limitOf(d)).toBe(8);
    }
    // Three remembered at most: D, the least recently used, went when d.example came.
    expect(limits.limitOf('https://b.example')).toBe(8);
    limits.epochOf('https://b.example'); // b used again: c is now the least recently used
    limits.epochOf('https://e.example');
    expect(limits.limitOf('https://c.example')).toBe(16);
    expect(limits.limitOf('https://b.example')).toBe(8);
    expect(limits.limitOf('https://d.example')).toBe(8);
  });

  it.each([0, -1, Number.NaN])('refuses max %s', (max) => {
    expect(() => new AdaptiveLimits(new ManualClock(T0), { max, adaptive: true })).toThrow(RangeError);
  });

  it.each([{ backoff: 1 }, { backoff: 0 }, { timeoutBackoff: 1.5 }, { latencyWeight: 0 }])('refuses %o', (o) => {
    expect(() => new AdaptiveLimits(new ManualClock(T0), { max: 16, adaptive: true, ...o })).toThrow(RangeError);
  });
});

describe('against a receiver that serves 8 at once and answers 429 beyond (simulated on the ManualClock)', () => {
  it('settles under 9: under 5 % of requests rejected within 10 s, at least 90 % of what 8 at once allow', () => {
    const CAPACITY = 8;
    const SERVICE_MS = 100;
    const { clock, limits } = limitsOf();
    let active = 0;
    let inFlight = 0;
    const log: { at: number; rejected: boolean }[] = [];
    /** Answers to come, in time order: a discrete-event simulation on the clock (a 429 comes back in 1 ms). */
    const answers: { at: number; start: number; epoch: number; rejected: boolean }[] = [];
    // A sender that keeps the limit in flight (always more runs due), as the run queue does.
    const send = () => {
      while (inFlight < limits.limitOf(D)) {
        const rejected = active >= CAPACITY;
        if (!rejected) active++;
        inFlight++;
        log.push({ at: clock.now(), rejected });
        answers.push({ at: clock.now() + (rejected ? 1 : SERVICE_MS), start: clock.now(), epoch: limits.epochOf(D), rejected });
        answers.sort((x, y) => x.at - y.at);
      }
    };
    send();
    while (answers[0]!.at < T0 + 20_000) {
      const a = answers.shift()!;
      clock.set(a.at);
      if (!a.rejected) active--;
      limits.record(D, { signal: a.rejected ? 'overload' : 'answer', latencyMs: a.at - a.start, epoch: a.epoch, inFlight });
      inFlight--;
      send();
    }
    const window = log.filter((r) => r.at >= T0 + 10_000);
    const rejected = window.filter((r) => r.rejected).length;
    const served = window.length - rejected;
    expect(rejected / window.length).toBeLessThan(0.05);
    // 8 at once for 10 s at 100 ms each: 800 answers.
    expect(served).toBeGreaterThanOrEqual(0.9 * CAPACITY * (10_000 / SERVICE_MS));
    expect(limits.limitOf(D)).toBeGreaterThanOrEqual(8);
    expect(limits.limitOf(D)).toBeLessThanOrEqual(9);
  });
});
