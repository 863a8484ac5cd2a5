/**
 * The peers' documented tuning, shared by the tuned workers (peers/pgboss-worker.ts, peers/graphile-worker.ts with
 * BENCH_TUNED=1), also when they do the same work as Chime (BENCH_SAME_WORK=1).
 */
import type { RunnerOptions } from 'graphile-worker';
import type { WorkOptions } from 'pg-boss';

/**
 * pg-boss's documented throughput tuning for a busy queue (WorkOptions in node_modules/pg-boss/dist/types.d.ts):
 * `batchSize` 100, `pollingIntervalSeconds` 0.5, `burstWhenBatchFull`.
 */
export const PGBOSS_TUNING: WorkOptions = { batchSize: 100, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true };

/**
 * graphile-worker's documented tuning for high throughput (GraphileConfig.WorkerOptions in
 * node_modules/graphile-worker/dist/index.d.ts; worker.graphile.org/docs/performance): concurrency 50,
 * `localQueue.size` 500, `completeJobBatchDelay` and `failJobBatchDelay` 0, `pollInterval` 500 ms.
 */
export const GRAPHILE_TUNING: Partial<RunnerOptions> = {
  concurrency: 50,
  pollInterval: 500,
  preset: { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
};

/**
 * `graphile-punctual`'s `pollInterval`, in ms: graphile-worker tuned (GRAPHILE_TUNING) polling this often. Meant as the
 * longest interval giving a steady-state fire lag p99 ≤ 10 ms at 500 runs/s; on the bench machine none did (2–10 ms
 * all gave 20–28 ms), so it is the cheapest interval reaching that same lag (test/bench/README.md, "WAL and statements
 * per callback, and a punctual peer", has the search). BENCH_PUNCTUAL_POLL_MS replaces it, for that search.
 */
export const GRAPHILE_PUNCTUAL_POLL_MS = punctualPollMs(process.env.BENCH_PUNCTUAL_POLL_MS);

/** BENCH_PUNCTUAL_POLL_MS as ms (10 when unset). @throws Error naming the variable for anything but a whole number ≥ 1 */
function punctualPollMs(value: string | undefined): number {
  if (value === undefined || value === '') return 10;
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms < 1) throw new Error(`BENCH_PUNCTUAL_POLL_MS: a whole number of ms ≥ 1, not "${value}"`);
  return ms;
}
