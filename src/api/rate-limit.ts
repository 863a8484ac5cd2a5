/**
 * Per-tenant rate limit of the API (the `requestsPerSecond` quota): a token bucket per tenant in each API process,
 * sized so that the processes together allow the tenant's rate.
 *
 * Each tenant's bucket holds up to `burst` tokens and refills at `ratePerSecond` tokens a second; a request takes
 * one token, and a request that finds less than one is answered `429` with `Retry-After` (whole seconds until a
 * token is back). The rate is the tenant's override (`tenants.quotas.requestsPerSecond`, read with its key) or the
 * configured default; an override's burst is twice its rate, as the default's is unless CHIME_RATE_LIMIT_BURST says.
 *
 * Shared across processes without a database write per request: every API process on PostgreSQL heartbeats a row
 * every few seconds (src/store/api-presence.ts) and counts the live ones, N; each gives each tenant rate/N and
 * burst/N (at least one token). Behind a load balancer that spreads a tenant's requests over the processes, the
 * tenant gets about its rate in total, not N times it. The error bound: over any window of T seconds while N is
 * stable, a tenant gets at most rate·T + burst requests accepted in all; while a process is joining (until the
 * others' next heartbeat, API_HEARTBEAT_MS), at most rate·N/(N−1) a second; after a process dies, the others go on
 * giving rate/N until its row ages out (API_PROCESS_TTL_MS), which errs low. Requests sent to fewer processes than
 * are alive (no balancer, sticky connections) get less than the rate: the limit only ever errs on the side of
 * refusing. On the embedded database (one process) and on Workers (off: README) the buckets are simply local.
 *
 * The middleware runs after authentication, keyed by the authenticated tenant: requests with unknown, revoked or
 * expired keys are answered `401` before they reach a bucket, so nobody can exhaust a tenant's bucket without its
 * key. The map of buckets is bounded (`maxTenants`, least recently used evicted first), so a flood of tenants
 * cannot grow memory; an evicted tenant starts again with a full bucket, which only errs in its favour.
 *
 * hono-rate-limiter was considered and not used: it counts fixed windows (no burst with a steady refill), its
 * MemoryStore runs a timer (a leak in tests, refused in a Workers global scope), and its responses are not RFC 9457.
 *
 * The same buckets limit failed admin-token attempts per client address (`FailedAttempts`): a failure takes a token,
 * an address whose bucket is empty is answered `429` before its token is even looked at, so guessing the admin token
 * goes at ADMIN_FAILURES_PER_MINUTE per address once the first ADMIN_FAILURE_BURST are spent.
 */

import type { MiddlewareHandler } from 'hono';
import ipaddr from 'ipaddr.js';
import type { Clock } from '../domain/clock.ts';
import { effectiveQuota, type QuotaOverrides } from '../domain/quotas.ts';
import type { AppEnv } from './env.ts';
import { ApiError } from './problems.ts';

/** Most tenants whose buckets one process keeps (about 100 bytes each). */
export const MAX_TRACKED_TENANTS = 10_000;

/** The outcome of taking a token: allowed, or refused with the wait until the next token, in whole seconds (≥ 1). */
export type TakeResult = { ok: true } | { ok: false; retryAfterSeconds: number };

type Bucket = { tokens: number; updatedMs: number };
/** A bucket's refill rate (tokens a second, > 0) and capacity (tokens; below 1 taken as 1). */
export type BucketLimit = { readonly ratePerSecond: number; readonly burst: number };

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
   * Whether `key`'s bucket holds a token at `nowMs` (UTC epoch ms), without taking it or changing anything.
   * @returns ok, or the whole seconds (rounded up, at least 1) until a token is available
   */
  peek(key: string, nowMs: number): TakeResult {
    const found = this.buckets.get(key);
    if (!found) return { ok: true };
    const tokens = this.refilled(found, nowMs, this);
    return tokens >= 1 ? { ok: true } : { ok: false, retryAfterSeconds: this.waitSeconds(tokens, this.ratePerSecond) };
  }

  /**
   * Takes one token from `key`'s bucket at `nowMs` (UTC epoch ms; a clock going backwards adds nothing).
   * @param limit this key's rate (tokens a second, > 0) and burst (tokens), if not the constructor's: a bucket refills
   *   at the rate given with each take, so a changed limit applies from the next take on
   * @returns ok, or the whole seconds (rounded up, at least 1) until a token is available
   */
  take(key: string, nowMs: number, limit: BucketLimit = this): TakeResult {
    const found = this.buckets.get(key);
    let bucket: Bucket;
    if (found) {
      bucket = { tokens: this.refilled(found, nowMs, limit), updatedMs: Math.max(nowMs, found.updatedMs) };
      this.buckets.delete(key); // re-inserted below: Map order is then least recently used first
    } else {
      bucket = { tokens: Math.max(1, limit.burst), updatedMs: nowMs };
      if (this.buckets.size >= this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
    }
    const ok = bucket.tokens >= 1;
    if (ok) bucket.tokens -= 1;
    this.buckets.set(key, bucket);
    if (ok) return { ok: true };
    return { ok: false, retryAfterSeconds: this.waitSeconds(bucket.tokens, limit.ratePerSecond) };
  }

  /** The tokens of `bucket` at `nowMs`, refilled since its last update (a clock going backwards adds nothing). */
  private refilled(bucket: Bucket, nowMs: number, limit: BucketLimit): number {
    const elapsedMs = Math.max(0, nowMs - bucket.updatedMs);
    return Math.min(Math.max(1, limit.burst), bucket.tokens + (elapsedMs * limit.ratePerSecond) / 1000);
  }

  /** Whole seconds (at least 1) until a bucket holding `tokens` (< 1) holds one at `ratePerSecond`. */
  private waitSeconds(tokens: number, ratePerSecond: number): number {
    // Less a hair, so floating-point residue of a fractional rate (10/60 s) does not round 1 s up to 2.
    return Math.max(1, Math.ceil((1 - tokens) / ratePerSecond - 1e-9));
  }
}

