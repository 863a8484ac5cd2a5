/**
 * Claim pacing: when to claim, and how much. The loop claims up to min(batchSize, free slots) runs due within the
 * lookahead, shared out over the buckets that have some (`claimRuns`, docs/design.md "Partitioning and fairness"),
 * hands them to the run queue, and claims again at once after a full claim; otherwise it learns when the earliest run
 * is due (from the claim, or a read of every bucket) and sleeps until it enters the lookahead (`claimWaitMs`), a
 * wake-up (a NOTIFY of an earlier run, a retry written, a reap), or `pollMs`. Each claim takes no more runs of a
 * destination than the run queue has room for (`destinationRoom`: its limit, as adapted, less the runs of it held), so
 * the rest stay for other dispatchers; with a destination saturated (no room worth a claim) it looks past its runs, at
 * most every SKIP_CLAIM_INTERVAL_MS. A failing claim (database down) is retried with backoff.
 */

import type { ClaimedRun } from '../../domain/claimed-run.ts';
import type { Clock } from '../../domain/clock.ts';
import { destinationPatternOf } from '../../domain/destination.ts';
import { type BucketDue, Rotation } from '../../domain/fair-share.ts';
import type { Db } from '../../store/db.ts';
import { type BucketClaim, claimRuns, type FairClaim } from '../../store/queue/claim-runs.ts';
import { dueBuckets } from '../../store/queue/due-backlog.ts';
import type { DispatchTracer } from '../tracing.ts';
import { backoffDelays } from './backoff.ts';
import { claimWaitMs } from './claim-wait.ts';
import type { EngineLogger } from './logger.ts';
import type { RunQueue } from './run-queue.ts';
import type { Wakeup } from './wakeup.ts';

export { CONTENDED_SLEEP_MS, claimWaitMs } from './claim-wait.ts';

export type ClaimPacerOptions = {
  owner: string;
  /** Most runs per claim. */
  batchSize: number;
  /** Lease = callback timeout + this, in ms. */
  leaseMarginMs: number;
  /** Runs due within this many ms are claimed ahead and fired on a timer at their due time. */
  lookaheadMs: number;
  /** Longest sleep without looking for due runs, in ms. */
  pollMs: number;
  /**
   * The default callbacks a tenant's runs may make per UTC day (CHIME_QUOTA_CALLBACKS_PER_DAY; 0 or absent: none); a
   * tenant's override wins. Runs past it wait for the next UTC day (src/store/queue/hold-runs.ts).
   */
  callbacksPerDay?: number;
};

/**
 * How long the loop waits before claiming again when the runs due now are all in buckets with flow controls and the
 * last claim came short (they are held back), in ms: about an outcome writer's gathering, after which slots may free.
 */
export const FLOW_HELD_SLEEP_MS = 100;

/** Least time between claims that look past saturated destinations (each walks their backlog), in ms; doubled after
 * each that finds nothing, up to the max. */
const SKIP_CLAIM_INTERVAL_MS = 100;
const SKIP_CLAIM_INTERVAL_MAX_MS = 2_000;
/**
 * With fewer slots free than a quarter of a batch, the loop waits up to this long (ms) for more to free before it
 * claims: a full dispatcher otherwise claims one run per freed slot, a transaction per callback.
 */
const SLOT_GATHER_MS = 5;
const ERROR_BACKOFF_MIN_MS = 100;
const ERROR_BACKOFF_MAX_MS = 5_000;

export type ClaimPacerDeps = {
  db: Db;
  clock: Clock;
  logger: EngineLogger;
  wakeup: Wakeup;
  queue: Pick<RunQueue, 'free' | 'add' | 'slotFreed' | 'wake' | 'saturatedDestinations'> &
    Partial<Pick<RunQueue, 'destinationRoom' | 'heldRoom'>>;
  options: ClaimPacerOptions;
  /** Seconds each claim took, for the metrics. */
  observeClaim?: (seconds: number) => void;
  /** The store's reads and claim (default: `dueBuckets`, `claimRuns`); injected in unit tests. */
  store?: { dueBuckets: typeof dueBuckets; claimRuns: typeof claimRuns };
  /** Makes a span per claim (`claimBatch`); absent: none. */
  tracer?: DispatchTracer;
};

export interface ClaimPacer {
  /** Starts the loop. */
  start(): void;
  /** Ends the loop; resolves when its iteration in progress is over. */
  stop(): Promise<void>;
}

