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
