/**
 * Lease upkeep, every `intervalMs`: first the leases of the runs this dispatcher holds but has not sent (waiting for
 * their due time or a destination slot) are extended to now + their callback timeout + the margin, so the reaper
 * cannot hand them out again before they were ever sent (claims are sized by free slots overall, not per
 * destination, so a slow destination's queue can outlast a lease); a run whose lease is no longer held is released,
 * not sent. Then expired leases of any dispatcher (one that died or stalled) are reaped: their runs go back to the
 * queue, or fail when at most once (docs/design.md, invariant 4).
 */

import type { ClaimedRun } from '../../domain/claimed-run.ts';
import type { Clock } from '../../domain/clock.ts';
import type { Db } from '../../store/db.ts';
import { reapOverdueCompletions } from '../../store/queue/reap-completions.ts';
import { reapExpiredLeases } from '../../store/queue/reap-leases.ts';
import { renewLeases } from '../../store/queue/renew-leases.ts';
import type { EngineLogger } from './logger.ts';

export type LeaseKeeperOptions = {
  owner: string;
  /** Lease = callback timeout + this, in ms. */
  leaseMarginMs: number;
  /** Time between two rounds of renewal and reaping, in ms. */
  intervalMs: number;
};

export type LeaseKeeperDeps = {
  db: Db;
  clock: Clock;
  logger: EngineLogger;
  options: LeaseKeeperOptions;
  /** The runs held and not yet sent, to renew. */
  unsent: () => ClaimedRun[];
  /** Runs whose lease was lost before they were sent: they must not be sent. */
  release: (runIds: string[]) => void;
  /** After a reap that gave runs back (they may be due now). */
  onReaped?: (runs: number) => void;
};

export interface LeaseKeeper {
  /** Starts the rounds, every `intervalMs` on the clock (its timers keep no process alive). */
  start(): void;
  /** Stops the rounds; resolves after a round in progress. */
  stop(): Promise<void>;
  /** One round now. Never throws: failures are logged (the next round tries again). */
  round(): Promise<void>;
  /** Reaps expired leases now. @returns how many runs it gave back or failed @throws the driver's error */
  reap(): Promise<number>;
}

/**
 * Reaps every expired lease now (any dispatcher's), bucket by bucket: a failing bucket is logged and the others are
 * reaped; then fails the awaited attempts of async jobs past their deadline (`completion_timeout`). The lease keeper's
 * step and the Workers tick's.
 * @returns how many runs it gave back or failed @throws the driver's error when the database is down
 */
export async function reapOnce(deps: Pick<LeaseKeeperDeps, 'db' | 'clock' | 'logger'>): Promise<number> {
  const n = await reapExpiredLeases(deps.db, deps.clock.now(), undefined, (shard, err) =>
    deps.logger.error({ err, shard }, 'reaping failed in one bucket; the others were reaped'),
  );
  if (n > 0) deps.logger.warn({ runs: n }, 'reclaimed runs whose lease expired');
  // Runs awaiting a receiver's report hold no lease: their deadlines are reaped here too (reap-completions.ts).
  const late = await reapOverdueCompletions(deps.db, deps.clock.now(), undefined, (shard, err) =>
    deps.logger.error({ err, shard }, 'failing overdue completions failed in one bucket; the others were done'),
  );
  if (late > 0) deps.logger.info({ runs: late }, 'failed attempts whose completion report was overdue (completion_timeout)');
  return n + late;
}

/** Creates a keeper; nothing runs before `start()` or `round()`. */
export function createLeaseKeeper(deps: LeaseKeeperDeps): LeaseKeeper {
  const { db, clock, logger, options: o } = deps;
  let stopTimer: (() => void) | null = null;
  let current: Promise<void> = Promise.resolve();

  async function renew(): Promise<void> {
    const runs = deps.unsent();
    if (runs.length === 0) return;
    const now = clock.now();
    const renewals = runs.map((r) => ({
      shard: r.shard,
      runId: r.runId,
      attempt: r.attempt,
      leaseExpiresAtMs: now + r.callback.timeoutMs + o.leaseMarginMs,
    }));
    // A bucket whose renewal failed (its Citus worker is down) keeps its runs: their leases are unknown, not lost.
    const failed = new Set<number>();
    try {
      const held = await renewLeases(db, o.owner, renewals, (shard, err) => {
        failed.add(shard);
        logger.error({ err, shard }, 'renewing the leases of queued runs failed in one bucket; the others were renewed');
      });
      // The run queue sends a run only within its lease as last extended.
      for (const [i, r] of runs.entries())
        if (held.has(r.runId)) r.leaseExpiresAtMs = Math.max(r.leaseExpiresAtMs, renewals[i]!.leaseExpiresAtMs);
      const lost = runs.filter((r) => !held.has(r.runId) && !failed.has(r.shard)).map((r) => r.runId);
      if (lost.length > 0) deps.release(lost);
    } catch (err) {
      logger.error({ err }, 'renewing the leases of queued runs failed');
    }
  }

  async function reap(): Promise<number> {
    const n = await reapOnce(deps);
    if (n > 0) deps.onReaped?.(n);
    return n;
  }

  async function round(): Promise<void> {
    await renew();
    await reap().catch((err) => logger.error({ err }, 'reaper failed'));
  }

  return {
    start() {
      // A round still running (the database is slow or down) is not queued behind: `every` skips that tick.
      stopTimer ??= clock.every(o.intervalMs, () => (current = round()));
    },
    async stop() {
      stopTimer?.();
      stopTimer = null;
      await current;
    },
    round,
    reap,
  };
}
