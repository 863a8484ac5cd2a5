/**
 * Property tests for src/domain/retry.ts: backoff formulas, caps, jitter bounds, exhaustion, Retry-After.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  baseBackoffMs,
  MAX_ATTEMPTS_LIMIT,
  MAX_BACKOFF_MS,
  MAX_SCHEDULE_DELAY_MS,
  MAX_SCHEDULE_DELAYS,
  parseRetryAfter,
  RETRY_STRATEGIES,
  type RetryPolicy,
  type RetryStrategy,
  resolveRetryPolicy,
  retryDelayMs,
  scheduleAttemptsIssue,
} from '../../src/domain/retry.ts';

const multiplierArb = fc.oneof(
  fc.constantFrom(1, 1.5, 2, 3, 10),
  fc.double({ min: 1, max: 10, noNaN: true }),
  fc.double({ min: 0.1, max: 1, noNaN: true }),
);

/** A `schedule`'s `delaysMs`: 1..50 waits of 0..1 day, small ones and the bounds often. */
const delaysArb = fc.array(fc.oneof(fc.integer({ min: 0, max: MAX_SCHEDULE_DELAY_MS }), fc.constantFrom(0, 1000, MAX_SCHEDULE_DELAY_MS)), {
  minLength: 1,
  maxLength: MAX_SCHEDULE_DELAYS,
});

function policyArb(strategy?: RetryStrategy, multiplier: fc.Arbitrary<number> = multiplierArb): fc.Arbitrary<RetryPolicy> {
  return fc
    .record({
      strategy: strategy ? fc.constant(strategy) : fc.constantFrom(...RETRY_STRATEGIES),
      maxAttempts: fc.integer({ min: 1, max: MAX_ATTEMPTS_LIMIT }),
      initialDelayMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3_600_000 })),
      maxDelayMs: fc.oneof(fc.integer({ min: 0, max: MAX_BACKOFF_MS }), fc.constant(MAX_BACKOFF_MS)),
      multiplier,
      jitter: fc.boolean(),
      delaysMs: delaysArb,
    })
    .map(({ delaysMs, ...p }): RetryPolicy => (p.strategy === 'schedule' ? { ...p, delaysMs } : p));
}

const retryNumber = fc.integer({ min: 1, max: MAX_ATTEMPTS_LIMIT });
/** A `random()` result in [0, 1). */
const unit = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

/** The documented formula, before the cap and rounding. */
function formula(p: RetryPolicy, n: number): number {
  switch (p.strategy) {
    case 'exponential':
      return p.initialDelayMs === 0 ? 0 : p.initialDelayMs * p.multiplier ** (n - 1);
    case 'linear':
      return p.initialDelayMs * n;
    case 'fixed':
    case 'none':
      return p.initialDelayMs;
    case 'schedule':
      return p.delaysMs![Math.min(n, p.delaysMs!.length) - 1]!;
  }
}

