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
 *
 * The same buckets limit failed admin-token attempts per client address (`FailedAttempts`): a failure takes a token,
 * an address whose bucket is empty is answered `429` before its token is even looked at, so guessing the admin token
 * goes at ADMIN_FAILURES_PER_MINUTE per address once the first ADMIN_FAILURE_BURST are spent.
 */

import type { MiddlewareHandler } from 'hono';
import ipaddr from 'ipaddr.js';
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
   * Whether `key`'s bucket holds a token at `nowMs` (UTC epoch ms), without taking it or changing anything.
   * @returns ok, or the whole seconds (rounded up, at least 1) until a token is available
   */
  peek(key: string, nowMs: number): TakeResult {
    const found = this.buckets.get(key);
    if (!found) return { ok: true };
    const tokens = this.refilled(found, nowMs);
    return tokens >= 1 ? { ok: true } : { ok: false, retryAfterSeconds: this.waitSeconds(tokens) };
  }

  /**
   * Takes one token from `key`'s bucket at `nowMs` (UTC epoch ms; a clock going backwards adds nothing).
   * @returns ok, or the whole seconds (rounded up, at least 1) until a token is available
   */
  take(key: string, nowMs: number): TakeResult {
    const found = this.buckets.get(key);
    let bucket: Bucket;
    if (found) {
      bucket = { tokens: this.refilled(found, nowMs), updatedMs: Math.max(nowMs, found.updatedMs) };
      this.buckets.delete(key); // re-inserted below: Map order is then least recently used first
    } else {
      bucket = { tokens: Math.max(1, this.burst), updatedMs: nowMs };
      if (this.buckets.size >= this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
    }
    const ok = bucket.tokens >= 1;
    if (ok) bucket.tokens -= 1;
    this.buckets.set(key, bucket);
    if (ok) return { ok: true };
    return { ok: false, retryAfterSeconds: this.waitSeconds(bucket.tokens) };
  }

  /** The tokens of `bucket` at `nowMs`, refilled since its last update (a clock going backwards adds nothing). */
  private refilled(bucket: Bucket, nowMs: number): number {
    const elapsedMs = Math.max(0, nowMs - bucket.updatedMs);
    return Math.min(Math.max(1, this.burst), bucket.tokens + (elapsedMs * this.ratePerSecond) / 1000);
  }

  /** Whole seconds (at least 1) until a bucket holding `tokens` (< 1) holds one. */
  private waitSeconds(tokens: number): number {
    // Less a hair, so floating-point residue of a fractional rate (10/60 s) does not round 1 s up to 2.
    return Math.max(1, Math.ceil((1 - tokens) / this.ratePerSecond - 1e-9));
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
