/**
 * Retry policy and backoff arithmetic (API.md "The callback request").
 *
 * Backoff before retry n (n = 1 after the first failed attempt), before the cap:
 *   exponential  initialDelayMs × multiplier^(n−1)
 *   linear       initialDelayMs × n
 *   fixed        initialDelayMs
 * rounded to whole ms and capped by maxDelayMs. With `jitter` the delay is drawn uniformly from [½, 1] of that ("equal jitter", as in
 * the AWS Architecture Blog's "Exponential Backoff And Jitter"), so synchronized failures spread out.
 * A `Retry-After` (429/503) raises the delay to at least its value, still capped by maxDelayMs.
 */
export const RETRY_STRATEGIES = ['exponential', 'linear', 'fixed', 'none'] as const;
export type RetryStrategy = (typeof RETRY_STRATEGIES)[number];

export type RetryPolicy = {
  strategy: RetryStrategy;
  /** Attempts in all, the first included (1 = never retry). */
  maxAttempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
  multiplier: number;
  jitter: boolean;
};

/** The policy of a job that names none. */
export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({
  strategy: 'exponential',
  maxAttempts: 5,
  initialDelayMs: 1000,
  maxDelayMs: 3_600_000,
  multiplier: 2,
  jitter: true,
});
/** Upper bound of maxAttempts. */
export const MAX_ATTEMPTS_LIMIT = 100;
/** Upper bound of any single backoff (7 days). */
export const MAX_BACKOFF_MS = 7 * 24 * 3_600_000;

/** Fills a partial policy with the defaults; `strategy: "none"` means a single attempt. */
export function resolveRetryPolicy(p: Partial<RetryPolicy> | undefined | null): RetryPolicy {
  const policy = { ...DEFAULT_RETRY, ...(p ?? {}) };
  if (policy.strategy === 'none') policy.maxAttempts = 1;
  return policy;
}

/**
 * The delay before retry `n` (n ≥ 1), in whole ms, before jitter: the strategy's formula rounded to whole ms, capped by
 * maxDelayMs.
 * @throws RangeError when n < 1
 */
export function baseBackoffMs(policy: RetryPolicy, n: number): number {
  if (!(n >= 1)) throw new RangeError(`retry number must be ≥ 1, got ${n}`);
  let d: number;
  switch (policy.strategy) {
    case 'exponential':
      // 0 × an overflowed power is NaN; a zero initial delay stays zero.
      d = policy.initialDelayMs === 0 ? 0 : policy.initialDelayMs * Math.pow(policy.multiplier, n - 1);
      break;
    case 'linear':
      d = policy.initialDelayMs * n;
      break;
    case 'fixed':
    case 'none':
      d = policy.initialDelayMs;
      break;
  }
  return Math.min(Number.isFinite(d) ? Math.round(d) : Infinity, policy.maxDelayMs);
}

/**
 * When a run whose `attemptsMade`-th attempt just failed should try again.
 * @param attemptsMade attempts so far, the failed one included (≥ 1)
 * @param retryAfterMs the receiver's `Retry-After`, in ms, if it sent one with 429/503
 * @param random a number in [0, 1), for jitter
 * @returns the delay in whole ms, or null when the attempts are exhausted
 */
export function retryDelayMs(
  policy: RetryPolicy,
  attemptsMade: number,
  retryAfterMs: number | null = null,
  random: () => number = Math.random,
): number | null {
  if (policy.strategy === 'none' || attemptsMade >= policy.maxAttempts) return null;
  const base = baseBackoffMs(policy, attemptsMade);
  let d = policy.jitter ? base / 2 + (base / 2) * random() : base;
  if (retryAfterMs !== null && retryAfterMs > d) d = Math.min(retryAfterMs, policy.maxDelayMs);
  return Math.round(d);
}

/**
 * Parses an HTTP `Retry-After` value (RFC 9110 §10.2.3): delay-seconds or an HTTP-date (§5.6.7: IMF-fixdate, or the
 * obsolete RFC 850 and asctime forms; always GMT).
 * @returns milliseconds from `nowMs` (0 for a date in the past), or null when absent or unparseable
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = parseHttpDate(v, nowMs);
  return t === null ? null : Math.max(0, t - nowMs);
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const MON = '(?<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '(?<hh>\\d\\d):(?<mm>\\d\\d):(?<ss>\\d\\d)';
// Date.parse is no help here: it takes "1.5" or "soon 1" for dates in 2001 and reads asctime as local time.
const HTTP_DATES = [
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (?<day>\\d\\d) ${MON} (?<year>\\d{4}) ${TIME} GMT$`, // IMF-fixdate
  `^(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, (?<day>\\d\\d)-${MON}-(?<year>\\d\\d) ${TIME} GMT$`, // RFC 850
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MON} (?<day>[ \\d]\\d) ${TIME} (?<year>\\d{4})$`, // asctime
].map((re) => new RegExp(re, 'i'));

/** An RFC 9110 HTTP-date as UTC epoch ms, or null when `v` is none or names no real time. */
function parseHttpDate(v: string, nowMs: number): number | null {
  let g: Record<string, string | undefined> | undefined;
  for (const re of HTTP_DATES) if ((g = re.exec(v)?.groups)) break;
  if (g === undefined) return null;
  const [day, hh, mm, ss] = [g.day, g.hh, g.mm, g.ss].map(Number) as [number, number, number, number];
  let year = Number(g.year);
  if (g.year?.length === 2) {
    // A two-digit year more than 50 years ahead is the most recent past year with those digits (§5.6.7).
    const thisYear = new Date(nowMs).getUTCFullYear();
    year += thisYear - (thisYear % 100);
    if (year > thisYear + 50) year -= 100;
  }
  const d = new Date(Date.UTC(2000, MONTHS.indexOf(g.mon?.toLowerCase() ?? ''), day, hh, mm, ss));
  d.setUTCFullYear(year); // Date.UTC would read years below 100 as 19xx
  // Out-of-range fields (31 Apr, 24:00, :60) roll over; refuse them.
  const exact = d.getUTCDate() === day && d.getUTCHours() === hh;
  return exact && d.getUTCMinutes() === mm && d.getUTCSeconds() === ss ? d.getTime() : null;
}
