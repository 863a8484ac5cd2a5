/**
 * The runs a dispatcher holds, from claim to outcome (docs/design.md, invariants of the dispatcher): each is, in turn,
 * waiting for its due time (claimed ahead within the lookahead), queued for a slot of its destination, in flight, and
 * then done; or released (its lease given back at shutdown, or found lost at a renewal), after which it is never
 * sent and its outcome never written. A run whose lease, as last extended, has run out by the time it gets its slot is
 * not sent either. Every held run counts against the concurrency from its claim on, so claims never outrun what the queue
 * can send. Each destination's slots are its limit, adapted to its answers when `adaptive` (src/domain/adaptive-limit.ts,
 * fed from every outcome here); the claim takes no more runs of a destination than its room (`destinationRoom`), so a
 * dispatcher holds no more of a slow destination's runs than it can start soon, and other dispatchers take the rest.
 */

import { AdaptiveLimits, loadSignalOf } from '../../domain/adaptive-limit.ts';
import type { AttemptOutcome } from '../../domain/attempt-outcome.ts';
import type { ClaimedRun } from '../../domain/claimed-run.ts';
import type { Clock } from '../../domain/clock.ts';
import { destinationOf, destinationPatternOf } from '../../domain/destination.ts';
import { Limiter } from '../limiter.ts';
import { COALESCE_MS, createDueTimer } from './due-timer.ts';

export type RunQueueOptions = {
  /** Most runs held at once (waiting, queued and in flight). */
  concurrency: number;
  /** Most callbacks in flight to one destination (CHIME_DISPATCH_PER_DESTINATION): the adaptive limit's maximum. */
  perDestination: number;
  /**
   * Whether a destination's limit adapts to its answers between 1 and `perDestination` (CHIME_ADAPTIVE_CONCURRENCY;
   * src/domain/adaptive-limit.ts); default false: every destination's limit is `perDestination`.
   */
  adaptive?: boolean;
  /**
   * Runs of a destination that count as starting soon (within `soonMs`) although its slots are taken, because its
   * slots free that fast (its limit × soonMs ÷ its usual latency, Little's law), are held beyond its limit, at most
   * `backlog` of them: a fast destination keeps a backlog through the next claim's round trip, a slow one none.
   */
  backlog: number;
  /** How soon a held run should start, in ms (the claim's lookahead); default 0: no backlog beyond the limit. */
  soonMs?: number;
  /**
   * Runs due within the same slot of this many ms fire from one timer wake-up, at the slot's end (never before their
   * time: due-timer.ts); default COALESCE_MS; 1: a wake-up per distinct due millisecond.
   */
  coalesceMs?: number;
};

export type RunQueueDeps = {
  clock: Clock;
  options: RunQueueOptions;
  /** Sends one attempt; null when the run was abandoned before sending (see `released`). Never throws. */
  attempt: (run: ClaimedRun) => Promise<AttemptOutcome | null>;
  /** Each outcome of a run still held (not released). */
  onOutcome: (outcome: AttemptOutcome, run: ClaimedRun) => void;
  /** An outcome that came back after its run was released: not recorded. */
  onLateOutcome?: (outcome: AttemptOutcome, run: ClaimedRun) => void;
};

export interface RunQueue {
  /** Runs held now: waiting, queued and in flight. */
  readonly held: number;
  /** Slots left before `concurrency`. */
  readonly free: number;
  /** Callbacks in flight per destination (`destinationOf`: the callback URL's normalized origin). */
  readonly inFlightByDestination: ReadonlyMap<string, number>;
  /** Takes a claimed run: waits for its due time and a destination slot, sends it, hands over its outcome. */
  add(run: ClaimedRun): void;
  /** Resolves when a held run is done (a slot frees), or when `wake()` is called. */
  slotFreed(): Promise<void>;
  /** Ends a pending `slotFreed()` now. */
  wake(): void;
  /** Runs waiting for their due time or a destination slot (not yet sent): their leases need renewing. */
  unsent(): ClaimedRun[];
  /** Runs sent or being sent, whose outcome has not come back. */
  inFlight(): ClaimedRun[];
  /**
   * Destinations whose held runs (waiting, queued and in flight) leave less room than is worth a claim (`destinationRoom`
   * below half the destination's backlog, at least 1: at its limit, for a slow destination), each named by every
   * spelling of it among its held runs' URLs in the form the claim's SQL computes (`destinationPatternOf`:
   * `https://a.example` and `https://a.example:443` are one destination, two spellings), so the claim can leave all of
   * them unclaimed.
   */
  saturatedDestinations(): string[];
  /**
   * How many more runs of `destination` (`destinationOf`) this queue takes now: its current limit, plus the runs
   * expected to start soon as its slots free (`backlog`), less the runs of it held; never below 0. The claim keeps no
   * more of its runs than this, so other dispatchers take the rest.
   */
  destinationRoom(destination: string): number;
  /** The room left (`destinationRoom`) of the destinations with runs held, summed. */
  heldRoom(): number;
  /** The current limit of each destination with runs held (for the metrics: as many as runs held at most). */
  readonly limitByDestination: ReadonlyMap<string, number>;
  /** Marks the held runs with these ids as released: not sent if not yet sent, their outcomes not handed over. */
  release(runIds: Iterable<string>): void;
  /** Whether the run was released (the attempt checks it once the request is built, before sending). */
  isReleased(runId: string): boolean;
  /** Resolves when every held run is done. */
  drained(): Promise<void>;
}

