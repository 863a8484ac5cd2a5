/**
 * One `scheduled` tick of the Worker: the Node dispatcher's claim → deliver → record cycle (src/dispatch/dispatcher.ts),
 * bounded to fit a Workers invocation and run to completion rather than as a loop that sleeps.
 *
 *   reap expired leases → repeat { claim ≤ min(concurrency, callbacks left) due runs → send them all at once →
 *   record their outcomes } until nothing is due now, the budget of wall time is spent, or the per-tick callback cap
 *   (the subrequest limit) is reached.
 *
 * Whatever is left (runs due later, or beyond the caps) waits for the next tick or for a Node dispatcher on the same
 * database: both claim with the same SKIP LOCKED leases, so they share the work without coordination. A tick the
 * runtime kills mid-delivery loses nothing: its runs keep their leases (callback timeout + CHIME_LEASE_MARGIN_MS),
 * and the next tick's reaper (or a Node dispatcher's) takes them back, as for a dispatcher that died.
 */
import type { Clock } from '../domain/clock.ts';
import type { Db } from '../store/db.ts';
import { claimRuns } from '../store/queue/claim-runs.ts';
import { finishRuns, type AttemptOutcome } from '../store/queue/finish-runs.ts';
import { nextDueAt, reapExpiredLeases } from '../store/queue/reap-leases.ts';
import { performAttempt, type AttemptDeps } from '../dispatch/attempt.ts';
import type { Deliver } from '../dispatch/deliver.ts';
import type { Keyring } from '../dispatch/keyring.ts';
import type { TickLimits } from './config.ts';
import type { WorkerLogger } from './log.ts';

/**
 * Claims in a row that yield nothing to send while runs are still due (all ended `expired`/`skipped` in the claim,
 * or all held by another dispatcher) before the tick gives up until the next one.
 */
export const MAX_EMPTY_CLAIMS = 10;
/** Tries of one `finishRuns` before the tick gives up on it (the runs then come back through the reaper). */
const FINISH_TRIES = 3;
const FINISH_RETRY_MS = 200;

export type TickDeps = {
  db: Db;
  clock: Clock;
  keyring: Keyring;
  deliver: Deliver;
  log: WorkerLogger;
  userAgent: string;
  /** Lease owner id of this tick (a new UUID per tick). */
  owner: string;
  /** Lease = callback timeout + this, in ms. */
  leaseMarginMs: number;
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
 * @throws the database driver's error when a claim or a reap fails (runs already claimed keep their leases and come
 *   back through the reaper); outcomes that cannot be recorded after FINISH_TRIES are logged, not thrown
 */
export async function runTick(deps: TickDeps, limits: TickLimits): Promise<TickReport> {
  const { db, clock, log } = deps;
  const startedAt = clock.now();
  const deadline = startedAt + limits.tickBudgetMs;
  const attemptDeps: AttemptDeps = {
    clock,
    keyring: deps.keyring,
    deliver: deps.deliver,
    userAgent: deps.userAgent,
    random: deps.random ?? Math.random,
    onBuildError: (err, run) =>
      log.error({ err, runId: run.runId, jobId: run.jobId, tenantId: run.tenantId }, 'could not build the callback request'),
  };
  const report: TickReport = { reaped: 0, attempts: 0, recorded: 0, stoppedBy: 'idle', durationMs: 0 };

  report.reaped = await reapExpiredLeases(db, startedAt);
  if (report.reaped > 0) log.warn({ runs: report.reaped }, 'reclaimed runs whose lease expired');

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
    const claimed = await claimRuns(db, {
      owner: deps.owner,
      limit: Math.min(limits.concurrency, left),
      nowMs: clock.now(),
      leaseMarginMs: deps.leaseMarginMs,
    });
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
    const outcomes = await Promise.all(claimed.map((run) => performAttempt(run, attemptDeps)));
    report.recorded += await finish(deps, outcomes.filter((o): o is AttemptOutcome => o !== null));
  }
  report.durationMs = clock.now() - startedAt;
  return report;
}

async function finish(deps: TickDeps, outcomes: AttemptOutcome[]): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      const held = await finishRuns(deps.db, deps.owner, outcomes);
      if (held.size < outcomes.length) {
        deps.log.warn({ lost: outcomes.length - held.size }, 'outcomes not recorded: their leases had expired and were reclaimed');
      }
      return held.size;
    } catch (err) {
      if (attempt >= FINISH_TRIES) {
        deps.log.error({ err, runs: outcomes.map((o) => o.runId) }, 'recording outcomes failed; the reaper will take the runs back');
        return 0;
      }
      await new Promise((r) => setTimeout(r, FINISH_RETRY_MS * attempt));
    }
  }
}
