/**
 * Adaptive per-destination concurrency (API.md "Destination control"): each dispatcher's limit of callbacks in flight to
 * one destination (`destinationOf`) falls when the destination pushes back and grows back while it answers as usual,
 * between 1 and the configured maximum (CHIME_DISPATCH_PER_DESTINATION). Pure: the run queue feeds it each attempt's
 * load signal (`loadSignalOf`) and latency; the clock only dates a destination's last use, so that one unheard of for
 * `forgetAfterMs` starts afresh and memory stays bounded.
 *
 * The algorithm is AIMD (additive increase, multiplicative decrease), TCP's congestion avoidance (RFC 5681 §3.1) with
 * the limit as the congestion window and an answer as an acknowledgement, as Netflix's concurrency-limits applies it to
 * requests (`AIMDLimit`: github.com/Netflix/concurrency-limits, concurrency-limits-core/…/limit/AIMDLimit.java):
 * - **decrease**: a `429` or `503` multiplies the limit by `backoff` (0.9, AIMDLimit's default `backoffRatio`: a
 *   receiver that rejects beyond a cap answers at once, so the signal is quick and a gentle step suffices), a timeout
 *   by `timeoutBackoff` (0.5, TCP's halving: a timeout took a slot for the callback's whole timeout). At most once per
 *   window, as TCP reduces once per window of data (RFC 5681 §3.1, RFC 6582 §3.2): a signal from a request sent before
 *   the last decrease (`epochOf`) is not counted again, so a burst of rejections of requests sent together is one step.
 * - **increase**: an answer within `slowFactor` × the destination's usual latency adds `increase / limit`, about
 *   `increase` per round trip at the limit (RFC 5681 equation 3), while the destination uses at least half its limit
 *   (AIMDLimit's check; RFC 7661: a window the sender does not use is not validated). Up to the limit at which the
 *   destination last pushed back the step is `cautiousIncrease` instead: near a known ceiling, probe slowly, as CUBIC
 *   grows slowly near W_max and faster past it (RFC 9438 §4.2–4.3). Against a receiver that rejects beyond a hard cap
 *   the limit then sits just under the cap, and a probe past it (one rejection) comes every ~40 answers, not every ~9.
 * - **usual latency**: an exponentially weighted moving average of the latencies of answers that are not pushback
 *   (weight `latencyWeight`), as Gradient2Limit keeps a long-term average RTT (same repository, Gradient2Limit.java).
 *   Slower answers neither grow nor shrink the limit; they move the average, so a destination that is slower for good
 *   grows again once that is its usual.
 */

import type { Clock } from './clock.ts';

/** What an attempt's end says about its destination's load: pushback (429, 503), a timeout, an answer, or nothing (no answer: refused, DNS, TLS...). */
export type LoadSignal = 'overload' | 'timeout' | 'answer' | 'none';

/** HTTP statuses that mean "too much": 429 Too Many Requests, 503 Service Unavailable. */
const OVERLOAD_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/**
 * The load signal of an attempt's result: `overload` for a 429 or 503, `timeout` for the `timeout` error class (no
 * answer within the callback's timeout, or no connection within the connect timeout), `answer` for any other response,
 * `none` for other errors (a refused connection or a DNS failure says nothing about load).
 */
export function loadSignalOf(o: { responseStatus: number | null; errorClass: string | null }): LoadSignal {
  if (o.responseStatus !== null) return OVERLOAD_STATUSES.has(o.responseStatus) ? 'overload' : 'answer';
  return o.errorClass === 'timeout' ? 'timeout' : 'none';
}

export type AdaptiveLimitOptions = {
  /** The most in flight per destination (CHIME_DISPATCH_PER_DESTINATION), ≥ 1. */
  max: number;
  /** Whether the limit adapts (CHIME_ADAPTIVE_CONCURRENCY); false: every destination's limit is `max`. */
  adaptive: boolean;
  /** A destination's limit before any signal; default `max` (a healthy destination loses nothing to a slow start). */
  initial?: number;
  /** Factor applied on a 429 or 503, in (0, 1); default 0.9. */
  backoff?: number;
  /** Factor applied on a timeout, in (0, 1); default 0.5. */
  timeoutBackoff?: number;
  /** Growth per round trip at the limit above the last pushback's limit; default 1. */
  increase?: number;
  /** Growth per round trip at the limit up to the last pushback's limit; default 0.2. */
  cautiousIncrease?: number;
  /** An answer slower than this many times the usual latency does not grow the limit; default 2. */
  slowFactor?: number;
  /** Weight of a new latency in the usual latency's moving average, in (0, 1]; default 0.05 (about the last 40). */
  latencyWeight?: number;
  /** A destination neither started nor answered for this long (ms) is forgotten: its limit is `initial` again; default 10 min. */
  forgetAfterMs?: number;
  /** Most destinations remembered; the least recently used go first; default 10,000. */
  maxDestinations?: number;
};

/** One attempt's end, as `record` takes it. */
export type LimitSample = {
  signal: LoadSignal;
  /** How long the attempt took, in ms (from the request built to its answer or error). */
  latencyMs: number;
  /** `epochOf(destination)` when the request was sent. */
  epoch: number;
  /** Requests to the destination in flight when it ended, this one included. */
  inFlight: number;
};

