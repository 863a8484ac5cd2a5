/**
 * Retry policy and backoff arithmetic (API.md "The callback request", "Destination control").
 *
 * Backoff before retry n (n = 1 after the first failed attempt), before the cap:
 *   exponential  initialDelayMs × multiplier^(n−1)
 *   linear       initialDelayMs × n
 *   fixed        initialDelayMs
 * rounded to whole ms and capped by maxDelayMs; or
 *   schedule     delaysMs[n−1], as listed (maxDelayMs does not cut it), and maxAttempts = delaysMs.length + 1
 * (a written-out schedule, as Svix's retry schedule and QStash's `Upstash-Retry-Delay`).
 * With `jitter` the delay is drawn uniformly from [½, 1] of that ("equal jitter", as in the AWS Architecture Blog's
 * "Exponential Backoff And Jitter"), so synchronized failures spread out; a schedule has no jitter unless it asks.
 * A `Retry-After` (429/503) raises the delay to at least its value, capped by maxDelayMs (it never lowers a delay).
 */
export const RETRY_STRATEGIES = ['exponential', 'linear', 'fixed', 'schedule', 'none'] as const;
export type RetryStrategy = (typeof RETRY_STRATEGIES)[number];

/** Bounds of a `schedule` policy's `delaysMs`: 1..50 entries, each 0..86,400,000 ms (one day). */
export const MIN_SCHEDULE_DELAYS = 1;
export const MAX_SCHEDULE_DELAYS = 50;
export const MAX_SCHEDULE_DELAY_MS = 86_400_000;

export type RetryPolicy = {
  strategy: RetryStrategy;
  /** Attempts in all, the first included (1 = never retry); `delaysMs.length + 1` for `schedule`. */
  maxAttempts: number;
  initialDelayMs: number;
  /** Cap of the computed backoff and of a `Retry-After`; a `schedule`'s listed delays are not cut by it. */
  maxDelayMs: number;
  multiplier: number;
  jitter: boolean;
  /** `schedule` only: the wait before retry n is `delaysMs[n−1]`, in ms; absent for the other strategies. */
  delaysMs?: number[];
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

/**
 * Fills a partial policy with the defaults. `strategy: "none"` means a single attempt; `schedule` means
 * `delaysMs.length + 1` attempts whatever `maxAttempts` says (the API refuses a disagreeing one first), and no jitter
 * unless `jitter: true`; any other strategy drops `delaysMs` (a PATCH that leaves `schedule` merges the old policy).
 */
export function resolveRetryPolicy(p: Partial<RetryPolicy> | undefined | null): RetryPolicy {
  const schedule = p?.strategy === 'schedule';
  const policy: RetryPolicy = { ...DEFAULT_RETRY, ...(schedule ? { jitter: false } : {}), ...(p ?? {}) };
  if (policy.strategy === 'none') policy.maxAttempts = 1;
  if (schedule) {
    policy.delaysMs = [...(policy.delaysMs ?? [])];
    policy.maxAttempts = policy.delaysMs.length + 1;
  } else {
    delete policy.delaysMs;
  }
  return policy;
}

/**
 * Why `maxAttempts` as sent cannot go with a `schedule` of `delaysCount` delays (it must be absent or
 * `delaysCount + 1`), or null when it can. The API answers it as a 400 naming `retry.maxAttempts`.
 */
export function scheduleAttemptsIssue(maxAttempts: number | undefined, delaysCount: number): string | null {
  if (maxAttempts === undefined || maxAttempts === delaysCount + 1) return null;
  return `must be absent or ${delaysCount + 1} (delaysMs.length + 1) with strategy "schedule"`;
}

/**
 * The delay before retry `n` (n ≥ 1), in whole ms, before jitter: the strategy's formula rounded to whole ms, capped by
 * maxDelayMs; for `schedule`, `delaysMs[n−1]` as listed (past the list, its last entry; an empty list, 0).
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
    case 'schedule': {
      // Not capped: the tenant wrote each wait out (API.md "Destination control").
      const list = policy.delaysMs ?? [];
      return list.length === 0 ? 0 : Math.round(list[Math.min(n, list.length) - 1]!);
    }
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
  // max(): a schedule's listed delay may exceed maxDelayMs, and a capped Retry-After must not lower it.
  if (retryAfterMs !== null && retryAfterMs > d) d = Math.max(d, Math.min(retryAfterMs, policy.maxDelayMs));
  return Math.round(d);
}

// One reading of `Retry-After` for the dispatcher and the client package (which carries it, having no other home it
// could import from): packages/client/src/retry-after.ts.
export { parseRetryAfter } from '../../packages/client/src/retry-after.ts';
