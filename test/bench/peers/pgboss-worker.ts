/**
 * The pg-boss worker process of the benchmark: `work()` on the bench queue with a handler that POSTs each job to
 * the receiver (peers/post.ts): to BENCH_CALLBACK_URL, or to the job's own `url` when it has one. BENCH_TUNED=1
 * applies pg-boss's documented throughput options (WorkOptions in node_modules/pg-boss/dist/types.d.ts):
 * `batchSize` 100, `pollingIntervalSeconds` 0.5, `burstWhenBatchFull` (peers/tuning.ts); otherwise everything is
 * pg-boss's default.
 * Prints `ready` once working; SIGTERM stops it gracefully.
 *
 * Env: BENCH_DATABASE_URL, BENCH_CALLBACK_URL, BENCH_QUEUE, BENCH_TUNED (1|0).
 */
import { PgBoss } from 'pg-boss';
import { createPoster, type BenchPayload } from './post.ts';
import { PGBOSS_TUNING } from './tuning.ts';
import { endProcess } from '../end-process.ts';

const url = process.env.BENCH_DATABASE_URL!;
const callbackUrl = process.env.BENCH_CALLBACK_URL!;
const queue = process.env.BENCH_QUEUE ?? 'bench';
const tuned = process.env.BENCH_TUNED === '1';

const post = createPoster();
const boss = new PgBoss(url);
boss.on('error', (err) => console.error('pg-boss error:', err));
await boss.start();
const handler = async (jobs: { id: string; data: BenchPayload }[]) => {
  await Promise.all(jobs.map((j) => post(j.data.url ?? callbackUrl, j.id, j.data)));
};
if (tuned) await boss.work<BenchPayload>(queue, PGBOSS_TUNING, handler);
else await boss.work<BenchPayload>(queue, handler);
console.log('ready');

process.once('SIGTERM', () => {
  void boss.stop({ graceful: true, timeout: 10_000 }).finally(() => endProcess(0));
});
