/**
 * The Node dispatcher: a long-running driver of the dispatch engine (src/dispatch/engine/). It claims due runs with a
 * lease (the claim pacer), delivers them with bounded concurrency per destination (the run queue), records every
 * outcome (the outcome writer) and keeps leases (the lease keeper). Any number run against one database; SKIP LOCKED
 * leases share the work, and a dead dispatcher's runs come back through the reaper after their leases expire.
 * A NOTIFY of a run due soon, a retry written and a reap wake the pacer; `stop()` drains (docs/design.md).
 */

import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { Clock } from '../../domain/clock.ts';
import { newId } from '../../domain/ids.ts';
import type { Database } from '../../store/db.ts';
import { RUNS_CHANNEL } from '../../store/db.ts';
import { releaseLeases } from '../../store/queue/reap-leases.ts';
import { unclaimRuns } from '../../store/queue/renew-leases.ts';
import { performAttempt } from '../attempt.ts';
import { DISPATCHER_DEFAULTS, ENGINE_LIMITS, OUTCOME_WRITER_DEFAULTS } from '../defaults.ts';
import type { Deliver } from '../deliver.ts';
import { createClaimPacer } from '../engine/claim-pacer.ts';
import { createLeaseKeeper } from '../engine/lease-keeper.ts';
import { createOutcomeWriter } from '../engine/outcome-writer.ts';
import { createRunQueue } from '../engine/run-queue.ts';
import { Wakeup } from '../engine/wakeup.ts';
import type { Keyring } from '../keyring.ts';
import { createDispatchMetrics, type DispatchMetrics } from '../metrics.ts';
import type { DispatchTracer } from '../tracing.ts';
import { attemptDepsFor, recordAttemptMetrics } from './common.ts';

export type DispatcherOptions = {
  /** Lease owner id; unique per dispatcher (default: a new UUID). */
  owner: string;
  /** Most runs per claim. */
  batchSize: number;
  /** Most runs held (waiting, queued or in flight). */
  concurrency: number;
  /** Most callbacks in flight to one destination. */
  perDestination: number;
  /**
   * Whether each destination's limit adapts between 1 and `perDestination`: down on 429, 503 and timeouts, back up while
   * it answers within its usual latency (CHIME_ADAPTIVE_CONCURRENCY; src/domain/adaptive-limit.ts).
   */
  adaptiveConcurrency: boolean;
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
  /** The default callbacks-per-day quota of a tenant (CHIME_QUOTA_CALLBACKS_PER_DAY; 0 or absent: none). */
  callbacksPerDay?: number;
};

export { DISPATCHER_DEFAULTS };
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
  /** Spans for claims, finishes and callback attempts (README "Traces"); absent: no tracing, nothing paid for it. */
  tracer?: DispatchTracer;
};

export interface Dispatcher {
  readonly owner: string;
  /** Runs held now (waiting for their time or a slot, or in flight). */
  readonly inFlight: number;
  /** Starts claiming; resolves once listening for NOTIFY. */
  start(): Promise<void>;
  /**
   * Stops claiming, gives back runs not yet sent, lets in-flight callbacks finish for up to `shutdownGraceMs` (or
   * `graceMs`), releases the leases of those still running, and writes every outcome it has. Resolves when done.
   */
  stop(graceMs?: number): Promise<void>;
  /** During `stop()`: ends the grace period now, so leases of callbacks still in flight are released. */
  drainNow(): void;
}

