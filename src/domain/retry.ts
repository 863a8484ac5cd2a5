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
      d = policy.initialDelayMs === 0 ? 0 : policy.initialDelayMs * policy.multiplier ** (n - 1);
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

// One reading of `Retry-After` for the dispatcher and the client package (which carries it, having no other home it
// could import from): packages/client/src/retry-after.ts.
export { parseRetryAfter } from '../../packages/client/src/retry-after.ts';
