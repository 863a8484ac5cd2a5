/**
 * The pg-boss same-work worker of the benchmark: the tuned pg-boss worker (peers/pgboss-worker.ts with BENCH_TUNED=1:
 * the same `work()` options, peers/tuning.ts) whose handler does per callback what a webhook scheduler built on
 * pg-boss must do to match Chime's defaults (peers/same-work.ts): a Standard Webhooks signature, an Ed25519 JWT over
 * the body's hash, and after the response one INSERT of the attempt into `bench_attempts`, through pg-boss's own pool
 * (`getDb().executeSql`). The attempt number is the job's `retryCount` + 1. A batch whose callbacks all succeeded
 * completes; otherwise, once every attempt of the batch is recorded, the handler throws so pg-boss retries it, as the
 * raw worker's handler does. Prints `ready` once working; SIGTERM stops it gracefully.
 *
 * Env: BENCH_DATABASE_URL, BENCH_CALLBACK_URL, BENCH_QUEUE.
 */
import { PgBoss } from 'pg-boss';
import type { BenchPayload } from './post.ts';
import { createSameWork, type Execute } from './same-work.ts';
import { PGBOSS_TUNING } from './tuning.ts';
import { endProcess } from '../end-process.ts';

const url = process.env.BENCH_DATABASE_URL!;
const callbackUrl = process.env.BENCH_CALLBACK_URL!;
const queue = process.env.BENCH_QUEUE ?? 'bench';

const boss = new PgBoss(url);
boss.on('error', (err) => console.error('pg-boss error:', err));
await boss.start();
const db = boss.getDb();
const execute: Execute = (text, values) => db.executeSql(text, values);
const deliver = createSameWork();
await boss.work<BenchPayload>(queue, PGBOSS_TUNING, async (jobs) => {
  const outcomes = await Promise.allSettled(jobs.map((j) => deliver(j.data.url ?? callbackUrl, j.id, j.retryCount + 1, j.data, execute)));
  const failed = outcomes.find((o) => o.status === 'rejected');
  if (failed) throw failed.reason;
});
console.log('ready');

process.once('SIGTERM', () => {
  void boss.stop({ graceful: true, timeout: 10_000 }).finally(() => endProcess(0));
});
