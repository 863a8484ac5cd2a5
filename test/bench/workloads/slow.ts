/**
 * Workload 6, slow receiver: a drain against a receiver that answers each callback after 200 ms, so throughput
 * is held by how many callbacks the system keeps in flight (Chime: 16 per destination by default; the peers'
 * HTTP client has the same 16 connections per destination).
 */
import { withSystem } from '../systems/index.ts';
import type { SystemSpec } from '../systems/types.ts';
import { callbacksPerSecond, deliveryResult } from './common.ts';
import { backlogDrain, type WorkloadDeps } from './drain.ts';
import { capFor } from './plan.ts';
import type { BenchResult } from './types.ts';

export async function slow(spec: SystemSpec, deps: WorkloadDeps): Promise<BenchResult[]> {
  const { n, delayMs } = deps.plan.slow;
  const result = await withSystem(spec, deps.ctx, async (sys) => {
    const { delivery: d } = await backlogDrain(sys, deps, { n, delayMs, capMs: capFor(deps.plan, spec) });
    const rate = callbacksPerSecond(d);
    return deliveryResult(sys, 'slow', null, d, {
      callbacksPerSecond: rate,
      // Little's law: callbacks in flight on average = throughput × time per callback.
      meanInFlight: rate === null ? null : (rate * delayMs) / 1000,
    });
  });
  return [result];
}
