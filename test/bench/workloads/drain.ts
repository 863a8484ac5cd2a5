/**
 * Workload 1, drain: `n` runs already due when the worker starts (registered with it stopped); callbacks per
 * second until all are delivered and recorded. `backlogDrain` is also the body of the scale and slow workloads.
 */
import type { BenchReceiver } from '../receiver.ts';
import { withSystem } from '../systems/index.ts';
import type { BenchContext, BenchSystem, EnqueueResult, SystemSpec } from '../systems/types.ts';
import { baselineOf, callbacksPerSecond, type Delivery, deliveryResult, watchDelivery } from './common.ts';
import { capFor, type Plan } from './plan.ts';
import type { BenchResult } from './types.ts';

export type WorkloadDeps = { ctx: BenchContext; receiver: BenchReceiver; plan: Plan };

/**
 * Registers `n` runs due now with the worker stopped, starts the worker and watches until all are delivered and
 * recorded or `capMs` after the worker was spawned.
 * @param delayMs how long the receiver takes to answer each callback
 */
export async function backlogDrain(
  sys: BenchSystem,
  deps: WorkloadDeps,
  o: { n: number; delayMs: number; capMs: number },
): Promise<{ delivery: Delivery; enqueue: EnqueueResult; spawnedAt: number }> {
  await deps.receiver.reset(o.delayMs);
  const now = Date.now();
  const enqueue = await sys.enqueue(new Array<number>(o.n).fill(now));
  deps.ctx.log(
    `  ${sys.spec.id}: registered ${o.n.toLocaleString('en')} runs at ${Math.round(enqueue.jobsPerSecond).toLocaleString('en')}/s`,
  );
  const before = await baselineOf(sys, deps.ctx.databases);
  const spawnedAt = Date.now();
  await sys.startWorker((pid) => deps.receiver.watch([pid]));
  const delivery = await watchDelivery(sys, deps.receiver, {
    n: o.n,
    deadline: spawnedAt + o.capMs,
    before,
    databases: deps.ctx.databases,
    log: deps.ctx.log,
  });
  return { delivery, enqueue, spawnedAt };
}

export async function drain(spec: SystemSpec, deps: WorkloadDeps): Promise<BenchResult[]> {
  const n = deps.plan.drainN[spec.id] ?? deps.plan.drain.n;
  const result = await withSystem(spec, deps.ctx, async (sys) => {
    const { delivery: d, enqueue, spawnedAt } = await backlogDrain(sys, deps, { n, delayMs: 0, capMs: capFor(deps.plan, spec) });
    return deliveryResult(sys, 'drain', null, d, {
      callbacksPerSecond: callbacksPerSecond(d),
      firstCallbackMs: d.stats.firstAt === null ? null : d.stats.firstAt - spawnedAt,
      enqueueJobsPerSecond: enqueue.jobsPerSecond,
    });
  });
  return [result];
}
