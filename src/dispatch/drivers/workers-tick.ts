/**
 * One `scheduled` tick of the Worker: a bounded driver of the dispatch engine (src/dispatch/engine/), run to
 * completion rather than as a loop that sleeps.
 *
 *   one reap → repeat { claim ≤ min(concurrency, callbacks left) runs due now → send them all → write their outcomes
 *   (no gathering; a write is tried up to FINISH_TRIES times) } until nothing is due now, the budget of wall time is
 *   spent, or the per-tick callback cap (the subrequest limit) is reached.
 *
 * Whatever is left waits for the next tick or for a Node dispatcher on the same database: both claim with the same
 * SKIP LOCKED leases and the same fair share over buckets. A tick the runtime kills mid-delivery loses nothing: its runs
 * keep their leases, and the next reaper takes them back, as for a dispatcher that died.
 */
import type { Clock } from '../../domain/clock.ts';
import { Rotation } from '../../domain/fair-share.ts';
import { SHARD_COUNT } from '../../domain/shard.ts';
import type { Db } from '../../store/db.ts';
import { nextDueAt } from '../../store/queue/due-backlog.ts';
import { performAttempt } from '../attempt.ts';
import type { Deliver } from '../deliver.ts';
import { claimBatch } from '../engine/claim-pacer.ts';
import { reapOnce } from '../engine/lease-keeper.ts';
import type { EngineLogger } from '../engine/logger.ts';
import { createOutcomeWriter } from '../engine/outcome-writer.ts';
import { createRunQueue } from '../engine/run-queue.ts';
import type { Keyring } from '../keyring.ts';
import { attemptDepsFor } from './common.ts';

/**
 * Claims in a row that yield nothing to send while runs are still due (all ended `expired`/`skipped` in the claim,
 * or all held by another dispatcher) before the tick gives up until the next one.
 */
export const MAX_EMPTY_CLAIMS = 10;
/** Tries of one outcome write before the tick gives up on it (the runs then come back through the reaper). */
const FINISH_TRIES = 3;
const FINISH_RETRY_MS = 200;

/** The bounds of one tick. */
export type TickLimits = {
  /** Callbacks in flight at once. */
  concurrency: number;
  /** Most callbacks per tick (the platform's subrequest limit). */
  maxCallbacksPerTick: number;
  /** Wall time after which no new claim starts, in ms. */
  tickBudgetMs: number;
};

export type TickDeps = {
  db: Db;
  clock: Clock;
  keyring: Keyring;
  deliver: Deliver;
  log: EngineLogger;
  userAgent: string;
  /** Lease owner id of this tick (a new UUID per tick). */
  owner: string;
  /** Lease = callback timeout + this, in ms. */
  leaseMarginMs: number;
  /** The default callbacks-per-day quota of a tenant (CHIME_QUOTA_CALLBACKS_PER_DAY; 0 or absent: none). */
  callbacksPerDay?: number;
  /** Uniform [0, 1) for backoff jitter (default Math.random). */
  random?: () => number;
};

/** What one tick did. */
export type TickReport = {
  /** Runs whose expired leases the tick's reaper took back. */
  reaped: number;
  /** Attempts made: callbacks sent, or refused by the destination check before sending. */
  attempts: number;
  /** Attempts whose outcome was recorded (the rest had lost their lease to another dispatcher). */
  recorded: number;
  /** Why the tick stopped claiming. */
  stoppedBy: 'idle' | 'budget' | 'callback-cap' | 'contended';
  /** Wall time of the tick, ms. */
  durationMs: number;
};

/**
 * Runs one tick within `limits`.
 * @throws the database driver's error when a claim or the reap fails (runs already claimed keep their leases and come
 *   back through the reaper); outcomes that cannot be recorded after FINISH_TRIES are logged, not thrown
 */
export async function runTick(deps: TickDeps, limits: TickLimits): Promise<TickReport> {
  const { db, clock, log } = deps;
  const startedAt = clock.now();
  const deadline = startedAt + limits.tickBudgetMs;
  const report: TickReport = { reaped: 0, attempts: 0, recorded: 0, stoppedBy: 'idle', durationMs: 0 };
  const writer = createOutcomeWriter({
    db,
    clock,
    logger: log,
    options: {
      owner: deps.owner,
      gatherMs: 0,
      batchSize: limits.concurrency,
      maxTries: FINISH_TRIES,
      backoffMinMs: FINISH_RETRY_MS,
      backoffMaxMs: 4 * FINISH_RETRY_MS,
    },
    onWritten: (_, recorded) => (report.recorded += recorded.size),
  });
  const attemptDeps = attemptDepsFor(deps, log);
  const queue = createRunQueue({
    clock,
    options: { concurrency: limits.concurrency, perDestination: limits.concurrency, backlog: 0 },
    attempt: (run) => performAttempt(run, attemptDeps),
    onOutcome: (outcome) => writer.push(outcome),
  });
  const claimDeps = {
    db,
    clock,
    logger: log,
    options: { owner: deps.owner, leaseMarginMs: deps.leaseMarginMs, callbacksPerDay: deps.callbacksPerDay },
  };
  // Each tick's rotation starts at a random bucket: starting at 0 every minute would serve low buckets first.
  const rotation = new Rotation();
  rotation.start = Math.floor((deps.random ?? Math.random)() * SHARD_COUNT);

  report.reaped = await reapOnce({ db, clock, logger: log });
  let emptyClaims = 0;
  for (;;) {
    const left = limits.maxCallbacksPerTick - report.attempts;
    if (left <= 0) {
      report.stoppedBy = 'callback-cap';
      break;
    }
    if (clock.now() >= deadline) {
      report.stoppedBy = 'budget';
      break;
    }
    const claimed = await claimBatch(claimDeps, { limit: Math.min(limits.concurrency, left), horizonMs: 0, rotation });
    for (const run of claimed) queue.add(run);
    if (claimed.length === 0) {
      const due = await nextDueAt(db);
      if (due === null || due > clock.now()) break;
      if (++emptyClaims >= MAX_EMPTY_CLAIMS) {
        report.stoppedBy = 'contended';
        break;
      }
      continue;
    }
    emptyClaims = 0;
    report.attempts += claimed.length;
    await queue.drained();
    await writer.flushAll();
  }
  report.durationMs = clock.now() - startedAt;
  return report;
}
