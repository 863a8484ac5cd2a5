/**
 * The body of the steady and burst workloads: runs registered ahead of time while the worker is up and idle,
 * falling due at known future times; fire lag = receive time − scheduled time, from the receiver.
 *
 * The lead (first due time − now) must cover the registration, so that registering does not load the system
 * while runs fire: it is sized from a calibration batch (far-future runs, outside every count) as 1.5 × the
 * expected registration time + 1 s, at least `minLeadMs`. A registration that still overruns is noted in the
 * result, since its lags are then not clean.
 */
import { BATCH_SIZE, type BenchSystem, FUTURE_OFFSET_MS } from '../systems/types.ts';
import { baselineOf, type Delivery, watchDelivery } from './common.ts';
import type { WorkloadDeps } from './drain.ts';
import { capFor } from './plan.ts';

/** Longest lead allowed, in ms. */
const MAX_LEAD_MS = 180_000;

export type Scheduled = { delivery: Delivery; t0: number; lastDue: number; enqueueJobsPerSecond: number; notes: string[] };

/**
 * Starts the worker, registers runs due at `t0 + offsetsMs[i]` and watches them until all are recorded or the
 * cap passes after the last due time.
 * @param offsetsMs ascending offsets from the first due time, in ms
 */
export async function scheduledDelivery(
  sys: BenchSystem,
  deps: WorkloadDeps,
  offsetsMs: readonly number[],
  minLeadMs: number,
): Promise<Scheduled> {
  const { receiver, ctx } = deps;
  const n = offsetsMs.length;
  const notes: string[] = [];
  await receiver.reset(0);
  await sys.startWorker((pid) => receiver.watch([pid]));
  const calibration = await sys.enqueue(new Array<number>(Math.min(BATCH_SIZE, n)).fill(Date.now() + FUTURE_OFFSET_MS));
  const lead = Math.min(MAX_LEAD_MS, Math.max(minLeadMs, (1.5 * n * 1000) / calibration.jobsPerSecond + 1000));
  const t0 = Date.now() + lead;
  const due = offsetsMs.map((o) => t0 + o);
  const enqueue = await sys.enqueue(due);
  const late = Date.now() - t0;
  if (late > 0) notes.push(`registration ended ${late} ms after the first run was due: lags include registration load`);
  ctx.log(
    `  ${sys.spec.id}: registered ${n.toLocaleString('en')} runs at ${Math.round(enqueue.jobsPerSecond).toLocaleString('en')}/s; first due in ${Math.max(0, -late)} ms`,
  );
  const before = await baselineOf(sys, ctx.databases);
  const lastDue = due[n - 1]!;
  const delivery = await watchDelivery(sys, receiver, {
    n,
    deadline: lastDue + capFor(deps.plan, sys.spec),
    before,
    databases: ctx.databases,
    log: ctx.log,
  });
  return { delivery, t0, lastDue, enqueueJobsPerSecond: enqueue.jobsPerSecond, notes };
}