/** A held run: waiting for its time, queued for a slot, in flight, or done (its outcome handed over, the entry about to go). */
type Entry = { run: ClaimedRun; stage: 'waiting' | 'queued' | 'in-flight' | 'done'; released: boolean; done: Promise<void> };

/** Creates an empty queue. */
export function createRunQueue(deps: RunQueueDeps): RunQueue {
  const { clock, options: o } = deps;
  const limits = new AdaptiveLimits(clock, { max: o.perDestination, adaptive: o.adaptive ?? false });
  const limiter = new Limiter((destination) => limits.limitOf(destination));
  const { untilDue } = createDueTimer(clock, o.coalesceMs ?? COALESCE_MS);
  const entries = new Map<string, Entry>();
  /** Runs held per destination (waiting, queued, in flight), counted per spelling (`destinationPatternOf`) of their URLs. */
  const heldByDestination = new Map<string, Map<string, number>>();
  let slotWaiter: (() => void) | null = null;

  const count = (destination: string, spelling: string, delta: number) => {
    const spellings = heldByDestination.get(destination) ?? new Map<string, number>();
    const n = (spellings.get(spelling) ?? 0) + delta;
    if (n > 0) spellings.set(spelling, n);
    else spellings.delete(spelling);
    if (spellings.size > 0) heldByDestination.set(destination, spellings);
    else heldByDestination.delete(destination);
  };
  const heldOf = (destination: string) => {
    let n = 0;
    for (const k of heldByDestination.get(destination)?.values() ?? []) n += k;
    return n;
  };
  /** Runs of `destination` expected to start within soonMs beyond its limit: limit × soonMs ÷ usual latency, at most backlog. */
  const backlogOf = (destination: string) => {
    const usual = limits.usualLatencyMs(destination);
    if (!o.soonMs || usual === null) return 0;
    return Math.min(o.backlog, Math.floor((limits.limitOf(destination) * o.soonMs) / Math.max(1, usual)));
  };
  const roomOf = (destination: string) => Math.max(0, limits.limitOf(destination) + backlogOf(destination) - heldOf(destination));
  const wake = () => {
    const w = slotWaiter;
    slotWaiter = null;
    w?.();
  };

  async function run(entry: Entry, destination: string): Promise<void> {
    const { run } = entry;
    await untilDue(run.dueAtMs);
    entry.stage = 'queued';
    await limiter.acquire(destination);
    entry.stage = 'in-flight';
    // Signals of requests sent before the limit's last decrease do not decrease it again (adaptive-limit.ts).
    const epoch = limits.epochOf(destination);
    let outcome: AttemptOutcome | null = null;
    try {
      // A lease that ran out while the run waited (renewals failed: the database was down) may have been reaped and
      // the run handed to another dispatcher: it is not ours to send any more.
      outcome = entry.released || run.leaseExpiresAtMs <= clock.now() ? null : await deps.attempt(run);
    } finally {
      if (outcome !== null) {
        const inFlight = limiter.activeByKey.get(destination) ?? 1;
        limits.record(destination, {
          signal: loadSignalOf(outcome),
          latencyMs: outcome.finishedAtMs - outcome.startedAtMs,
          epoch,
          inFlight,
        });
      }
      // Hands the slot on, to as many waiters as the limit (perhaps grown) lets in.
      limiter.release(destination);
      entry.stage = 'done';
    }
    if (outcome === null) return;
    if (entry.released) deps.onLateOutcome?.(outcome, run);
    else deps.onOutcome(outcome, run);
  }

  return {
    get held() {
      return entries.size;
    },
    get free() {
      return o.concurrency - entries.size;
    },
    get inFlightByDestination() {
      return limiter.activeByKey;
    },
    get limitByDestination() {
      return new Map([...heldByDestination.keys()].map((d) => [d, limits.limitOf(d)]));
    },
    add(claimed) {
      // One slot set per origin, however the URL spells it (port, case, backslashes): a spelling is no new destination.
      const destination = destinationOf(claimed.callback.url);
      const spelling = destinationPatternOf(claimed.callback.url);
      const entry: Entry = { run: claimed, stage: 'waiting', released: false, done: Promise.resolve() };
      count(destination, spelling, 1);
      entry.done = run(entry, destination).finally(() => {
        count(destination, spelling, -1);
        // A later claim of the same run (this one's lease expired and was reclaimed) may have replaced this entry.
        if (entries.get(claimed.runId) === entry) entries.delete(claimed.runId);
        wake();
      });
      entries.set(claimed.runId, entry);
    },
    slotFreed: () => new Promise<void>((r) => (slotWaiter = r)),
    wake,
    unsent: () => [...entries.values()].filter((e) => (e.stage === 'waiting' || e.stage === 'queued') && !e.released).map((e) => e.run),
    inFlight: () => [...entries.values()].filter((e) => e.stage === 'in-flight').map((e) => e.run),
    // Half a backlog of room before a claim: a fast destination is refilled in chunks, not a claim per callback.
    saturatedDestinations: () =>
      [...heldByDestination]
        .filter(([d]) => roomOf(d) < Math.max(1, Math.floor(backlogOf(d) / 2)))
        .flatMap(([, spellings]) => [...spellings.keys()]),
    destinationRoom: roomOf,
    heldRoom: () => [...heldByDestination.keys()].reduce((n, d) => n + roomOf(d), 0),
    release(runIds) {
      for (const id of runIds) {
        const entry = entries.get(id);
        if (entry) entry.released = true;
      }
    },
    isReleased: (runId) => entries.get(runId)?.released ?? false,
    async drained() {
      while (entries.size > 0) await Promise.all([...entries.values()].map((e) => e.done));
    },
  };
}
