/**
 * The graphile-worker process of the benchmark: `run()` with one task, `bench_post`, that POSTs the job to the
 * receiver (peers/post.ts): to BENCH_CALLBACK_URL, or to the job's own `url` when it has one. BENCH_TUNED=1 applies
 * graphile-worker's documented performance options (GraphileConfig.WorkerOptions in
 * node_modules/graphile-worker/dist/index.d.ts; worker.graphile.org/docs/performance): concurrency 50,
 * `localQueue.size` 500, `completeJobBatchDelay` and `failJobBatchDelay` 0, `pollInterval` 500 ms (peers/tuning.ts);
 * otherwise everything is graphile-worker's default. BENCH_SAME_WORK=1 (the `graphile-samework` system, tuned) makes
 * the task do per callback what a webhook scheduler built on graphile-worker must do to match Chime's defaults
 * (peers/same-work.ts): a Standard Webhooks signature, an Ed25519 JWT over the body's hash, and after the response one
 * INSERT of the attempt into `bench_attempts` through graphile-worker's own pool (`helpers.query`); the attempt number
 * is the job's `attempts` (counted when the job is taken), and a failed callback is recorded, then thrown, so
 * graphile-worker retries it. Logging is at warning level, as Chime runs with CHIME_LOG_LEVEL=warn (graphile-worker
 * otherwise logs a line per completed job). Prints `ready` once running.
 *
 * BENCH_POLL_INTERVAL_MS (the `graphile-punctual` system) replaces the tuned `pollInterval`.
 *
 * Env: BENCH_DATABASE_URL, BENCH_CALLBACK_URL, BENCH_TUNED (1|0), BENCH_SAME_WORK (1|0), BENCH_POLL_INTERVAL_MS.
 */
import { Logger, run } from 'graphile-worker';
import { endProcess } from '../end-process.ts';
import { type BenchPayload, createPoster } from './post.ts';
import { createSameWork } from './same-work.ts';
import { GRAPHILE_TUNING } from './tuning.ts';

const url = process.env.BENCH_DATABASE_URL!;
const callbackUrl = process.env.BENCH_CALLBACK_URL!;
const tuned = process.env.BENCH_TUNED === '1';
const pollInterval = Number(process.env.BENCH_POLL_INTERVAL_MS) || undefined;

/** The task identifier of every bench job. */
const GRAPHILE_TASK = 'bench_post';

const warnings = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.error(`graphile-worker ${level}: ${message}`);
});

const deliver = process.env.BENCH_SAME_WORK === '1' ? createSameWork() : null;
const post = deliver ? null : createPoster();
const runner = await run({
  connectionString: url,
  logger: warnings,
  noHandleSignals: true,
  taskList: {
    [GRAPHILE_TASK]: async (payload, helpers) => {
      const p = payload as BenchPayload;
      const to = p.url ?? callbackUrl;
      if (deliver) await deliver(to, String(helpers.job.id), helpers.job.attempts, p, (text, values) => helpers.query(text, values));
      else await post!(to, String(helpers.job.id), p);
    },
  },
  ...(tuned ? GRAPHILE_TUNING : {}),
  ...(pollInterval ? { pollInterval } : {}),
});
console.log('ready');

process.once('SIGTERM', () => {
  void runner.stop().finally(() => endProcess(0));
});
