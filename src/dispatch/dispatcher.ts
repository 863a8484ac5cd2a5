/**
 * The dispatcher: claims due runs with a lease, delivers them with bounded concurrency, records every attempt and
 * schedules the retry, the next occurrence or the dead letter. Any number run against one database; SKIP LOCKED
 * leases share the work, and a dead dispatcher's runs come back through the reaper after their lease expires.
 *
 * Loop: claim up to min(batchSize, free slots) → start deliveries → if the batch was full, claim again at once;
 * otherwise sleep until the earliest due run, a NOTIFY of an earlier one, or `pollMs` (the safety net).
 * Outcomes are buffered and written in batches (`finishRuns`), only where this dispatcher still holds the lease.
 */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.ts';
import type { Database } from '../store/db.ts';
import { RUNS_CHANNEL } from '../store/db.ts';
import { newId } from '../domain/ids.ts';
import { claimRuns, type ClaimedRun } from '../store/queue/claim-runs.ts';
import { finishRuns, type AttemptOutcome } from '../store/queue/finish-runs.ts';
import { nextDueAt, reapExpiredLeases, releaseLeases } from '../store/queue/reap-leases.ts';
import { renewLeases, unclaimRuns } from '../store/queue/renew-leases.ts';
import { performAttempt, type AttemptDeps } from './attempt.ts';
import type { Deliver } from './deliver.ts';
import type { Keyring } from './keyring.ts';
import { DISPATCHER_DEFAULTS } from './defaults.ts';
import { destinationOf } from '../domain/destination.ts';
import { Limiter } from './limiter.ts';
import { createDispatchMetrics, type DispatchMetrics } from './metrics.ts';
import { Registry } from 'prom-client';
import { Wakeup } from './wakeup.ts';

export type DispatcherOptions = {
  /** Lease owner id; unique per dispatcher (default: a new UUID). */
  owner: string;
  /** Most runs per claim. */
  batchSize: number;
  /** Most callbacks in flight. */
  concurrency: number;
  /** Most callbacks in flight to one origin. */
  perDestination: number;
  /** Lease = callback timeout + this, in ms. */
  leaseMarginMs: number;
  /** Longest sleep without looking for due runs, in ms. */
  pollMs: number;
  /**
   * Runs due within this many ms are claimed ahead and fired by a local timer at their due time, so fire lag is the
   * timer's, not a claim's round trips. A job paused or canceled inside this window still fires its claimed run.
   */
  lookaheadMs: number;
  reapIntervalMs: number;
  /** How long `stop()` lets in-flight callbacks finish before releasing their leases, in ms. */
  shutdownGraceMs: number;
};

// The defaults live in their own module so that configuration can read them without importing the dispatcher.
export { DISPATCHER_DEFAULTS };
/** Sleep when due runs exist but none could be claimed (other dispatchers hold them), in ms. */
const CONTENDED_SLEEP_MS = 10;
/**
 * Least time between two claims that look past saturated destinations (each walks their backlog), in ms; doubled
 * after each that finds nothing, up to the max.
 */
const SKIP_CLAIM_INTERVAL_MS = 100;
const SKIP_CLAIM_INTERVAL_MAX_MS = 2_000;
/** Backoff after a failed claim or finish (database down), doubling up to the max, in ms. */
const ERROR_BACKOFF_MIN_MS = 100;
const ERROR_BACKOFF_MAX_MS = 5_000;
/**
 * How long outcomes gather before they are written, in ms: one statement per gathering instead of one per callback
 * (the run's state lags by this; a retry's wake-up is unaffected, its time is seconds away).
 */
const FINISH_GATHER_MS = 20;
/** Most outcomes written by one finish statement. */
const FINISH_BATCH = 500;

export type DispatcherDeps = {
  database: Database;
  clock: Clock;
  logger: Logger;
  deliver: Deliver;
  keyring: Keyring;
  userAgent: string;
  options?: Partial<DispatcherOptions>;
  random?: () => number;
  /** Prometheus metrics to record into (default: a private registry nobody scrapes). */
  metrics?: DispatchMetrics;
};

