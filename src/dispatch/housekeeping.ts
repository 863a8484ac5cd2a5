/**
 * Housekeeping that every dispatcher process runs on a timer: retention (finished runs older than `retentionMs`
 * and their attempts, expired idempotency keys, audit entries older than `auditRetentionMs`), in batches so no statement holds many locks. Several dispatchers
 * may prune at once: SKIP LOCKED splits the rows between them.
 */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.ts';
import { pruneAuditLog } from '../store/audit-log.ts';
import type { Db } from '../store/db.ts';
import { pruneTenantCallbacks } from '../store/queue/hold-runs.ts';
import { PRUNE_BATCH_DEFAULT, pruneFinishedRuns, pruneIdempotencyKeys } from '../store/retention.ts';
import type { DispatchMetrics } from './metrics.ts';

/** How often retention runs, in ms. */
export const HOUSEKEEPING_INTERVAL_MS = 10 * 60_000;

export type HousekeeperDeps = {
  db: Db;
  clock: Clock;
  logger: Logger;
  /** Finished runs older than this (ms since they finished) are deleted; 0 keeps them forever. */
  retentionMs: number;
  /** Audit entries older than this (ms) are deleted; 0 or absent keeps them forever. */
  auditRetentionMs?: number;
  intervalMs?: number;
  batchSize?: number;
  metrics?: Pick<DispatchMetrics, 'runsPruned'>;
};

export type Housekeeper = {
  /** Runs `runOnce` now and then every `intervalMs`. */
  start(): void;
  stop(): Promise<void>;
  /** One full pass. @returns rows deleted. Never throws: errors are logged and retried on the next pass. */
  runOnce(): Promise<{ runs: number; idempotencyKeys: number; auditEntries: number }>;
};

export function createHousekeeper(deps: HousekeeperDeps): Housekeeper {
  const { db, clock, logger } = deps;
  const batch = deps.batchSize ?? PRUNE_BATCH_DEFAULT;
  let stopTimer: (() => void) | null = null;
  let current: Promise<unknown> = Promise.resolve();
  let stopped = false;

  async function runOnce(): Promise<{ runs: number; idempotencyKeys: number; auditEntries: number }> {
    const done = { runs: 0, idempotencyKeys: 0, auditEntries: 0 };
    try {
      if (deps.retentionMs > 0) {
        const cutoff = clock.now() - deps.retentionMs;
        for (let n = batch; n === batch && !stopped; ) {
          n = await pruneFinishedRuns(db, cutoff, batch);
          done.runs += n;
          deps.metrics?.runsPruned.inc(n);
        }
      }
      for (let n = batch; n === batch && !stopped; ) {
        n = await pruneIdempotencyKeys(db, clock.now(), batch);
        done.idempotencyKeys += n;
      }
      // The callbacks-per-day counts of days gone (a row per tenant and day: few, one statement per bucket).
      if (!stopped) await pruneTenantCallbacks(db, clock.now());
      if (deps.auditRetentionMs && deps.auditRetentionMs > 0) {
        const cutoff = clock.now() - deps.auditRetentionMs;
        for (let n = batch; n === batch && !stopped; ) {
          n = await pruneAuditLog(db, cutoff, batch);
          done.auditEntries += n;
        }
      }
      if (done.runs + done.idempotencyKeys + done.auditEntries > 0) logger.info(done, 'retention: pruned');
    } catch (err) {
      logger.error({ err }, 'retention pass failed; retrying on the next pass');
    }
    return done;
  }

  return {
    start() {
      if (stopTimer) return;
      stopped = false;
      current = runOnce();
      stopTimer = deps.clock.every(deps.intervalMs ?? HOUSEKEEPING_INTERVAL_MS, () => (current = current.then(runOnce)));
    },
    async stop() {
      stopped = true;
      stopTimer?.();
      stopTimer = null;
      await current;
    },
    runOnce,
  };
}
