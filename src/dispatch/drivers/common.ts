/** What both drivers of the dispatch engine set up alike: the attempt's dependencies and the attempt metrics. */

import type { AttemptOutcome } from '../../domain/attempt-outcome.ts';
import type { ClaimedRun } from '../../domain/claimed-run.ts';
import type { Clock } from '../../domain/clock.ts';
import type { AttemptDeps } from '../attempt.ts';
import type { Deliver } from '../deliver.ts';
import type { EngineLogger } from '../engine/logger.ts';
import type { Keyring } from '../keyring.ts';
import type { DispatchMetrics } from '../metrics.ts';
import type { DispatchTracer } from '../tracing.ts';

/**
 * The dependencies of `performAttempt` for a driver: its clock, keyring and HTTP client, jitter from `random`
 * (default Math.random), build errors logged, and its tracer when tracing.
 * @param abandoned true for a run whose lease was given back: built but not sent
 */
export function attemptDepsFor(
  deps: { clock: Clock; keyring: Keyring; deliver: Deliver; userAgent: string; random?: () => number; tracer?: DispatchTracer },
  logger: EngineLogger,
  abandoned?: (run: ClaimedRun) => boolean,
): AttemptDeps {
  return {
    clock: deps.clock,
    keyring: deps.keyring,
    deliver: deps.deliver,
    userAgent: deps.userAgent,
    random: deps.random ?? Math.random,
    abandoned,
    tracer: deps.tracer,
    onBuildError: (err, run) =>
      logger.error({ err, runId: run.runId, jobId: run.jobId, tenantId: run.tenantId }, 'could not build the callback request'),
  };
}

/** Counts an attempt in the metrics: runs fired and their fire lag (first attempts), attempts by outcome. */
export function recordAttemptMetrics(metrics: DispatchMetrics, run: ClaimedRun, outcome: AttemptOutcome): void {
  if (run.attempt === 1) {
    metrics.runsFired.inc();
    metrics.fireLag.observe(Math.max(0, outcome.startedAtMs - run.scheduledForMs) / 1000);
  }
  metrics.attempts.inc({ outcome: outcome.runStatus, error_class: outcome.errorClass ?? '' });
}
