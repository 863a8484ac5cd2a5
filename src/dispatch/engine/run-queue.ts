/**
 * The runs a dispatcher holds, from claim to outcome (docs/design.md, invariants of the dispatcher): each is, in turn,
 * waiting for its due time (claimed ahead within the lookahead), queued for a slot of its destination, in flight, and
 * then done; or released (its lease given back at shutdown, or found lost at a renewal), after which it is never
 * sent and its outcome never written. A run whose lease, as last extended, has run out by the time it gets its slot is
 * not sent either. Every held run counts against the concurrency from its claim on, so claims never outrun what the queue
 * can send.
 */

import type { AttemptOutcome } from '../../domain/attempt-outcome.ts';
import type { ClaimedRun } from '../../domain/claimed-run.ts';
import type { Clock } from '../../domain/clock.ts';
import { destinationOf, destinationPatternOf } from '../../domain/destination.ts';
import { Limiter } from '../limiter.ts';

export type RunQueueOptions = {
  /** Most runs held at once (waiting, queued and in flight). */
  concurrency: number;
  /** Most callbacks in flight to one destination. */
  perDestination: number;
  /**
   * Runs queued for a destination, besides its full set in flight, from which on the destination counts as saturated:
   * claims leave its runs alone until it catches up (`saturatedDestinations`).
   */
  saturation: number;
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
   * Destinations with `saturation` or more runs queued for a slot, each named by every spelling of it among its queued
   * runs' URLs in the form the claim's SQL computes (`destinationPatternOf`: `https://a.example` and
   * `https://a.example:443` are one destination, two spellings), so the claim can leave all of them unclaimed.
   */
  saturatedDestinations(): string[];
  /** Marks the held runs with these ids as released: not sent if not yet sent, their outcomes not handed over. */
  release(runIds: Iterable<string>): void;
  /** Whether the run was released (the attempt checks it once the request is built, before sending). */
  isReleased(runId: string): boolean;
  /** Resolves when every held run is done. */
  drained(): Promise<void>;
}

/** A held run; `released` is per claim, so a later claim of the same run (another attempt) starts afresh. */
/** A held run: waiting for its time, queued for a slot, in flight, or done (its outcome handed over, the entry about to go). */
type Entry = { run: ClaimedRun; stage: 'waiting' | 'queued' | 'in-flight' | 'done'; released: boolean; done: Promise<void> };

/** Creates an empty queue. */
export function createRunQueue(deps: RunQueueDeps): RunQueue {
  const { clock, options: o } = deps;
  const limiter = new Limiter(o.perDestination);
  const untilDue = untilDueBy(clock);
  const entries = new Map<string, Entry>();
  /** Runs queued for a slot per destination, counted per spelling (`destinationPatternOf`) of their URLs. */
  const queuedByDestination = new Map<string, Map<string, number>>();
  let slotWaiter: (() => void) | null = null;

  const count = (destination: string, spelling: string, delta: number) => {
    const spellings = queuedByDestination.get(destination) ?? new Map<string, number>();
    const n = (spellings.get(spelling) ?? 0) + delta;
    if (n > 0) spellings.set(spelling, n);
    else spellings.delete(spelling);
    if (spellings.size > 0) queuedByDestination.set(destination, spellings);
    else queuedByDestination.delete(destination);
  };
  const queued = (spellings: ReadonlyMap<string, number>) => {
    let n = 0;
    for (const k of spellings.values()) n += k;
    return n;
  };
  const wake = () => {
    const w = slotWaiter;
    slotWaiter = null;
    w?.();
  };

  async function run(entry: Entry): Promise<void> {
    const { run } = entry;
    // One slot set per origin, however the URL spells it (port, case, backslashes): a spelling is no new destination.
    const destination = destinationOf(run.callback.url);
    const spelling = destinationPatternOf(run.callback.url);
    await untilDue(run.dueAtMs);
    entry.stage = 'queued';
    count(destination, spelling, 1);
    try {
      await limiter.acquire(destination);
    } finally {
      count(destination, spelling, -1);
    }
    entry.stage = 'in-flight';
    let outcome: AttemptOutcome | null;
    try {
      // A lease that ran out while the run waited (renewals failed: the database was down) may have been reaped and
      // the run handed to another dispatcher: it is not ours to send any more.
      outcome = entry.released || run.leaseExpiresAtMs <= clock.now() ? null : await deps.attempt(run);
    } finally {
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
    add(claimed) {
      const entry: Entry = { run: claimed, stage: 'waiting', released: false, done: Promise.resolve() };
      entry.done = run(entry).finally(() => {
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
    saturatedDestinations: () =>
      [...queuedByDestination.values()]
        .filter((spellings) => queued(spellings) >= o.saturation)
        .flatMap((spellings) => [...spellings.keys()]),
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

/** Resolves at `dueAtMs` by `clock` (a runtime timer may fire a little early by the wall clock: it sleeps again). */
function untilDueBy(clock: Clock): (dueAtMs: number) => Promise<void> {
  return async function untilDue(dueAtMs) {
    for (let left = dueAtMs - clock.now(); left > 0; left = dueAtMs - clock.now()) await clock.sleep(left);
  };
}
