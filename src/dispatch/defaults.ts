/**
 * Default dispatcher options, apart from the dispatcher itself so that configuration (src/config.ts) can name them
 * without importing the dispatcher and what it pulls in (prom-client): the Workers bundle parses the same
 * configuration and must stay free of Node-only modules.
 */
import type { DispatcherOptions } from './drivers/node-dispatcher.ts';
import { REAP_INTERVAL_DEFAULT_MS } from '../store/queue/reap-leases.ts';

/** Batch and concurrency in runs; lease margin, poll, lookahead, reap interval and shutdown grace in ms. */
export const DISPATCHER_DEFAULTS: Readonly<Omit<DispatcherOptions, 'owner'>> = Object.freeze({
  batchSize: 100,
  concurrency: 256,
  perDestination: 16,
  leaseMarginMs: 30_000,
  pollMs: 2_000,
  lookaheadMs: 250,
  reapIntervalMs: REAP_INTERVAL_DEFAULT_MS,
  shutdownGraceMs: 10_000,
});
