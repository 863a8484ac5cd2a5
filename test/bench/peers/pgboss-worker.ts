/**
 * The pg-boss worker process of the benchmark: `work()` on the bench queue with a handler that POSTs each job to
 * the receiver (peers/post.ts): to BENCH_CALLBACK_URL, or to the job's own `url` when it has one. BENCH_TUNED=1
 * applies pg-boss's documented throughput options (WorkOptions in node_modules/pg-boss/dist/types.d.ts):
 * `batchSize` 100, `pollingIntervalSeconds` 0.5, `burstWhenBatchFull` (peers/tuning.ts); otherwise everything is
 * pg-boss's default. BENCH_SAME_WORK=1 (the `pgboss-samework` system, tuned) makes the handler do per callback what a
 * webhook scheduler built on pg-boss must do to match Chime's defaults (peers/same-work.ts): a Standard Webhooks
 * signature, an Ed25519 JWT over the body's hash, and after the response one INSERT of the attempt into
 * `bench_attempts` through pg-boss's own pool (`getDb().executeSql`); the attempt number is the job's `retryCount` + 1.
 * A batch whose callbacks all succeeded completes; otherwise, once every attempt of the batch is recorded, the
 * handler throws so pg-boss retries it, as the raw handler's failure does.
 * Prints `ready` once working; SIGTERM stops it gracefully.
 *
 * Env: BENCH_DATABASE_URL, BENCH_CALLBACK_URL, BENCH_QUEUE, BENCH_TUNED (1|0), BENCH_SAME_WORK (1|0).
 */
import { PgBoss } from 'pg-boss';
import { endProcess } from '../end-process.ts';
import { type BenchPayload, createPoster } from './post.ts';
import { createSameWork, type Execute } from './same-work.ts';
import { PGBOSS_TUNING } from './tuning.ts';

const url = process.env.BENCH_DATABASE_URL!;
const callbackUrl = process.env.BENCH_CALLBACK_URL!;
const queue = process.env.BENCH_QUEUE ?? 'bench';
const tuned = process.env.BENCH_TUNED === '1';

type Job = { id: string; retryCount: number; data: BenchPayload };

const boss = new PgBoss(url);
boss.on('error', (err) => console.error('pg-boss error:', err));
await boss.start();

/** The raw handler: POST every job of the batch. */
function postAll(): (jobs: Job[]) => Promise<void> {
  const post = createPoster();
  return async (jobs) => {
    await Promise.all(jobs.map((j) => post(j.data.url ?? callbackUrl, j.id, j.data)));
  };
}

/** The same-work handler: deliver and record every job of the batch, then fail the batch if one failed. */
function deliverAll(): (jobs: Job[]) => Promise<void> {
  const db = boss.getDb();
  const execute: Execute = (text, values) => db.executeSql(text, values);
  const deliver = createSameWork();
  return async (jobs) => {
    const outcomes = await Promise.allSettled(jobs.map((j) => deliver(j.data.url ?? callbackUrl, j.id, j.retryCount + 1, j.data, execute)));
    const failed = outcomes.find((o) => o.status === 'rejected');
    if (failed) throw failed.reason;
  };
}

const handler = process.env.BENCH_SAME_WORK === '1' ? deliverAll() : postAll();
if (tuned) await boss.work<BenchPayload>(queue, PGBOSS_TUNING, handler);
else await boss.work<BenchPayload>(queue, handler);
console.log('ready');

process.once('SIGTERM', () => {
  void boss.stop({ graceful: true, timeout: 10_000 }).finally(() => endProcess(0));
});
