/**
 * Named examples for src/domain/retry.ts, and for the success and deadline checks that decide whether a run is
 * retried at all (src/domain/status-codes.ts, src/domain/window.ts).
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  baseBackoffMs,
  DEFAULT_RETRY,
  parseRetryAfter,
  type RetryPolicy,
  resolveRetryPolicy,
  retryDelayMs,
} from '../../src/domain/retry.ts';
import { DEFAULT_SUCCESS_CODES, isSuccessStatus } from '../../src/domain/status-codes.ts';
import { isPastWindow, startDeadline } from '../../src/domain/window.ts';

const policy = (p: Partial<RetryPolicy>): RetryPolicy => resolveRetryPolicy({ jitter: false, ...p });
const bases = (p: RetryPolicy, n: number): number[] => Array.from({ length: n }, (_, i) => baseBackoffMs(p, i + 1));

describe('resolveRetryPolicy', () => {
  it('fills in the defaults', () => {
    expect(resolveRetryPolicy(undefined)).toEqual(DEFAULT_RETRY);
    expect(resolveRetryPolicy(null)).toEqual(DEFAULT_RETRY);
    expect(resolveRetryPolicy({ maxAttempts: 3 })).toEqual({ ...DEFAULT_RETRY, maxAttempts: 3 });
  });

  it('makes `none` a single attempt', () => {
    expect(resolveRetryPolicy({ strategy: 'none', maxAttempts: 9 }).maxAttempts).toBe(1);
  });

  it('does not change the frozen default', () => {
    resolveRetryPolicy({ strategy: 'none' });
    expect(DEFAULT_RETRY.maxAttempts).toBe(5);
  });
});

describe('baseBackoffMs', () => {
  it('exponential: 1 s, 2 s, 4 s, … by default, capped at maxDelayMs', () => {
    expect(bases(DEFAULT_RETRY, 5)).toEqual([1000, 2000, 4000, 8000, 16000]);
    expect(bases(policy({ maxDelayMs: 5000 }), 5)).toEqual([1000, 2000, 4000, 5000, 5000]);
    expect(baseBackoffMs(DEFAULT_RETRY, 100)).toBe(3_600_000);
  });

  it('linear and fixed', () => {
    expect(bases(policy({ strategy: 'linear', initialDelayMs: 1500 }), 4)).toEqual([1500, 3000, 4500, 6000]);
    expect(bases(policy({ strategy: 'linear', initialDelayMs: 1500, maxDelayMs: 4000 }), 4)).toEqual([1500, 3000, 4000, 4000]);
    expect(bases(policy({ strategy: 'fixed', initialDelayMs: 750 }), 3)).toEqual([750, 750, 750]);
  });

  it('rounds a fractional multiplier to whole ms', () => {
    // 1000 × 1.5^n: 1000, 1500, 2250, 3375, 5062.5
    expect(bases(policy({ multiplier: 1.5 }), 5)).toEqual([1000, 1500, 2250, 3375, 5063]);
  });

  it('a zero initial delay stays zero even when the power overflows', () => {
    // 1e6^99 is Infinity, and 0 × Infinity is NaN
    expect(baseBackoffMs(policy({ initialDelayMs: 0, multiplier: 1e6 }), 100)).toBe(0);
    expect(baseBackoffMs(policy({ initialDelayMs: 1, multiplier: 1e6 }), 100)).toBe(3_600_000);
  });

  it('refuses a retry number below 1', () => {
    expect(() => baseBackoffMs(DEFAULT_RETRY, 0)).toThrow(RangeError);
    expect(() => baseBackoffMs(DEFAULT_RETRY, Number.NaN)).toThrow(RangeError);
  });
});

describe('retryDelayMs', () => {
  it('retries until maxAttempts attempts were made', () => {
    const p = policy({ maxAttempts: 3 });
    expect([1, 2, 3, 4].map((made) => retryDelayMs(p, made))).toEqual([1000, 2000, null, null]);
    expect(retryDelayMs(policy({ maxAttempts: 1 }), 1)).toBeNull();
  });

  it('never retries `none`', () => {
    expect(retryDelayMs({ ...DEFAULT_RETRY, strategy: 'none' }, 1)).toBeNull();
  });

  it('equal jitter: half the base plus a random share of the other half', () => {
    const p = { ...DEFAULT_RETRY }; // jitter on
    expect(retryDelayMs(p, 3, null, () => 0)).toBe(2000);
    expect(retryDelayMs(p, 3, null, () => 0.5)).toBe(3000);
    expect(retryDelayMs(p, 3, null, () => 0.999999)).toBe(4000);
  });

  it('jitter stays within [½, 1] of a base rounded from a fractional multiplier', () => {
    // base 5063 (5062.5 rounded): the shortest jittered delay is 2532, not 2531 (below half of 5062.5)
    const p = { ...DEFAULT_RETRY, multiplier: 1.5, maxAttempts: 10 };
    expect(retryDelayMs(p, 5, null, () => 0)).toBe(2532);
    expect(retryDelayMs(p, 5, null, () => 0.9999999)).toBe(5063);
  });

  it('Retry-After raises the delay, capped by maxDelayMs, and never lowers it', () => {
    const p = policy({}); // 1 s before the first retry
    expect(retryDelayMs(p, 1, 30_000)).toBe(30_000);
    expect(retryDelayMs(p, 1, 500)).toBe(1000);
    expect(retryDelayMs(p, 1, 0)).toBe(1000);
    expect(retryDelayMs(p, 1, 10 * 3_600_000)).toBe(3_600_000);
    expect(retryDelayMs(p, 1, Number.POSITIVE_INFINITY)).toBe(3_600_000);
    expect(retryDelayMs(policy({ maxAttempts: 1 }), 1, 30_000)).toBeNull();
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-10-21T07:27:00Z');

  it('reads delay-seconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter(' 60 ', now)).toBe(60_000);
    expect(parseRetryAfter('007', now)).toBe(7000);
  });

  it('reads the three HTTP-date forms of RFC 9110 §5.6.7', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2026 07:28:00 GMT', now)).toBe(60_000); // IMF-fixdate
    expect(parseRetryAfter('Wednesday, 21-Oct-26 07:28:00 GMT', now)).toBe(60_000); // RFC 850
    expect(parseRetryAfter('Wed Oct 21 07:28:00 2026', now)).toBe(60_000); // asctime
    expect(parseRetryAfter('Sun Nov  6 08:49:37 2026', now)).toBe(Date.parse('2026-11-06T08:49:37Z') - now);
  });

  it('reads an RFC 850 two-digit year as the most recent year that is not more than 50 years ahead', () => {
    expect(parseRetryAfter('Sunday, 06-Nov-94 08:49:37 GMT', now)).toBe(0); // 1994
    expect(parseRetryAfter('Monday, 01-Jan-35 00:00:00 GMT', now)).toBe(Date.parse('2035-01-01T00:00:00Z') - now);
  });

  it('gives 0 for a date in the past', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2026 07:26:59 GMT', now)).toBe(0);
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', now)).toBe(0);
  });

  describe('in a process whose local zone is not UTC', () => {
    const saved = process.env.TZ;
    afterEach(() => {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    });

    it('still reads asctime dates as GMT', () => {
      process.env.TZ = 'America/New_York';
      expect(new Date(Date.UTC(2026, 0, 1)).getHours()).not.toBe(0); // the zone change took effect
      expect(parseRetryAfter('Wed Oct 21 07:28:00 2026', now)).toBe(60_000);
      expect(parseRetryAfter('Wed, 21 Oct 2026 07:28:00 GMT', now)).toBe(60_000);
    });
  });

  it.each([
    '1.5',
    '-5',
    '+5',
    '5s',
    '1e3',
    '0x10',
    'Infinity',
    'soon',
    'soon 1',
    'abc 2020',
    '1/2',
    'tomorrow',
    '2026-10-21T07:28:00Z', // RFC 3339, not an HTTP-date
    'Wed, 21 Oct 2026 07:28:00 PST', // HTTP-dates are GMT
    'Wed, 21 Oct 2026 07:28:00', // no zone
    'Fri, 31 Apr 2026 07:28:00 GMT', // no 31 April
    'Sun, 29 Feb 2026 07:28:00 GMT', // 2026 is no leap year
    'Wed, 21 Oct 2026 24:00:00 GMT',
    'Wed, 21 Oct 2026 07:60:00 GMT',
    'Wed, 21 Foo 2026 07:28:00 GMT',
    'Wed, 21 Oct 2026 07:28 GMT',
  ])('is null for %j', (v) => {
    expect(parseRetryAfter(v, now)).toBeNull();
  });

  it('is null when absent', () => {
    expect(parseRetryAfter(null, now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
    expect(parseRetryAfter('', now)).toBeNull();
    expect(parseRetryAfter('   ', now)).toBeNull();
  });
});

describe('isSuccessStatus', () => {
  it('matches status classes', () => {
    expect(isSuccessStatus(200, ['2xx'])).toBe(true);
    expect(isSuccessStatus(204, ['2xx'])).toBe(true);
    expect(isSuccessStatus(299, ['2xx'])).toBe(true);
    expect(isSuccessStatus(199, ['2xx'])).toBe(false);
    expect(isSuccessStatus(300, ['2xx'])).toBe(false);
    expect(isSuccessStatus(302, ['3xx'])).toBe(true);
    expect(isSuccessStatus(500, ['2xx', '3xx'])).toBe(false);
  });

  it('matches exact codes', () => {
    expect(isSuccessStatus(404, [404])).toBe(true);
    expect(isSuccessStatus(200, [201])).toBe(false);
    expect(isSuccessStatus(410, [404, '2xx'])).toBe(false);
    expect(isSuccessStatus(404, [404, '2xx'])).toBe(true);
    expect(isSuccessStatus(201, [404, '2xx'])).toBe(true);
  });

  it('nothing succeeds against an empty list; 2xx by default', () => {
    expect(isSuccessStatus(200, [])).toBe(false);
    expect(DEFAULT_SUCCESS_CODES).toEqual(['2xx']);
    expect(isSuccessStatus(201, DEFAULT_SUCCESS_CODES)).toBe(true);
    expect(isSuccessStatus(429, DEFAULT_SUCCESS_CODES)).toBe(false);
  });

  it('a class matches exactly the hundred codes it names', () => {
    const cls = fc.constantFrom('1xx', '2xx', '3xx', '4xx', '5xx' as const);
    fc.assert(
      fc.property(fc.integer({ min: 100, max: 599 }), cls, fc.integer({ min: 100, max: 599 }), (status, c, code) => {
        expect(isSuccessStatus(status, [c])).toBe(String(status)[0] === c[0]);
        expect(isSuccessStatus(status, [code])).toBe(status === code);
        expect(isSuccessStatus(status, [code, c])).toBe(status === code || String(status)[0] === c[0]);
      }),
    );
  });
});

describe('isPastWindow', () => {
  const scheduled = Date.parse('2026-06-01T10:00:00Z');

  it('has no deadline without a window', () => {
    expect(startDeadline(scheduled, null)).toBeNull();
    expect(isPastWindow(scheduled, null, scheduled + 365 * 86_400_000)).toBe(false);
  });

  it('the deadline itself is still inside the window', () => {
    expect(startDeadline(scheduled, 60_000)).toBe(scheduled + 60_000);
    expect(isPastWindow(scheduled, 60_000, scheduled)).toBe(false);
    expect(isPastWindow(scheduled, 60_000, scheduled + 60_000)).toBe(false);
    expect(isPastWindow(scheduled, 60_000, scheduled + 60_001)).toBe(true);
  });

  it('a zero window allows only the scheduled instant (and earlier)', () => {
    expect(isPastWindow(scheduled, 0, scheduled - 1)).toBe(false);
    expect(isPastWindow(scheduled, 0, scheduled)).toBe(false);
    expect(isPastWindow(scheduled, 0, scheduled + 1)).toBe(true);
  });

  it('is past exactly when the attempt starts after scheduledFor + window', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 42 }),
        fc.option(fc.integer({ min: 0, max: 30 * 86_400_000 })),
        fc.integer({ min: -86_400_000, max: 40 * 86_400_000 }),
        (s, w, delta) => {
          expect(isPastWindow(s, w, s + delta)).toBe(w !== null && delta > w);
        },
      ),
    );
  });
});
