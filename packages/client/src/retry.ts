/**
 * Bounded retries of `429 Too Many Requests` and `503 Service Unavailable`, as a wrapper around `fetch`.
 *
 * A request is retried only when repeating it cannot do something twice: its method is idempotent (`GET`, `HEAD`,
 * `OPTIONS`, `PUT`, `DELETE`), or it carries an `Idempotency-Key` header (the server answers a repeat with the first
 * result), or the client marks it safe (`POST /v1/schedules/preview`, which changes nothing). Each retry waits what
 * the answer's `Retry-After` asks (delay-seconds or an HTTP date); without the header, 0.5 s, 1 s, 2 s, ….
 * At most `maxRetries` retries (default 3, so 4 requests in all); when the server asks for a longer wait than
 * `maxDelayMs` (default 30 s), the client does not wait: the answer stands and the call throws its `ChimeError`.
 */
import { parseRetryAfter } from './retry-after.ts';

/** What the client calls to send a request: `globalThis.fetch`, or any function of the same shape. */
export type FetchLike = (request: Request) => Promise<Response>;

/** How the client retries `429` and `503` (`createChimeClient({ retry })`; `retry: false` turns retries off). */
export type RetryOptions = {
  /** Most retries of one call (default 3; 0 = none). */
  maxRetries?: number;
  /** Longest wait before a retry, in ms (default 30,000): a `Retry-After` asking for more ends the retries. */
  maxDelayMs?: number;
};

export const DEFAULT_RETRY: Required<RetryOptions> = Object.freeze({ maxRetries: 3, maxDelayMs: 30_000 });

/** Statuses that are retried. */
export const RETRY_STATUSES: readonly number[] = Object.freeze([429, 503]);

const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/** Wait when an answer has no `Retry-After`: 500 ms doubling per retry. */
const FALLBACK_DELAY_MS = 500;

export { parseRetryAfter };

/** True when repeating `request` cannot act twice: an idempotent method or an `Idempotency-Key` header. */
export function isRetryable(request: Request): boolean {
  return IDEMPOTENT_METHODS.has(request.method.toUpperCase()) || request.headers.has('idempotency-key');
}

/**
 * `fetch` with bounded retries of `429`/`503` for retryable requests (`isRetryable`, or every request when `force`).
 * Each attempt sends a clone of the request, so its body can be sent again. The answer of the last attempt is
 * returned as it is (the caller turns it into a `ChimeError`). A waiting retry ends at once, rejecting, when the
 * request's `signal` aborts.
 */
export function withRetry(fetchFn: FetchLike, options: Required<RetryOptions>, force = false): FetchLike {
  return async (request) => {
    const retryable = force || isRetryable(request);
    for (let retry = 0; ; retry++) {
      const response = await fetchFn(request.clone());
      if (!retryable || retry >= options.maxRetries || !RETRY_STATUSES.includes(response.status)) return response;
      const asked = parseRetryAfter(response.headers.get('retry-after'));
      const wait = asked ?? Math.min(FALLBACK_DELAY_MS * 2 ** retry, options.maxDelayMs);
      if (wait > options.maxDelayMs) return response;
      await response.body?.cancel().catch(() => {});
      await sleep(wait, request.signal);
    }
  };
}

function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