export interface Dispatcher {
  readonly owner: string;
  /** Callbacks in flight now. */
  readonly inFlight: number;
  /** Starts claiming; resolves once listening for NOTIFY. */
  start(): Promise<void>;
  /**
   * Stops claiming, lets in-flight callbacks finish for up to `shutdownGraceMs` (or `graceMs`), releases the leases
   * of those still running, and writes every outcome it has. Resolves when done.
   */
  stop(graceMs?: number): Promise<void>;
  /** During `stop()`: ends the grace period now, so leases of callbacks still in flight are released. */
  drainNow(): void;
}

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const o: DispatcherOptions = { owner: newId(), ...DISPATCHER_DEFAULTS, ...deps.options };
  const { database, clock, logger } = deps;
  const db = database.db;
  const limiter = new Limiter(o.concurrency, o.perDestination);
  const wakeup = new Wakeup();
  const inFlight = new Map<string, Promise<void>>();
  /** Runs whose leases `stop()` gave back: they must not be sent any more, nor their late outcomes written. */
  const released = new Set<string>();
  /** Runs claimed and waiting for a per-destination slot: their leases are renewed while they wait (`renewQueued`). */
  const queued = new Map<string, ClaimedRun>();
  const pending: AttemptOutcome[] = [];
  let flushing: Promise<void> | null = null;
  let running = false;
  let loopDone: Promise<void> = Promise.resolve();
  let unlisten: (() => Promise<void>) | null = null;
  let reapTimer: NodeJS.Timeout | null = null;
  let slotFreed: (() => void) | null = null;
  let endGrace: (() => void) | null = null;
  const metrics = deps.metrics ?? createDispatchMetrics(new Registry());
  const untilDue = untilDueWith(clock);
  /**
   * Runs due and waiting for a per-destination slot, per destination. A destination with `saturation` runs waiting
   * besides its full set in flight is saturated: claims leave its runs alone until it catches up, so its backlog
   * cannot take the dispatcher's other slots while other tenants' runs are due.
   */
  const waitingByOrigin = new Map<string, number>();
  // A backlog of one claim batch keeps a fast destination busy through the next claim's round trip; half the slots
  // at most, so others always have room.
  const saturation = Math.max(o.perDestination, Math.min(o.batchSize, Math.floor(o.concurrency / 2)));
  const saturatedOrigins = (): string[] => [...waitingByOrigin].filter(([, n]) => n >= saturation).map(([d]) => d);
  let lastSkipClaimAt = -Infinity;
  /**
   * Set when the last sleep was the safety-net poll, nothing having been due before its end: the next iteration
   * reads the earliest due time (one query) before it pays for a claim (a transaction of three statements), so an
   * idle dispatcher costs next to nothing.
   */
  let lookFirst = false;
  let skipInterval = SKIP_CLAIM_INTERVAL_MS;
  /** Until a callback ends (a slot frees), a NOTIFY or stop() wakes the loop, or `ms` pass. */
  const slotOrSleep = async (ms: number): Promise<void> => {
    await Promise.race([new Promise<void>((r) => (slotFreed = r)), wakeup.sleep(ms, clock.now())]);
    wakeup.wake();
  };
  /** Callbacks in flight per origin, for chime_in_flight at scrape time: the limiter's per-destination slots taken. */
  const inFlightByOrigin = (): ReadonlyMap<string, number> => limiter.activeByKey;
  const attemptDeps: AttemptDeps = {
    clock,
    keyring: deps.keyring,
    deliver: deps.deliver,
    userAgent: deps.userAgent,
    random: deps.random ?? Math.random,
    abandoned: (run) => released.has(run.runId),
    onBuildError: (err, run) =>
      logger.error({ err, runId: run.runId, jobId: run.jobId, tenantId: run.tenantId }, 'could not build the callback request'),
  };

  async function loop(): Promise<void> {
    let backoff = ERROR_BACKOFF_MIN_MS;
    while (running) {
      try {
        // Every run held counts against the concurrency, also while it waits for its due time or for its
        // destination's slot: claims never outrun what this dispatcher can send.
        const free = o.concurrency - inFlight.size;
        if (free <= 0) {
          await new Promise<void>((r) => (slotFreed = r));
          continue;
        }
        const limit = Math.min(o.batchSize, free);
        if (lookFirst) {
          lookFirst = false;
          if (await sleepUntilDue(true, false)) continue;
        }
        // With a destination saturated, claiming in due order would only add to its backlog: look past it for other
        // destinations' due runs, at most every SKIP_CLAIM_INTERVAL_MS (it costs a scan), and otherwise wait for a
        // slot to free, which is when the destination may fall below saturation and be claimed again.
        // The interval is kept while the destination goes in and out of saturation (it does, a claim batch at a
        // time): a flood with no other destination due would otherwise pay a fruitless scan every few claims.
        const skipDestinations = saturatedOrigins();
        if (skipDestinations.length > 0) {
          if (clock.now() - lastSkipClaimAt < skipInterval) {
            await slotOrSleep(SKIP_CLAIM_INTERVAL_MS);
            continue;
          }
          lastSkipClaimAt = clock.now();
        }
        const endClaim = metrics.claimDuration.startTimer();
        const claimed = await claimRuns(db, {
          owner: o.owner,
          limit,
          nowMs: clock.now(),
          leaseMarginMs: o.leaseMarginMs,
          horizonMs: o.lookaheadMs,
          skipDestinations,
        });
        endClaim();
        for (const run of claimed) track(run);
        backoff = ERROR_BACKOFF_MIN_MS;
        // Looking past saturated destinations found nothing: look less often (up to every 2 s) until one finds some.
        if (skipDestinations.length > 0) {
          skipInterval = claimed.length > 0 ? SKIP_CLAIM_INTERVAL_MS : Math.min(skipInterval * 2, SKIP_CLAIM_INTERVAL_MAX_MS);
        }
        if (claimed.length === limit || !running) continue;
        await sleepUntilDue(claimed.length > 0, skipDestinations.length > 0);
      } catch (err) {
        logger.error({ err, backoffMs: backoff }, 'claim failed; retrying');
        if (!running) break;
        await wakeup.sleep(backoff, clock.now());
        backoff = Math.min(backoff * 2, ERROR_BACKOFF_MAX_MS);
      }
    }
  }

  /**
   * Reads the earliest due time and sleeps until it enters the lookahead (at most `pollMs`, or until woken).
   * @param claimIfDue a run already in the lookahead is claimed at once (after a claim that found runs, or before the
   *   first claim); otherwise (the last claim found nothing: other dispatchers hold the due runs) this one waits a little
   * @param skipping the last claim looked past saturated destinations
   * @returns false when a claim should be made now without sleeping, true after a sleep
   */
  async function sleepUntilDue(claimIfDue: boolean, skipping: boolean): Promise<boolean> {
    const due = await nextDueAt(db);
    const now = clock.now();
    const wait = claimWaitMs(due, now, o, claimIfDue);
    if (wait === 0) return false;
    if (skipping && !claimIfDue && due !== null && due <= now) {
      // Only the saturated destinations have due runs: wait for one of their slots.
      await slotOrSleep(SKIP_CLAIM_INTERVAL_MS);
      return true;
    }
    // stop() may have come while this iteration awaited the database: its wake() found no sleep to end.
    if (!running) return true;
    const how = await wakeup.sleep(wait, now);
    // Nothing was due before the poll ran out: look before claiming next time.
    lookFirst = how === 'timeout' && (due === null || due - o.lookaheadMs > now + wait);
    return true;
  }

  function track(run: ClaimedRun): void {
    const p: Promise<void> = deliverRun(run).finally(() => {
      // A later attempt of the same run (this one's lease expired and was reclaimed) may have replaced this entry.
      if (inFlight.get(run.runId) === p) inFlight.delete(run.runId);
      const r = slotFreed;
      slotFreed = null;
      r?.();
    });
    inFlight.set(run.runId, p);
  }

  async function deliverRun(run: ClaimedRun): Promise<void> {
    const origin = destinationOf(run.callback.url);
    queued.set(run.runId, run);
    await untilDue(run.dueAtMs);
    waitingByOrigin.set(origin, (waitingByOrigin.get(origin) ?? 0) + 1);
    try {
      await limiter.acquire(origin);
    } finally {
      const left = waitingByOrigin.get(origin)! - 1;
      if (left > 0) waitingByOrigin.set(origin, left);
      else waitingByOrigin.delete(origin);
    }
    queued.delete(run.runId);
    let outcome: AttemptOutcome | null;
    try {
      outcome = await performAttempt(run, attemptDeps);
    } finally {
      limiter.release(origin);
    }
    // Released by stop() (while it waited for a slot, or in flight after the grace): the run's state is the release's.
    if (outcome === null || released.has(run.runId)) {
      if (outcome) logger.warn({ runId: run.runId, jobId: run.jobId, attempt: run.attempt }, 'attempt finished after its lease was released at shutdown; not recorded');
      return;
    }
    logger.debug(
      { runId: run.runId, jobId: run.jobId, tenantId: run.tenantId, attempt: run.attempt, outcome: outcome.runStatus },
      'attempt finished',
    );
    if (run.attempt === 1) {
      metrics.runsFired.inc();
      metrics.fireLag.observe(Math.max(0, outcome.startedAtMs - run.scheduledForMs) / 1000);
    }
    metrics.attempts.inc({ outcome: outcome.runStatus, error_class: outcome.errorClass ?? '' });
    pending.push(outcome);
    flush();
  }

  /**
   * Writes the pending outcomes: after FINISH_GATHER_MS, batch after batch while a backlog lasts (full batches); a
   * trickle is left to gather again, or steady traffic would be written one outcome per statement as it arrives.
   * Resolves when this flush ends; `flushAll` waits until nothing is pending.
   */
  function flush(): Promise<void> {
    flushing ??= (async () => {
      let backoff = ERROR_BACKOFF_MIN_MS;
      // Let outcomes that finish within a few ms join one statement.
      await new Promise((r) => setTimeout(r, FINISH_GATHER_MS));
      while (pending.length > 0) {
        const batch = pending.splice(0, FINISH_BATCH);
        try {
          const endFinish = metrics.finishDuration.startTimer();
          const held = await finishRuns(db, o.owner, batch);
          endFinish();
          // A retry is claimable only now that its outcome is written: wake the loop if it is due before its sleep ends.
          for (const b of batch) if (b.nextAttemptAtMs !== null) wakeup.wakeBy(b.nextAttemptAtMs - o.lookaheadMs);
          if (held.size < batch.length) {
            logger.warn({ lost: batch.length - held.size }, 'outcomes not recorded: their leases had expired and were reclaimed');
          }
          backoff = ERROR_BACKOFF_MIN_MS;
          if (pending.length < FINISH_BATCH) break;
        } catch (err) {
          pending.unshift(...batch);
          logger.error({ err, backoffMs: backoff }, 'recording outcomes failed; retrying');
          await new Promise((r) => setTimeout(r, backoff));
          backoff = Math.min(backoff * 2, ERROR_BACKOFF_MAX_MS);
        }
      }
      flushing = null;
      // What arrived during the last write gathers for the next statement.
      if (pending.length > 0) void flush();
    })();
    return flushing;
  }

  /** Until every outcome is written (stop()). */
  async function flushAll(): Promise<void> {
    while (pending.length > 0 || flushing) await (flushing ?? flush());
  }

  /**
   * Each reap tick, before reaping: extends the leases of runs waiting for a per-destination slot to now + their
   * callback timeout + the lease margin. Claims are sized by free slots overall, not per origin, so one slow origin's
   * queue can outlast a lease; without this the reaper would hand those runs out again before they were ever sent.
   * A run whose lease is no longer held is marked released: it will not be sent.
   */
  async function renewQueued(): Promise<void> {
    if (queued.size === 0) return;
    const now = clock.now();
    const runs = [...queued.values()];
    try {
      const held = await renewLeases(
        db,
        o.owner,
        runs.map((r) => ({ runId: r.runId, attempt: r.attempt, leaseExpiresAtMs: now + r.callback.timeoutMs + o.leaseMarginMs })),
      );
      for (const r of runs) if (!held.has(r.runId)) released.add(r.runId);
    } catch (err) {
      logger.error({ err }, 'renewing the leases of queued runs failed');
    }
  }

  async function reap(): Promise<void> {
    try {
      const n = await reapExpiredLeases(db, clock.now());
      if (n > 0) {
        metrics.leasesReaped.inc(n);
        logger.warn({ runs: n }, 'reclaimed runs whose lease expired');
        wakeup.wake();
      }
    } catch (err) {
      logger.error({ err }, 'reaper failed');
    }
  }

  return {
    owner: o.owner,
    get inFlight() {
      return inFlight.size;
    },
    async start() {
      if (running) return;
      running = true;
      metrics.inFlightSources.add(inFlightByOrigin);
      unlisten = await database.listen(RUNS_CHANNEL, (payload) => wakeup.wakeBy(Number(payload) - o.lookaheadMs));
      reapTimer = setInterval(() => void renewQueued().then(reap), o.reapIntervalMs);
      reapTimer.unref();
      loopDone = loop();
      logger.info({ owner: o.owner, ...DISPATCHER_DEFAULTS, ...deps.options }, 'dispatcher started');
    },
    async stop(graceMs = o.shutdownGraceMs) {
      if (!running) return;
      running = false;
      if (reapTimer) clearInterval(reapTimer);
      wakeup.wake();
      slotFreed?.();
      await loopDone;
      await unlisten?.().catch(() => {});
      // Runs still waiting for a per-destination slot were never sent: give them back untouched, do not send them.
      const unsent = [...queued.values()];
      if (unsent.length > 0) {
        for (const r of unsent) released.add(r.runId);
        await unclaimRuns(db, o.owner, unsent, clock.now()).catch((err) => logger.error({ err }, 'giving back unsent runs failed'));
        logger.info({ runs: unsent.length }, 'stopping: gave back runs that were waiting for a per-destination slot');
      }
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'timeout'>((r) => {
        timer = setTimeout(() => r('timeout'), graceMs);
        endGrace = () => r('timeout');
      });
      const all = Promise.all(inFlight.values()).then(() => 'done' as const);
      const how = await Promise.race([all, graceOver]);
      clearTimeout(timer);
      endGrace = null;
      if (how === 'timeout' && inFlight.size > 0) {
        const ids = [...inFlight.keys()];
        for (const id of ids) released.add(id);
        logger.warn({ runs: ids.length }, 'shutdown grace over: releasing leases of callbacks still in flight');
        await releaseLeases(db, o.owner, ids, clock.now()).catch((err) => logger.error({ err }, 'releasing leases failed'));
      }
      await flushAll();
      metrics.inFlightSources.delete(inFlightByOrigin);
      logger.info({ owner: o.owner }, 'dispatcher stopped');
    },
    drainNow() {
      endGrace?.();
    },
  };
}