/**
 * A tenant's limit in one of `processes` API processes: its rate (`overrides.requestsPerSecond`, else
 * `defaults.ratePerSecond`; 0 = none) and burst (the default's `burst` for the default rate, twice an override's rate
 * for an override), each divided by `processes` (the burst to at least one token).
 * @returns the process's share and the tenant's whole limit, or null when the tenant has no rate limit
 */
export function tenantRateShare(
  overrides: QuotaOverrides,
  defaults: { ratePerSecond: number; burst: number },
  processes: number,
): { share: BucketLimit; whole: BucketLimit } | null {
  const rate = effectiveQuota('requestsPerSecond', overrides, { requestsPerSecond: defaults.ratePerSecond });
  if (rate === null) return null;
  const burst = overrides.requestsPerSecond !== undefined ? 2 * rate : Math.max(1, defaults.burst);
  const n = Math.max(1, Math.floor(processes));
  return { whole: { ratePerSecond: rate, burst }, share: { ratePerSecond: rate / n, burst: Math.max(1, burst / n) } };
}

/**
 * The middleware: one token of the authenticated tenant's bucket per request, else `429` problem+json with
 * `Retry-After`. The tenant's limit is `tenantRateShare` of its quota overrides (`c.var.quotas`) and `defaults` over
 * `processes()` API processes (default 1). Mount it after the API key check; requests without a tenant (none
 * authenticated) pass untouched.
 */
export function rateLimit(
  buckets: TokenBuckets,
  clock: Clock,
  defaults: { ratePerSecond: number; burst: number } = buckets,
  processes: () => number = () => 1,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const tenantId = c.get('tenantId');
    const limit = tenantId ? tenantRateShare(c.get('quotas') ?? {}, defaults, processes()) : null;
    if (tenantId && limit) {
      const r = buckets.take(tenantId, clock.now(), limit.share);
      if (!r.ok) {
        const { ratePerSecond, burst } = limit.whole;
        throw new ApiError(
          'rate_limited',
          `this tenant may make ${ratePerSecond} requests a second (bursts of ${burst}), across all API processes; retry in ${r.retryAfterSeconds} s`,
          undefined,
          { 'retry-after': String(r.retryAfterSeconds) },
        );
      }
    }
    await next();
  };
}

/** Failed admin-token attempts an address may make at once (its bucket's capacity). */
export const ADMIN_FAILURE_BURST = 10;
/** Failed admin-token attempts an address may make per minute once its burst is spent (the refill rate). */
export const ADMIN_FAILURES_PER_MINUTE = 10;
/** Most client addresses whose failures one process keeps (least recently failed dropped first). */
export const MAX_TRACKED_ADDRESSES = 10_000;
/** The key of requests whose client address is not known (no `clientAddress` in the app's deps, or none given). */
export const UNKNOWN_ADDRESS = 'unknown';

/**
 * Failed attempts per client address, as token buckets that only failures take from: an address may fail `burst`
 * times at once, then `perMinute` times a minute. In this process's memory, like the tenants' buckets.
 */
export class FailedAttempts {
  private readonly buckets: TokenBuckets;

  /**
   * @param perMinute failures an address may make per minute after its burst (> 0)
   * @param burst failures an address may make at once
   * @param maxAddresses most addresses kept (least recently failed dropped first: it starts again with a full bucket)
   */
  constructor(perMinute = ADMIN_FAILURES_PER_MINUTE, burst = ADMIN_FAILURE_BURST, maxAddresses = MAX_TRACKED_ADDRESSES) {
    this.buckets = new TokenBuckets(perMinute / 60, burst, maxAddresses);
  }

  /**
   * Whether `address` may make an attempt at `nowMs` (UTC epoch ms): it may unless its failures spent its bucket.
   * @returns ok, or the whole seconds until it may try again
   */
  check(address: string, nowMs: number): TakeResult {
    return this.buckets.peek(addressKey(address), nowMs);
  }

  /** Counts a failed attempt of `address` at `nowMs` (UTC epoch ms). */
  fail(address: string, nowMs: number): void {
    this.buckets.take(addressKey(address), nowMs);
  }
}

/**
 * The key an address is limited by: an IPv4 address (also IPv4-mapped IPv6) as it is, an IPv6 address by its /64,
 * since one host commonly holds a whole /64 and could otherwise try from 2^64 addresses; anything else (no address,
 * a name) as given.
 */
export function addressKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  let ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  if (ip.kind() === 'ipv4') return ip.toString();
  const parts = (ip as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16));
  return `${parts.join(':')}::/64`;
}
