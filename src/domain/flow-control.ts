/**
 * Flow controls (API.md "Destination control"): a tenant's named limit on the requests of every job that names it,
 * held across all dispatchers together. Pure arithmetic here; the claim applies it under a lock of the flow control's
 * row (src/store/queue/claim-flow-runs.ts), so concurrent dispatchers see each other's grants.
 *
 * - `parallelism`: at most that many runs of the key hold a lease at once (a run claimed ahead of its time holds its
 *   slot from the claim; the slot comes back when the lease is cleared: finish, reaper, give-back).
 * - `rate`: at most `limit` requests started in any window of `periodMs` (a sliding log, not a token bucket, so no
 *   window of the period ever holds more). Each grant fixes the run's start time; the claim hands the run to its
 *   dispatcher to fire at that time. The log keeps each start rounded *up* to a quantum of `periodMs / 1000` (at least
 *   1 ms), which only ever counts a start longer and later than it was: at most ~1,000 entries per key, whatever the
 *   limit, at a cost of at most 0.1 % of the rate.
 * - A start leaves its dispatcher a little after its time and reaches the receiver later still, by an amount that
 *   varies (timers, event loops, the network), so the window the log enforces is `periodMs` plus RATE_SLACK_MS of it
 *   (at most 50 ms): the receiver, too, sees no more than `limit` requests in any window of `periodMs`.
 */
import { isPastWindow } from './window.ts';

/** A rate: at most `limit` starts in any window of `periodMs`. */
export type FlowRate = { limit: number; periodMs: number };

/** A flow control as stored and shown (without its state). */
export type FlowControlSpec = { rate: FlowRate | null; parallelism: number | null; paused: boolean };

/** The rate's log: `[startMs, count]` pairs, ascending by start (epoch ms, each rounded up to the quantum). */
export type RateLog = [number, number][];

/** Bounds of the contract. */
export const FLOW_LIMITS = Object.freeze({
  rateLimit: { min: 1, max: 100_000 },
  periodMs: { min: 1_000, max: 86_400_000 },
  parallelism: { min: 1, max: 10_000 },
  /** A flow control's key: what `flowControlKey` names. */
  keyPattern: /^[A-Za-z0-9._:-]{1,100}$/,
});

/** The margin added to a rate's period, in ms: 5 % of it, at most 50 ms. */
export function rateSlackMs(periodMs: number): number {
  return Math.min(50, Math.round(periodMs * 0.05));
}

/** The log's rounding of start times, in ms. */
function quantumMs(periodMs: number): number {
  return Math.max(1, Math.ceil(periodMs / 1000));
}

/** A waiting run of the key, as the claim sees it (times epoch ms). */
export type FlowCandidate = {
  id: string;
  /** When it is due (`next_attempt_at`). */
  dueAtMs: number;
  scheduledForMs: number;
  relevancyWindowMs: number | null;
};

/** What the claim may do with a flow control's waiting runs now. */
export type FlowGrant = {
  /** The runs granted, in due order, each with the time its request may start (≥ its due time, ≥ now). */
  granted: { id: string; startAtMs: number }[];
  /** The log with the grants added and the starts no window can reach any more pruned. */
  log: RateLog;
  /** The earliest time a further start could be granted by the rate (epoch ms), when the rate is what stops it; else null. */
  rateBlockedUntilMs: number | null;
};

/**
 * Grants starts to `candidates` (in due order) at `nowMs`: while the parallelism has room (`inFlight` runs hold
 * slots), each gets the earliest start at or after max(now, its due time, the previous grant) that the rate allows,
 * and is granted if that start is no later than `nowMs + horizonMs` (the claim's lookahead). A candidate already past
 * its relevancy window is granted at now without using a slot or the rate: the claim ends it `expired` unsent.
 * A paused flow control grants nothing.
 */