/**
 * One claim of up to `c.limit` runs due by now + `c.horizonMs` for `deps.options.owner`, shared out over the buckets
 * with due runs (`c.buckets`, or read now) starting where `c.rotation` stands, looking past `c.skipDestinations` and
 * keeping at most `c.destinationRoom(destination)` runs of each destination (absent: no cap); a bucket whose claim fails
 * is logged and the others are claimed. The Node pacer's step and the Workers tick's, which hand the runs to their queues.
 * With `deps.tracer`, the claim is a `chime.claim` span (`chime.claim.limit`, `chime.claim.horizon_ms`,
 * `chime.claim.runs` claimed, `chime.dispatcher`, `chime.claim.bucket_failed`; ERROR when it throws) whose
 * `traceparent` each claimed run keeps
 * (`claimTraceParent`) for its attempt's link.
 * @returns the runs claimed @throws the driver's error when every bucket tried failed (the database is down)
 */
export async function claimBatch(
  deps: Pick<ClaimPacerDeps, 'db' | 'clock' | 'logger' | 'observeClaim' | 'store' | 'tracer'> & {
    options: Pick<ClaimPacerOptions, 'owner' | 'leaseMarginMs' | 'callbacksPerDay'>;
  },
  c: {
    limit: number;
    horizonMs: number;
    skipDestinations?: string[];
    destinationRoom?: (destination: string) => number;
    rotation: Rotation;
    buckets?: BucketDue[];
    /** Each bucket's earliest waiting run after its claim (claim-runs.ts `FairClaim.onBucketDue`). */
    onBucketDue?: FairClaim['onBucketDue'];
  },
): Promise<ClaimedRun[]> {
  const { db, clock, logger, options: o } = deps;
  const store = deps.store ?? { dueBuckets, claimRuns };
  const started = clock.now();
  const span = deps.tracer?.startSpan('chime.claim', {
    kind: 'internal',
    attributes: { 'chime.claim.limit': c.limit, 'chime.claim.horizon_ms': c.horizonMs, 'chime.dispatcher': o.owner },
  });
  let claimed: ClaimedRun[];
  try {
    claimed = await store.claimRuns(db, {
      owner: o.owner,
      limit: c.limit,
      nowMs: started,
      leaseMarginMs: o.leaseMarginMs,
      callbacksPerDay: o.callbacksPerDay ?? 0,
      horizonMs: c.horizonMs,
      skipDestinations: c.skipDestinations ?? [],
      destinationRoom: c.destinationRoom,
      rotation: c.rotation,
      buckets: c.buckets ?? (await store.dueBuckets(db)),
      onBucketDue: c.onBucketDue,
      onBucketError: (shard, err) => {
        span?.setAttributes({ 'chime.claim.bucket_failed': true });
        logger.warn({ err, shard }, 'claim failed in one bucket; the others go on');
      },
    });
  } catch (err) {
    span?.fail('claim failed', err);
    span?.end();
    throw err;
  }
  deps.observeClaim?.((clock.now() - started) / 1000);
  if (span) {
    span.setAttributes({ 'chime.claim.runs': claimed.length });
    span.end();
    for (const run of claimed) run.claimTraceParent = span.traceParent;
  }
  return claimed;
}

