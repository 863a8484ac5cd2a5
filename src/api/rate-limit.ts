/**
 * Per-tenant rate limit of the API: a token bucket per tenant, per API process.
 *
 * Each tenant's bucket holds up to `burst` tokens and refills at `ratePerSecond` tokens a second; a request takes
 * one token, and a request that finds less than one is answered `429` with `Retry-After` (whole seconds until a
 * token is back). The buckets live in this process's memory: with N API processes a tenant may make up to N times
 * the rate. A limit shared across processes would need the database (or another shared store) on every request,
 * which would cost more than the requests it protects.
 *
 * The middleware runs after authentication, keyed by the authenticated tenant: requests with unknown, revoked or
 * expired keys are answered `401` before they reach a bucket, so nobody can exhaust a tenant's bucket without its
 * key. The map of buckets is bounded (`maxTenants`, least recently used evicted first), so a flood of tenants
 * cannot grow memory; an evicted tenant starts again with a full bucket, which only errs in its favour.
 *
 * hono-rate-limiter was considered and not used: it counts fixed windows (no burst with a steady refill), its
 * MemoryStore runs a timer (a leak in tests, refused in a Workers global scope), and its responses are not RFC 9457.
 */
import type { MiddlewareHandler } from 'hono';
import type { Clock } from '../domain/clock.ts';
import type { AppEnv } from './env.ts';
import { ApiError } from './problems.ts';

/** Most tenants whose buckets one process keeps (about 100 bytes each). */
export const MAX_TRACKED_TENANTS = 10_000;

/** The outcome of taking a token: allowed, or refused with the wait until the next token, in whole seconds (≥ 1). */
export type TakeResult = { ok: true } | { ok: false; retryAfterSeconds: number };

type Bucket = { tokens: number; updatedMs: number };

/** Token buckets by key (a tenant id), refilled lazily on each take; no timers. */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();

  /**
   * @param ratePerSecond tokens added per second (> 0)
   * @param burst capacity of a bucket, in tokens (values below 1 are taken as 1)
   * @param maxKeys most buckets kept; beyond it the least recently used is dropped
   */
  constructor(
    readonly ratePerSecond: number,
    readonly burst: number,
    readonly maxKeys: number = MAX_TRACKED_TENANTS,
  ) {
    if (!(ratePerSecond > 0)) throw new RangeError('ratePerSecond must be > 0');
  }

  /** Buckets kept now (for tests of the bound). */
  get size(): number {
    return this.buckets.size;
  }

  /**
   * Takes one token from `key`'s bucket at `nowMs` (UTC epoch ms; a clock going backwards adds nothing).
   * @returns ok, or the whole seconds (rounded up, at least 1) until a token is available
   */
  take(key: string, nowMs: number): TakeResult {
    const capacity = Math.max(1, this.burst);
    const found = this.buckets.get(key);
    let bucket: Bucket;
    if (found) {
      const elapsedMs = Math.max(0, nowMs - found.updatedMs);
      bucket = { tokens: Math.min(capacity, found.tokens + (elapsedMs * this.ratePerSecond) / 1000), updatedMs: Math.max(nowMs, found.updatedMs) };
      this.buckets.delete(key); // re-inserted below: Map order is then least recently used first
    } else {
      bucket = { tokens: capacity, updatedMs: nowMs };
      if (this.buckets.size >= this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
    }
    const ok = bucket.tokens >= 1;
    if (ok) bucket.tokens -= 1;
    this.buckets.set(key, bucket);
    if (ok) return { ok: true };
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.ratePerSecond)) };
  }
}

/**
 * The middleware: one token of the authenticated tenant's bucket per request, else `429` problem+json with
 * `Retry-After`. Mount it after the API key check; requests without a tenant (none authenticated) pass untouched.
 */
export function rateLimit(buckets: TokenBuckets, clock: Clock): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const tenantId = c.get('tenantId');
    if (tenantId) {
      const r = buckets.take(tenantId, clock.now());
      if (!r.ok) {
        throw new ApiError(
          'rate_limited',
          `this tenant may make ${buckets.ratePerSecond} requests a second (bursts of ${Math.max(1, buckets.burst)}); retry in ${r.retryAfterSeconds} s`,
          undefined,
          { 'retry-after': String(r.retryAfterSeconds) },
        );
      }
    }
    await next();
  };
}
