/**
 * Workload 3, burst: 20,000 runs due within the same second against an idle, running worker: how long until the
 * burst is delivered and recorded, and the fire lags on the way.
 */
import { withSystem } from '../systems/index.ts';
import type { SystemSpec } from '../systems/types.ts';
import { callbacksPerSecond, deliveryResult } from './common.ts';
import type { WorkloadDeps } from './drain.ts';
import { scheduledDelivery } from './scheduled.ts';
import type { BenchResult } from './types.ts';

export async function burst(spec: SystemSpec, deps: WorkloadDeps): Promise<BenchResult[]> {
  const { n, minLeadMs } = deps.plan.burst;
  const offsets = Array.from({ length: n }, (_, i) => Math.floor((i * 1000) / n));
  const result = await withSystem(spec, deps.ctx, async (sys) => {
    const s = await scheduledDelivery(sys, deps, offsets, minLeadMs);
    const d = s.delivery;
    const lag = d.lags;
    return deliveryResult(
      sys,
      'burst',
      null,
      d,
      {
        burstDoneMs: d.doneAt === null ? null : d.doneAt - s.t0,
        callbacksPerSecond: callbacksPerSecond(d),
        lagP50Ms: lag.p50,
        lagP99Ms: lag.p99,
        lagMaxMs: lag.max,
        earlyFires: lag.early,
      },
      s.notes,
    );
  });
  return [result];
}