/** Creates a pacer; nothing is claimed before `start()`. */
export function createClaimPacer(deps: ClaimPacerDeps): ClaimPacer {
  const { db, clock, logger, wakeup, queue, options: o } = deps;
  const store = deps.store ?? { dueBuckets, claimRuns };
  const rotation = new Rotation();
  let running = false;
  let done: Promise<void> = Promise.resolve();
  /**
   * The buckets with waiting runs and each one's earliest due time, as last read (at `knownAt`) and as the claims since
   * left them (`withTold`); null: read them. A read is one probe per bucket, as costly as a small claim, so the claims
   * that follow use it until a wake-up is asked for (a run announced, a retry written, a reap: `wakeup.heard` moved
   * since `heardAtRead`) or `pollMs` has passed. Every way a run becomes due is announced or told by the claim that
   * made it; the read each poll is the net under that (a run due more than NOTIFY_HORIZON_MS after it was made).
   */
  let known: BucketDue[] | null = null;
  let knownAt = -Infinity;
  let heardAtRead = -1;
  /**
   * The last claim left `known` exact: every bucket it claimed told its earliest waiting run (claim-runs.ts
   * `BucketClaim.nextDueAtMs`). Under steady traffic the sleep after such a claim follows `known` instead of a read.
   */
  let exactAfterClaim = false;
  /**
   * `known` was read just before a sleep that ran its full time: it still holds for the claim that follows, whatever
   * its age. A run announced meanwhile (NOTIFY) that the claim's horizon would reach ends the sleep early (`wakeBy`).
   */
  let knownThroughSleep = false;
  const minClaim = Math.max(1, Math.floor(o.batchSize / 4));
  /** When the loop began waiting for more free slots (null: not waiting). */
  let gatheringSince: number | null = null;
  /** The last sleep was the poll with nothing due before its end: read the earliest due time before a claim. */
  let lookFirst = false;
  let skipInterval = SKIP_CLAIM_INTERVAL_MS;
  let lastSkipClaimAt = -Infinity;
  /**
   * The destinations (spellings) the last claim that looked past saturated destinations skipped, when it found nothing:
   * the runs due are theirs, as far as is known (null: not so).
   */
  let onlySaturatedDue: Set<string> | null = null;
  /** The loop last waited for a slot of a saturated destination. */
  let waitedForSaturated = false;

  const slotOrSleep = async (ms: number) => {
    await Promise.race([queue.slotFreed(), wakeup.sleep(ms)]);
    wakeup.cancel();
  };
  /** Whether `known` should be read again before it serves (see `known`). */
  const stale = () => known === null || wakeup.heard !== heardAtRead || clock.now() - knownAt >= o.pollMs;

  async function readBuckets(): Promise<BucketDue[]> {
    heardAtRead = wakeup.heard;
    known = await store.dueBuckets(db);
    knownAt = clock.now();
    return known;
  }

  async function claim(limit: number, horizonMs: number, skipDestinations: string[] = []): Promise<ClaimedRun[]> {
    const buckets = known === null || (!knownThroughSleep && stale()) ? await readBuckets() : known;
    knownThroughSleep = false;
    const destinationRoom = queue.destinationRoom;
    const told = new Map<number, BucketClaim['nextDueAtMs']>();
    const onBucketDue = (shard: number, due: BucketClaim['nextDueAtMs']) => told.set(shard, due);
    const claimed = await claimBatch(deps, { limit, horizonMs, skipDestinations, destinationRoom, rotation, buckets, onBucketDue });
    known = withTold(buckets, told);
    logger.debug(
      { limit, horizonMs, skip: skipDestinations.length, buckets: buckets.length, claimed: claimed.length, told: Object.fromEntries(told) },
      'claimed',
    );
    // A bucket tells a due time (or null) only after a claim that took runs there (claim-runs.ts `BucketClaim`).
    exactAfterClaim = told.size > 0 && [...told.values()].every((due) => due !== undefined);
    for (const run of claimed) queue.add(run);
    return claimed;
  }

  /**
   * Reads the earliest due time (unless the last claim left `known` exact and it is not stale) and sleeps until it
   * enters the lookahead (at most `pollMs`, or until woken).
   * @param claimIfDue claim at once a run already in the lookahead (else, other dispatchers hold the due runs: wait a little)
   * @param skipping the last claim looked past saturated destinations
   * @returns false when a claim should be made now, true after a sleep
   */
  async function sleepUntilDue(claimIfDue: boolean, skipping: boolean): Promise<boolean> {
    const exact = exactAfterClaim;
    exactAfterClaim = false;
    if (!exact || !claimIfDue || skipping || stale()) known = await readBuckets();
    const buckets = known!;
    const due = buckets.length === 0 ? null : Math.min(...buckets.map((b) => b.dueAtMs));
    const now = clock.now();
    let wait = claimWaitMs(due, now, o, claimIfDue);
    // The claim came short while runs are due only in buckets with flow controls: those are runs their flow controls
    // hold back. Claiming again at once would find them held still (and cost a walk past them): wait a little, as the
    // flow controls' slots free only as outcomes are written and their rates grant starts ahead anyway.
    if (due !== null && due <= now && buckets.every((b) => b.flows || b.dueAtMs > now)) wait = Math.max(wait, FLOW_HELD_SLEEP_MS);
    if (wait === 0) return false;
    if (skipping && !claimIfDue && due !== null && due <= now) {
      known = null;
      // Only the saturated destinations have due runs: wait for one of their slots.
      if (running) await slotOrSleep(SKIP_CLAIM_INTERVAL_MS);
      waitedForSaturated = true;
      return true;
    }
    // stop() may have come while this iteration awaited the database: its wake() found no sleep to end.
    if (!running) return true;
    logger.debug({ dueAtMs: due, waitMs: wait, buckets: buckets.length }, 'claim pacer sleeps');
    const how = await wakeup.sleep(wait);
    // Woken (a run announced, a retry written, a reap): what is due has changed, read it again. Else the read above
    // serves the claim that follows (one statement less per claim under steady traffic).
    if (how === 'timeout') knownThroughSleep = true;
    else known = null;
    lookFirst = how === 'timeout' && (due === null || due - o.lookaheadMs > now + wait);
    return true;
  }

  async function loop(): Promise<void> {
    let delays = backoffDelays(ERROR_BACKOFF_MIN_MS, ERROR_BACKOFF_MAX_MS);
    while (running) {
      try {
        if (queue.free <= 0) {
          await queue.slotFreed();
          continue;
        }
        // Not while a destination is saturated: then claims are paced by the look past it (below).
        if (queue.free < minClaim && queue.free < o.batchSize && queue.saturatedDestinations().length === 0) {
          gatheringSince ??= clock.now();
          const left = gatheringSince + SLOT_GATHER_MS - clock.now();
          if (left > 0) {
            await slotOrSleep(left);
            continue;
          }
        }
        gatheringSince = null;
        const limit = Math.min(o.batchSize, queue.free);
        if (lookFirst) {
          lookFirst = false;
          if (await sleepUntilDue(true, false)) continue;
        }
        // With a destination saturated, claiming in due order would only add to its backlog: look past it at most every
        // skipInterval (a scan), else wait for a slot, which is when it may fall below saturation and be claimed again.
        const skip = queue.saturatedDestinations();
        if (skip.length > 0) {
          if (!running) break;
          if (clock.now() - lastSkipClaimAt < skipInterval) {
            await slotOrSleep(SKIP_CLAIM_INTERVAL_MS);
            waitedForSaturated = true;
            continue;
          }
          lastSkipClaimAt = clock.now();
        }
        // A slot of a saturated destination freed while only such destinations had runs due: the claim takes what
        // their room holds, and one more, not a batch of which it would give all but that back (a claim and a
        // give-back per callback). The one more finds out whether other destinations have runs due by now.
        const reduced = skip.length === 0 && waitedForSaturated && onlySaturatedDue !== null && queue.heldRoom !== undefined;
        const n = reduced ? Math.min(limit, Math.max(0, queue.heldRoom!()) + 1) : limit;
        waitedForSaturated = false;
        const claimed = await claim(n, o.lookaheadMs, skip);
        delays = backoffDelays(ERROR_BACKOFF_MIN_MS, ERROR_BACKOFF_MAX_MS);
        if (skip.length > 0) {
          skipInterval = claimed.length > 0 ? SKIP_CLAIM_INTERVAL_MS : Math.min(skipInterval * 2, SKIP_CLAIM_INTERVAL_MAX_MS);
          onlySaturatedDue = claimed.length === 0 ? new Set(skip) : null;
        } else if (reduced && claimed.some((r) => !onlySaturatedDue!.has(destinationPatternOf(r.callback.url)))) {
          // Another destination's run: there are more than theirs due now, claim in full again.
          onlySaturatedDue = null;
          skipInterval = SKIP_CLAIM_INTERVAL_MS;
        }
        if (claimed.length === n || !running) continue;
        await sleepUntilDue(claimed.length > 0, skip.length > 0);
      } catch (err) {
        known = null;
        exactAfterClaim = false;
        const backoffMs = delays.next().value;
        logger.error({ err, backoffMs }, 'claim failed; retrying');
        if (!running) break;
        await wakeup.sleep(backoffMs);
      }
    }
  }

  return {
    start() {
      if (running) return;
      running = true;
      done = loop();
    },
    async stop() {
      running = false;
      wakeup.wake();
      queue.wake();
      await done;
    },
  };
}

/**
 * `buckets` as a claim left them (claim-runs.ts `FairClaim.onBucketDue`): each bucket in `told` at the due time its
 * claim found, dropped when none waits, and kept as it was when its claim could not tell (undefined: it took its limit's
 * worth, gave runs back, or looked past some; what it knew is still due).
 */
export function withTold(buckets: readonly BucketDue[], told: ReadonlyMap<number, BucketClaim['nextDueAtMs']>): BucketDue[] {
  const after = buckets.filter((b) => told.get(b.shard) === undefined);
  // A bucket with flow controls never tells (its claim goes through them), so no `flows` flag is lost here.
  for (const [shard, due] of told) if (typeof due === 'number') after.push({ shard, dueAtMs: due });
  return after.sort((a, b) => a.shard - b.shard);
}