describe('baseBackoffMs', () => {
  it("follows its strategy's formula, in whole ms, capped by maxDelayMs", () => {
    fc.assert(
      fc.property(policyArb(), retryNumber, (p, n) => {
        const base = baseBackoffMs(p, n);
        // A schedule's waits are as listed; the formulas are capped.
        const expected = p.strategy === 'schedule' ? formula(p, n) : Math.min(formula(p, n), p.maxDelayMs);
        expect(Number.isInteger(base)).toBe(true);
        expect(Math.abs(base - expected)).toBeLessThanOrEqual(0.5);
        expect(base).toBeGreaterThanOrEqual(0);
        expect(base).toBeLessThanOrEqual(p.strategy === 'schedule' ? MAX_SCHEDULE_DELAY_MS : p.maxDelayMs);
      }),
      { numRuns: 500 },
    );
  });

  it('is non-decreasing in n for exponential (multiplier ≥ 1) and linear, constant for fixed', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          policyArb('exponential', fc.oneof(fc.constantFrom(1, 2), fc.double({ min: 1, max: 10, noNaN: true }))),
          policyArb('linear'),
          policyArb('fixed'),
        ),
        fc.integer({ min: 1, max: MAX_ATTEMPTS_LIMIT - 1 }),
        (p, n) => {
          const [a, b] = [baseBackoffMs(p, n), baseBackoffMs(p, n + 1)];
          if (p.strategy === 'fixed') expect(b).toBe(a);
          else expect(b).toBeGreaterThanOrEqual(a);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('refuses retry numbers below 1', () => {
    fc.assert(
      fc.property(policyArb(), fc.oneof(fc.integer({ max: 0 }), fc.constant(Number.NaN)), (p, n) => {
        expect(() => baseBackoffMs(p, n)).toThrow(RangeError);
      }),
    );
  });
});

describe('retryDelayMs', () => {
  it('is null exactly when the attempts are used up or the strategy is none', () => {
    fc.assert(
      fc.property(policyArb(), fc.integer({ min: 1, max: MAX_ATTEMPTS_LIMIT + 5 }), unit, (p, made, r) => {
        const d = retryDelayMs(p, made, null, () => r);
        expect(d === null).toBe(made >= p.maxAttempts || p.strategy === 'none');
      }),
      { numRuns: 500 },
    );
  });

  it('with jitter, lies in [½, 1] of the base delay, whole ms; without, equals it', () => {
    fc.assert(
      fc.property(policyArb(), retryNumber, unit, (p, made, r) => {
        const policy = { ...p, maxAttempts: MAX_ATTEMPTS_LIMIT + 1 };
        if (policy.strategy === 'none') return;
        const base = baseBackoffMs(policy, made);
        const d = retryDelayMs(policy, made, null, () => r)!;
        expect(Number.isInteger(d)).toBe(true);
        if (!policy.jitter) {
          expect(d).toBe(base);
          return;
        }
        expect(d).toBeGreaterThanOrEqual(base / 2);
        expect(d).toBeLessThanOrEqual(base);
        // the draw maps [0, 1) onto [½, 1] of the base, in order
        expect(retryDelayMs(policy, made, null, () => 0)).toBe(Math.round(base / 2));
        expect(retryDelayMs(policy, made, null, () => (r + 1) / 2)!).toBeGreaterThanOrEqual(d);
      }),
      { numRuns: 500 },
    );
  });

  it('Retry-After raises the delay to its value, never above maxDelayMs, and never lowers it', () => {
    fc.assert(
      fc.property(
        policyArb(),
        retryNumber,
        unit,
        fc.oneof(fc.integer({ min: 0, max: 2 * MAX_BACKOFF_MS }), fc.integer({ min: 0, max: 10_000 })),
        (p, made, r, retryAfterMs) => {
          const policy = { ...p, maxAttempts: MAX_ATTEMPTS_LIMIT + 1 };
          if (policy.strategy === 'none') {
            expect(retryDelayMs(policy, made, retryAfterMs, () => r)).toBeNull();
            return;
          }
          const without = retryDelayMs(policy, made, null, () => r)!;
          const d = retryDelayMs(policy, made, retryAfterMs, () => r)!;
          expect(d).toBe(Math.max(without, Math.min(retryAfterMs, policy.maxDelayMs)));
          // A schedule's listed wait may be above the cap; Retry-After never takes it higher than either.
          expect(d).toBeLessThanOrEqual(Math.max(policy.maxDelayMs, without));
          expect(d).toBeGreaterThanOrEqual(without);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('Retry-After does not grant attempts beyond maxAttempts', () => {
    fc.assert(
      fc.property(policyArb(), fc.nat(1_000_000), (p, ra) => {
        expect(retryDelayMs(p, p.maxAttempts, ra)).toBeNull();
      }),
    );
  });
});

describe('the schedule strategy', () => {
  /** A resolved schedule policy over `delays`, with the other fields anything. */
  const scheduleArb = fc
    .tuple(policyArb('schedule'), delaysArb)
    .map(([p, delaysMs]) => resolveRetryPolicy({ ...p, strategy: 'schedule', delaysMs }));

  it('resolves to delaysMs.length + 1 attempts whatever maxAttempts said, and no jitter unless asked', () => {
    fc.assert(
      fc.property(
        delaysArb,
        fc.integer({ min: 1, max: MAX_ATTEMPTS_LIMIT }),
        fc.option(fc.boolean(), { nil: undefined }),
        (delaysMs, max, jitter) => {
          const p = resolveRetryPolicy({ strategy: 'schedule', delaysMs, maxAttempts: max, ...(jitter === undefined ? {} : { jitter }) });
          expect(p.maxAttempts).toBe(delaysMs.length + 1);
          expect(p.delaysMs).toEqual(delaysMs);
          expect(p.jitter).toBe(jitter ?? false);
        },
      ),
    );
  });

  it('retry n waits delaysMs[n−1] exactly without jitter (maxDelayMs does not cut it); none is left after the list', () => {
    fc.assert(
      fc.property(scheduleArb, fc.integer({ min: 1, max: MAX_SCHEDULE_DELAYS + 5 }), unit, (p, made, r) => {
        const policy = { ...p, jitter: false };
        const d = retryDelayMs(policy, made, null, () => r);
        if (made > policy.delaysMs!.length) expect(d).toBeNull();
        else expect(d).toBe(policy.delaysMs![made - 1]);
      }),
      { numRuns: 500 },
    );
  });

  it('with jitter, retry n waits within [½, 1] of delaysMs[n−1]', () => {
    fc.assert(
      fc.property(scheduleArb, fc.integer({ min: 1, max: MAX_SCHEDULE_DELAYS }), unit, (p, made, r) => {
        const policy = { ...p, jitter: true };
        fc.pre(made <= policy.delaysMs!.length);
        const listed = policy.delaysMs![made - 1]!;
        const d = retryDelayMs(policy, made, null, () => r)!;
        expect(Number.isInteger(d)).toBe(true);
        expect(d).toBeGreaterThanOrEqual(Math.floor(listed / 2));
        expect(d).toBeLessThanOrEqual(listed);
      }),
      { numRuns: 500 },
    );
  });

  it('Retry-After raises the wait up to maxDelayMs and never lowers a listed wait above it', () => {
    fc.assert(
      fc.property(scheduleArb, fc.integer({ min: 1, max: MAX_SCHEDULE_DELAYS }), fc.nat(2 * MAX_SCHEDULE_DELAY_MS), (p, made, ra) => {
        const policy = { ...p, jitter: false };
        fc.pre(made <= policy.delaysMs!.length);
        const listed = policy.delaysMs![made - 1]!;
        expect(retryDelayMs(policy, made, ra)).toBe(Math.max(listed, Math.min(ra, policy.maxDelayMs)));
      }),
      { numRuns: 500 },
    );
  });

  it('a maxAttempts sent with a schedule is accepted only when absent or delaysMs.length + 1', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: MAX_SCHEDULE_DELAYS }),
        fc.option(fc.integer({ min: 1, max: MAX_ATTEMPTS_LIMIT }), { nil: undefined }),
        (n, max) => {
          expect(scheduleAttemptsIssue(max, n) === null).toBe(max === undefined || max === n + 1);
        },
      ),
    );
  });
});

describe('parseRetryAfter', () => {
  const now = fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2060, 0, 1) });
  const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const LONG_DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
  const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const p2 = (n: number): string => String(n).padStart(2, '0');
  const time = (d: Date): string => `${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())}`;
  /** RFC 9110 §5.6.7's three HTTP-date forms, built by hand from UTC fields. */
  const formats = {
    imf: (d: Date) => `${DAYS[d.getUTCDay()]}, ${p2(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} ${time(d)} GMT`,
    rfc850: (d: Date) =>
      `${LONG_DAYS[d.getUTCDay()]}, ${p2(d.getUTCDate())}-${MONTHS[d.getUTCMonth()]}-${p2(d.getUTCFullYear() % 100)} ${time(d)} GMT`,
    asctime: (d: Date) =>
      `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2, ' ')} ${time(d)} ${d.getUTCFullYear()}`,
  };

  it('reads delay-seconds as seconds, leading zeros and surrounding whitespace allowed', () => {
    fc.assert(
      fc.property(fc.nat(1_000_000_000), fc.nat(3), fc.constantFrom('', ' ', '\t'), now, (s, zeros, ws, n) => {
        expect(parseRetryAfter(`${ws}${'0'.repeat(zeros)}${s}${ws}`, n)).toBe(s * 1000);
      }),
    );
  });

  it('reads each HTTP-date form as GMT: the time until it, or 0 when past', () => {
    fc.assert(
      fc.property(
        now,
        fc.integer({ min: -40 * 365, max: 40 * 365 }),
        fc.nat(86_399),
        fc.constantFrom('imf', 'rfc850', 'asctime') as fc.Arbitrary<keyof typeof formats>,
        (n, days, seconds, form) => {
          // whole seconds, within ±40 years of now (the two-digit RFC 850 year is read relative to now)
          const t = Math.floor(n / 86_400_000) * 86_400_000 + days * 86_400_000 + seconds * 1000;
          const v = formats[form](new Date(t));
          expect(parseRetryAfter(v, n), v).toBe(Math.max(0, t - n));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a past date means "now" (0), a future one the exact distance', () => {
    fc.assert(
      fc.property(now, fc.integer({ min: 1, max: 10 * 86_400 }), (n, secs) => {
        const base = Math.floor(n / 1000) * 1000;
        expect(parseRetryAfter(new Date(base - secs * 1000).toUTCString(), n)).toBe(0);
        expect(parseRetryAfter(new Date(base + secs * 1000).toUTCString(), base)).toBe(secs * 1000);
      }),
    );
  });

  it('is null for garbage', () => {
    const numberish = fc.oneof(
      fc.tuple(fc.nat(999), fc.nat(999)).map(([a, b]) => `${a}.${b}`),
      fc.nat(999).map((a) => `-${a}`),
      fc.nat(999).map((a) => `+${a}`),
      fc.nat(999).map((a) => `${a}s`),
      fc.tuple(fc.nat(999), fc.nat(999)).map(([a, b]) => `${a} ${b}`),
      fc.tuple(fc.nat(999), fc.nat(99)).map(([a, b]) => `${a}e${b}`),
      fc.tuple(fc.nat(12), fc.nat(31)).map(([a, b]) => `${a}/${b}`),
      fc.tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.nat(3000)).map(([w, y]) => `${w} ${y}`),
    );
    const anyText = fc.string({ maxLength: 40 });
    // anything but delay-seconds (digits, trimmed)
    const garbage = fc.oneof(numberish, anyText).filter((v) => !/^\d+$/.test(v.trim()));
    fc.assert(
      fc.property(garbage, now, (v, n) => {
        expect(parseRetryAfter(v, n), JSON.stringify(v)).toBeNull();
      }),
      { numRuns: 500 },
    );
  });
});
