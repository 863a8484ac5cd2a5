/**
 * The graphile-worker process of the benchmark: `run()` with one task, `bench_post`, that POSTs the job to the
 * receiver (peers/post.ts): to BENCH_CALLBACK_URL, or to the job's own `url` when it has one. BENCH_TUNED=1 applies
 * graphile-worker's documented performance options (GraphileConfig.WorkerOptions in
 * node_modules/graphile-worker/dist/index.d.ts; worker.graphile.org/docs/performance): concurrency 50,
 * `localQueue.size` 500, `completeJobBatchDelay` and `failJobBatchDelay` 0, `pollInterval` 500 ms (peers/tuning.ts);
 * otherwise everything is graphile-worker's default. Logging is at warning level for both, as Chime runs with
 * CHIME_LOG_LEVEL=warn (graphile-worker otherwise logs a line per completed job). Prints `ready` once running.
 *
 * Env: BENCH_DATABASE_URL, BENCH_CALLBACK_URL, BENCH_TUNED (1|0).
 */
import { Logger, run } from 'graphile-worker';
import { createPoster, type BenchPayload } from './post.ts';
import { GRAPHILE_TUNING } from './tuning.ts';
import { endProcess } from '../end-process.ts';

const url = process.env.BENCH_DATABASE_URL!;
const callbackUrl = process.env.BENCH_CALLBACK_URL!;
const tuned = process.env.BENCH_TUNED === '1';

/** The task identifier of every bench job. */
const GRAPHILE_TASK = 'bench_post';

const warnings = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.error(`graphile-worker ${level}: ${message}`);
});

const post = createPoster();
const runner = await run({
  connectionString: url,
  logger: warnings,
  noHandleSignals: true,
  taskList: {
    [GRAPHILE_TASK]: async (payload, helpers) => {
      const p = payload as BenchPayload;
      await post(p.url ?? callbackUrl, String(helpers.job.id), p);
    },
  },
  ...(tuned ? GRAPHILE_TUNING : {}),
});
console.log('ready');

process.once('SIGTERM', () => {
  void runner.stop().finally(() => endProcess(0));
});