/**
 * How long the loop waits before its next claim, in ms (0: claim now), given the earliest due time `dueMs` of a
 * waiting run (epoch ms, null: none) at `nowMs`. A run is claimed once it enters the lookahead, and claims ahead are
 * gathered: a run entering the lookahead waits up to a fifth of it for the ones behind it, and one already inside it
 * (runs falling due steadily) is claimed within a fifth of it or half its remaining time, whichever is sooner, so it is
 * still held well before its timer fires, and steady traffic makes a claim per fifth of the lookahead rather than one
 * per run. A run already due is claimed at once, unless `claimIfDue` is false (the last claim found nothing: other
 * dispatchers hold the due runs), then after CONTENDED_SLEEP_MS. Never longer than `pollMs`.
 */
export function claimWaitMs(
  dueMs: number | null,
  nowMs: number,
  o: Pick<DispatcherOptions, 'lookaheadMs' | 'pollMs'>,
  claimIfDue: boolean,
): number {
  if (dueMs === null) return o.pollMs;
  const gather = Math.floor(o.lookaheadMs / 5);
  const claimAt = dueMs - o.lookaheadMs;
  if (claimAt > nowMs) return Math.min(Math.max(claimAt - nowMs, gather), o.pollMs);
  if (dueMs > nowMs) return Math.floor(Math.min(gather, (dueMs - nowMs) / 2));
  return claimIfDue ? 0 : CONTENDED_SLEEP_MS;
}

/** Resolves at `dueAtMs` by `clock` (a timer may fire a little early by the wall clock: it is re-armed). */
function untilDueWith(clock: Clock): (dueAtMs: number) => Promise<void> {
  return async function untilDue(dueAtMs) {
    for (let left = dueAtMs - clock.now(); left > 0; left = dueAtMs - clock.now()) {
      await new Promise((r) => setTimeout(r, left));
    }
  };
}

