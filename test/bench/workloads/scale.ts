/**
 * Workload 5, scale: the drain again with 0, 1 M and 10 M runs due years from now already in the table (added
 * straight in SQL with generate_series, before the due runs, as a table of long-lived schedules would be), to see
 * whether claiming slows down as the table grows.
 */
import { withSystem } from '../systems/index.ts';
import type { SystemSpec } from '../systems/types.ts';
import { callbacksPerSecond, deliveryResult } from './common.ts';
import { backlogDrain, type WorkloadDeps } from './drain.ts';
import { capFor } from './plan.ts';
import type { BenchResult } from './types.ts';

/** `1000000` → `1 M future`. */
export function scaleVariant(level: number): string {
  const s = level >= 1_000_000 ? `${level / 1_000_000} M` : level >= 1000 ? `${level / 1000} k` : String(level);
  return `${s} future`;
}

export async function scale(spec: SystemSpec, deps: WorkloadDeps): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  for (const level of deps.plan.scale.levels) {
    const result = await withSystem(spec, deps.ctx, async (sys) => {
      const started = Date.now();
      await sys.addFutureRows(level);
      const insertSeconds = (Date.now() - started) / 1000;
      if (level > 0) deps.ctx.log(`  ${spec.id}: ${level.toLocaleString('en')} future runs added in ${insertSeconds.toFixed(1)} s`);
      const { delivery: d } = await backlogDrain(sys, deps, { n: deps.plan.scale.n, delayMs: 0, capMs: capFor(deps.plan, spec) });
      return deliveryResult(sys, 'scale', scaleVariant(level), d, {
        callbacksPerSecond: callbacksPerSecond(d),
        futureRowsSeconds: level > 0 ? insertSeconds : null,
      });
    });
    out.push(result);
  }
  return out;
}