type State = {
  /** The limit, fractional between 1 and max (`limitOf` rounds it down). */
  limit: number;
  /** Decreases so far: a signal of a request sent in an earlier epoch is not counted. */
  epoch: number;
  /** The limit just before the last decrease (0: none yet): below it growth is cautious. */
  ceiling: number;
  /** Moving average of answer latencies, ms (null: none yet). */
  usualMs: number | null;
  lastUsedMs: number;
};

const MINUTE_MS = 60_000;

/** The adaptive limits of one dispatcher's destinations (AIMD; the module's docstring says how). */
export class AdaptiveLimits {
  readonly max: number;
  private readonly o: Required<Omit<AdaptiveLimitOptions, 'max' | 'adaptive'>> & { adaptive: boolean };
  /** In least recently used order (a use moves a destination last). */
  private readonly states = new Map<string, State>();
  private lastPruneMs = -Infinity;

  /** @throws RangeError when `max` is below 1 or a factor is out of its range */
  constructor(
    private readonly clock: Clock,
    options: AdaptiveLimitOptions,
  ) {
    if (!(options.max >= 1)) throw new RangeError(`max must be at least 1, got ${options.max}`);
    this.max = options.max;
    this.o = {
      adaptive: options.adaptive,
      initial: Math.min(options.max, Math.max(1, options.initial ?? options.max)),
      backoff: options.backoff ?? 0.9,
      timeoutBackoff: options.timeoutBackoff ?? 0.5,
      increase: options.increase ?? 1,
      cautiousIncrease: options.cautiousIncrease ?? 0.2,
      slowFactor: options.slowFactor ?? 2,
      latencyWeight: options.latencyWeight ?? 0.05,
      forgetAfterMs: options.forgetAfterMs ?? 10 * MINUTE_MS,
      maxDestinations: options.maxDestinations ?? 10_000,
    };
    for (const k of ['backoff', 'timeoutBackoff'] as const) {
      if (!(this.o[k] > 0 && this.o[k] < 1)) throw new RangeError(`${k} must be in (0, 1), got ${this.o[k]}`);
    }
    if (!(this.o.latencyWeight > 0 && this.o.latencyWeight <= 1)) throw new RangeError(`latencyWeight must be in (0, 1]`);
  }

  /** The destination's current limit: a whole number of requests in flight, 1..max. */
  limitOf(destination: string): number {
    if (!this.o.adaptive) return this.max;
    return Math.max(1, Math.floor(this.live(destination)?.limit ?? this.o.initial));
  }

  /** The destination's usual latency (ms, moving average of its answers), or null before its first answer. */
  usualLatencyMs(destination: string): number | null {
    return this.live(destination)?.usualMs ?? null;
  }

  /** The destination's state unless forgotten (unused for `forgetAfterMs`), without marking it used. */
  private live(destination: string): State | undefined {
    const st = this.states.get(destination);
    return st && this.clock.now() - st.lastUsedMs <= this.o.forgetAfterMs ? st : undefined;
  }

  /** The destination's decreases so far: give it back in `record` with the sample of a request sent now. */
  epochOf(destination: string): number {
    return this.touch(destination).epoch;
  }

  /**
   * Learns from one attempt's end: decreases on `overload` or `timeout` (once per epoch), grows on an `answer` within
   * the usual latency while at least half the limit is in use, and folds an answer's latency into the usual latency.
   */
  record(destination: string, s: LimitSample): void {
    const st = this.touch(destination);
    if (s.signal === 'none') return;
    if (s.signal === 'overload' || s.signal === 'timeout') {
      if (!this.o.adaptive || s.epoch < st.epoch) return;
      st.ceiling = st.limit;
      st.limit = Math.max(1, st.limit * (s.signal === 'timeout' ? this.o.timeoutBackoff : this.o.backoff));
      st.epoch++;
      return;
    }
    const usual = st.usualMs;
    st.usualMs = usual === null ? s.latencyMs : usual + this.o.latencyWeight * (s.latencyMs - usual);
    if (!this.o.adaptive || st.limit >= this.max) return;
    if (usual !== null && s.latencyMs > this.o.slowFactor * usual) return;
    if (s.inFlight * 2 < Math.floor(st.limit)) return;
    const step = st.limit < st.ceiling ? this.o.cautiousIncrease : this.o.increase;
    st.limit = Math.min(this.max, st.limit + step / st.limit);
  }

  /** The destination's state, created afresh if forgotten, marked used now (and moved last in the LRU order). */
  private touch(destination: string): State {
    const now = this.clock.now();
    let st = this.live(destination);
    this.states.delete(destination);
    st ??= { limit: this.o.initial, epoch: 0, ceiling: 0, usualMs: null, lastUsedMs: now };
    st.lastUsedMs = now;
    this.states.set(destination, st);
    if (this.states.size > this.o.maxDestinations || now - this.lastPruneMs >= MINUTE_MS) this.prune();
    return st;
  }

  /** Forgets the least recently used destinations past `maxDestinations` and those idle for `forgetAfterMs`. */
  private prune(): void {
    const now = this.clock.now();
    this.lastPruneMs = now;
    for (const [d, st] of this.states) {
      if (this.states.size <= this.o.maxDestinations && now - st.lastUsedMs <= this.o.forgetAfterMs) break;
      this.states.delete(d);
    }
  }
}