/** Creates a stopped dispatcher. */
export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const o: DispatcherOptions = { owner: newId(), ...DISPATCHER_DEFAULTS, ...deps.options };
  const { database, clock, logger } = deps;
  const db = database.db;
  const metrics = deps.metrics ?? createDispatchMetrics(new Registry());
  const wakeup = new Wakeup(clock);
  const writer = createOutcomeWriter({
    db,
    clock,
    logger,
    options: { owner: o.owner, ...OUTCOME_WRITER_DEFAULTS },
    inFlight: () => queue.inFlight().length,
    observeWrite: (s) => metrics.finishDuration.observe(s),
    tracer: deps.tracer,
    // A retry is claimable only once its outcome is written: wake the pacer if it is due before its sleep ends.
    onWritten: (batch) => {
      for (const b of batch) if (b.nextAttemptAtMs !== null) wakeup.wakeBy(b.nextAttemptAtMs - o.lookaheadMs);
    },
  });
  const queue = createRunQueue({
    clock,
    // A destination holds its limit, and as many more as will start within the lookahead (none for a slow one): up to a
    // claim batch keeps a fast destination busy through the next claim's round trip; half the slots at most, so others
    // always have room.
    options: {
      concurrency: o.concurrency,
      perDestination: o.perDestination,
      adaptive: o.adaptiveConcurrency,
      backlog: Math.max(o.perDestination, Math.min(o.batchSize, Math.floor(o.concurrency / 2))),
      soonMs: o.lookaheadMs,
    },
    attempt: (run) => performAttempt(run, attemptDeps),
    onOutcome: (outcome, run) => {
      recordAttemptMetrics(metrics, run, outcome);
      writer.push(outcome);
    },
    onLateOutcome: (_, run) =>
      logger.warn(
        { runId: run.runId, jobId: run.jobId, attempt: run.attempt },
        'attempt finished after its lease was released at shutdown; not recorded',
      ),
  });
  const attemptDeps = attemptDepsFor(deps, logger, (run) => queue.isReleased(run.runId));
  const pacer = createClaimPacer({
    db,
    clock,
    logger,
    wakeup,
    queue,
    options: o,
    observeClaim: (s) => metrics.claimDuration.observe(s),
    tracer: deps.tracer,
  });
  const keeper = createLeaseKeeper({
    db,
    clock,
    logger,
    options: { owner: o.owner, leaseMarginMs: o.leaseMarginMs, intervalMs: o.reapIntervalMs },
    unsent: () => queue.unsent(),
    release: (ids) => queue.release(ids),
    onReaped: (n) => {
      metrics.leasesReaped.inc(n);
      wakeup.wake();
    },
  });
  const inFlightByDestination = () => queue.inFlightByDestination;
  const limitByDestination = () => queue.limitByDestination;
  let running = false;
  let unlisten: (() => Promise<void>) | null = null;
  let endGrace: (() => void) | null = null;

  return {
    owner: o.owner,
    get inFlight() {
      return queue.held;
    },
    async start() {
      if (running) return;
      running = true;
      metrics.inFlightSources.add(inFlightByDestination);
      metrics.limitSources.add(limitByDestination);
      unlisten = await database.listen(RUNS_CHANNEL, (payload) => wakeup.wakeBy(Number(payload) - o.lookaheadMs));
      keeper.start();
      pacer.start();
      logger.info({ owner: o.owner, ...DISPATCHER_DEFAULTS, ...deps.options }, 'dispatcher started');
    },
    async stop(graceMs = o.shutdownGraceMs) {
      if (!running) return;
      running = false;
      await keeper.stop();
      await pacer.stop();
      await unlisten?.().catch(() => {});
      // Runs not yet sent (waiting for their time or a slot): given back untouched, never sent.
      const unsent = queue.unsent();
      if (unsent.length > 0) {
        queue.release(unsent.map((r) => r.runId));
        await unclaimRuns(db, o.owner, unsent, clock.now()).catch((err) => logger.error({ err }, 'giving back unsent runs failed'));
        logger.info({ runs: unsent.length }, 'stopping: gave back runs that were not sent yet');
      }
      const graceEndsAt = clock.now() + graceMs;
      const graceEnd = new AbortController();
      endGrace = () => graceEnd.abort();
      const how = await Promise.race([queue.drained().then(() => 'done' as const), clock.sleep(graceMs, graceEnd.signal)]);
      graceEnd.abort();
      const still = queue.inFlight().filter((r) => !queue.isReleased(r.runId));
      if (how !== 'done' && still.length > 0) {
        queue.release(still.map((r) => r.runId));
        logger.warn({ runs: still.length }, 'shutdown grace over: releasing leases of callbacks still in flight');
        await releaseLeases(db, o.owner, still, clock.now()).catch((err) => logger.error({ err }, 'releasing leases failed'));
      }
      // The outcomes get what is left of the grace period, at least ENGINE_LIMITS.finalFlushMinMs; a second signal ends it at
      // once. A database that stays away must not hold the process: the reaper takes back what is not written.
      const flushEnd = new AbortController();
      endGrace = () => flushEnd.abort();
      void clock.sleep(Math.max(ENGINE_LIMITS.finalFlushMinMs, graceEndsAt - clock.now()), flushEnd.signal).then(() => flushEnd.abort());
      await writer.flushAll(flushEnd.signal);
      flushEnd.abort();
      endGrace = null;
      metrics.inFlightSources.delete(inFlightByDestination);
      metrics.limitSources.delete(limitByDestination);
      logger.info({ owner: o.owner }, 'dispatcher stopped');
    },
    drainNow() {
      endGrace?.();
    },
  };
}
