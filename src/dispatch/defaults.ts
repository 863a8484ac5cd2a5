/**
 * Default dispatcher options, apart from the dispatcher itself so that configuration (src/config.ts) can name them
 * without importing the dispatcher and what it pulls in (prom-client): the Workers bundle parses the same
 * configuration and must stay free of Node-only modules.
 */

import { REAP_INTERVAL_DEFAULT_MS } from '../store/queue/reap-leases.ts';
import type { DispatcherOptions } from './drivers/node-dispatcher.ts';

/** Batch and concurrency in runs; lease margin, poll, lookahead, reap interval and shutdown grace in ms; adaptive limits on. */
export const DISPATCHER_DEFAULTS: Readonly<Omit<DispatcherOptions, 'owner'>> = Object.freeze({
  batchSize: 100,
  concurrency: 256,
  perDestination: 16,
  adaptiveConcurrency: true,
  leaseMarginMs: 30_000,
  pollMs: 2_000,
  lookaheadMs: 250,
  reapIntervalMs: REAP_INTERVAL_DEFAULT_MS,
  shutdownGraceMs: 10_000,
});

/**
 * The outcome writer of a Node dispatcher. Outcomes gather `gatherMs` before they are written while other attempts are
 * under way whose outcomes can share the write, `idleGatherMs` when none is: one finish transaction per gathering
 * instead of one per callback. Each transaction costs a few statements whatever its size, so under
 * steady traffic the longer gathering pays; a backlog fills batches of `batchSize` sooner. The price: a run shows
 * `running` that much longer, and a crash loses that much more of what was delivered (re-sent at least once, failed at
 * most once). A failing bucket is retried forever, with backoff between `backoffMinMs` and `backoffMaxMs`.
 */
export const OUTCOME_WRITER_DEFAULTS = Object.freeze({
  gatherMs: 100,
  batchSize: 500,
  maxTries: Infinity,
  backoffMinMs: 100,
  backoffMaxMs: 5_000,
});

/** Fixed limits of the engine, in ms: the least time `stop()` gives the last outcomes, even when the grace period is spent. */
export const ENGINE_LIMITS = Object.freeze({ finalFlushMinMs: 2_000 });