export function grantStarts(
  spec: FlowControlSpec,
  log: RateLog,
  inFlight: number,
  candidates: readonly FlowCandidate[],
  nowMs: number,
  horizonMs: number,
): FlowGrant {
  const kept = pruneLog(spec.rate, log, nowMs);
  const granted: FlowGrant['granted'] = [];
  if (spec.paused) return { granted, log: kept, rateBlockedUntilMs: null };
  let room = spec.parallelism === null ? Number.POSITIVE_INFINITY : Math.max(0, spec.parallelism - inFlight);
  // Starts follow due order across claims too: none before the latest one granted (the log's last entry).
  let last = Math.max(nowMs, kept[kept.length - 1]?.[0] ?? nowMs);
  let rateBlockedUntilMs: number | null = null;
  for (const c of candidates) {
    if (isPastWindow(c.scheduledForMs, c.relevancyWindowMs, Math.max(nowMs, c.dueAtMs))) {
      granted.push({ id: c.id, startAtMs: nowMs });
      continue;
    }
    if (room <= 0) break;
    let start = Math.max(last, c.dueAtMs);
    if (spec.rate) {
      start = earliestStart(spec.rate, kept, start);
      if (start > nowMs + horizonMs) {
        rateBlockedUntilMs = start;
        break;
      }
      record(spec.rate, kept, start);
    }
    granted.push({ id: c.id, startAtMs: start });
    last = start;
    room--;
  }
  return { granted, log: kept, rateBlockedUntilMs };
}

/**
 * The earliest start at or after `atMs` that keeps every window of the rate's period (plus slack) at most `limit`
 * starts, given `log` (ascending). A window that holds the new start lies within (start − window, ∞), so the starts
 * counted are all those after start − window, later grants (made ahead by an earlier claim) included.
 */
export function earliestStart(rate: FlowRate, log: RateLog, atMs: number): number {
  const window = rate.periodMs + rateSlackMs(rate.periodMs);
  let at = atMs;
  for (;;) {
    let inWindow = 0;
    for (const [s, n] of log) if (s > at - window) inWindow += n;
    if (inWindow < rate.limit) return at;
    // Move past the oldest starts counted until one more fits: to the last of them + window; then count again.
    let toDrop = inWindow - rate.limit + 1;
    for (const [s, n] of log) {
      if (s <= at - window) continue;
      toDrop -= n;
      if (toDrop <= 0) {
        at = s + window;
        break;
      }
    }
  }
}

/** Adds a start at `atMs` to `log` (in place), rounded up to the quantum and merged with an equal entry. */
function record(rate: FlowRate, log: RateLog, atMs: number): void {
  const q = quantumMs(rate.periodMs);
  const at = Math.ceil(atMs / q) * q;
  const last = log[log.length - 1];
  if (last && last[0] === at) last[1]++;
  else if (!last || last[0] < at) log.push([at, 1]);
  else {
    log.push([at, 1]);
    log.sort((a, b) => a[0] - b[0]);
  }
}

/** `log` without the starts that no window at or after `nowMs` can hold (a copy); empty without a rate. */
export function pruneLog(rate: FlowRate | null, log: RateLog, nowMs: number): RateLog {
  if (!rate) return [];
  const window = rate.periodMs + rateSlackMs(rate.periodMs);
  return log.filter(([s]) => s > nowMs - window).map(([s, n]) => [s, n] as [number, number]);
}

/**
 * Reads a stored log defensively (jsonb `starts`): pairs of finite numbers with a positive count, ascending.
 * Anything else is dropped: a log that cannot be read grants as if empty for what it lost, never fails a claim.
 */
export function rateLogOf(value: unknown): RateLog {
  if (!Array.isArray(value)) return [];
  const out: RateLog = [];
  for (const e of value) {
    if (Array.isArray(e) && Number.isFinite(e[0]) && Number.isInteger(e[1]) && e[1] > 0) out.push([e[0], e[1]]);
  }
  return out.sort((a, b) => a[0] - b[0]);
}
