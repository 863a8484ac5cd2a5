/**
 * The graphile-worker same-work worker of the benchmark: the tuned graphile worker (peers/graphile-worker.ts with
 * BENCH_TUNED=1: the same runner options, peers/tuning.ts) whose `bench_post` task does per callback what a webhook
 * scheduler built on graphile-worker must do to match Chime's defaults (peers/same-work.ts): a Standard Webhooks
 * signature, an Ed25519 JWT over the body's hash, and after the response one INSERT of the attempt into
 * `bench_attempts`, through graphile-worker's own pool (`helpers.query`). The attempt number is the job's `attempts`
 * (graphile-worker counts the attempt when it takes the job). A failed callback is recorded, then thrown, so
 * graphile-worker retries it. Logging at warning level, as for the raw worker. Prints `ready` once running.
 *
 * Env: BENCH_DATABASE_URL, BENCH_CALLBACK_URL.
 */
import { Logger, run } from 'graphile-worker';
import type { BenchPayload } from './post.ts';
import { createSameWork, type Execute } from './same-work.ts';
import { GRAPHILE_TUNING } from './tuning.ts';
import { endProcess } from '../end-process.ts';

const url = process.env.BENCH_DATABASE_URL!;
const callbackUrl = process.env.BENCH_CALLBACK_URL!;

/** The task identifier of every bench job. */
const GRAPHILE_TASK = 'bench_post';

const warnings = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.error(`graphile-worker ${level}: ${message}`);
});

const deliver = createSameWork();
const runner = await run({
  connectionString: url,
  logger: warnings,
  noHandleSignals: true,
  taskList: {
    [GRAPHILE_TASK]: async (payload, helpers) => {
      const p = payload as BenchPayload;
      const execute: Execute = (text, values) => helpers.query(text, values);
      await deliver(p.url ?? callbackUrl, String(helpers.job.id), helpers.job.attempts, p, execute);
    },
  },
  ...GRAPHILE_TUNING,
});
console.log('ready');

process.once('SIGTERM', () => {
  void runner.stop().finally(() => endProcess(0));
});
