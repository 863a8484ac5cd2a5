/**
 * Workload 2, steady: 500 runs/s falling due for 60 s, evenly spaced, against an idle, running worker: fire lag
 * p50/p99/p99.9/max and early fires (callbacks before their scheduled time: must be 0).
 */
import { withSystem } from '../systems/index.ts';
import type { SystemSpec } from '../systems/types.ts';
import { deliveryResult } from './common.ts';
import type { WorkloadDeps } from './drain.ts';
import { scheduledDelivery } from './scheduled.ts';
import type { BenchResult } from './types.ts';

export async function steady(spec: SystemSpec, deps: WorkloadDeps): Promise<BenchResult[]> {
  const { ratePerSecond, durationS, minLeadMs } = deps.plan.steady;
  const n = ratePerSecond * durationS;
  const offsets = Array.from({ length: n }, (_, i) => Math.floor((i * 1000) / ratePerSecond));
  const result = await withSystem(spec, deps.ctx, async (sys) => {
    const s = await scheduledDelivery(sys, deps, offsets, minLeadMs);
    const lag = s.delivery.lags;
    return deliveryResult(
      sys,
      'steady',
      null,
      s.delivery,
      {
        lagP50Ms: lag.p50,
        lagP99Ms: lag.p99,
        lagP999Ms: lag.p999,
        lagMaxMs: lag.max,
        earlyFires: lag.early,
        enqueueJobsPerSecond: s.enqueueJobsPerSecond,
      },
      s.notes,
    );
  });
  return [result];
}
