/**
 * The database's share of a drain, alone: `--runs` once-jobs with their runs due now (added in SQL with
 * generate_series, as the scale workload adds future runs), drained by the real dispatcher (`createDispatcher`) in
 * this process, with a delivery that answers 200 at once and a keyring that signs with fixed material. No HTTP and
 * no Ed25519 in the way, so what it reports is the hot path's SQL: claims, finishes, the job updates and the attempt
 * log. Each PostgreSQL client backend's CPU comes from /proc (utime + stime, Linux), as in the full benchmark.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:db -- --runs 50000 --repeat 3 [--deliver-ms 5]
 *
 * Prints, per repetition and as the median: runs/s, PostgreSQL CPU s per 1,000 runs, this process's CPU s per
 * 1,000 runs. A change to the schema or the queue statements shows here within a few seconds, where the full drain
 * mixes it with the receiver's, undici's and the signatures' CPU on the same cores.
 */
import { parseArgs } from 'node:util';
import pino from 'pino';
import { systemClock } from '../../src/domain/clock.ts';
import { createDispatcher } from '../../src/dispatch/drivers/node-dispatcher.ts';
import type { Keyring } from '../../src/dispatch/keyring.ts';
import { migratePostgresUrl } from '../../src/store/migrate.ts';
import { openPostgres } from '../../src/store/postgres.ts';
import { clientBackendPids, cloneRows, connect, DatabaseFactory, type Sql } from './db.ts';
import { cpuDelta, cpuSecondsOf } from './proc-stats.ts';
import { percentile } from './stats.ts';

const TENANT = '00000000-0000-7000-8000-000000000001';
const TEMPLATE_JOB = '00000000-0000-7000-8000-000000000002';
/** How often the backends' CPU is read while the drain runs, in ms (a backend's last reading counts). */
const SAMPLE_MS = 200;
/** Longest a drain may take, in ms. */
const CAP_MS = 120_000;

/** Signs with fixed material: the signatures' cost is not what this measures. */
const stubKeyring: Keyring = {
  secretsFor: async () => [`whsec_${Buffer.alloc(32, 1).toString('base64')}`],
  jwtSigner: async () => ({ kid: 'bench', sign: async () => 'e30.e30.sig' }),
  openAuthToken: async (sealed) => sealed,
};

type Figures = { runsPerSecond: number; pgCpuPer1k: number; dispatcherCpuPer1k: number };

/** Adds `n` once-jobs, each with its run due now, to the database of `sql`. */
async function addDueRuns(sql: Sql, n: number): Promise<void> {
  // Due now, and their schedule says so: a claim then completes each job rather than plan a next occurrence.
  const at = new Date().toISOString();
  const schedule = { type: 'once', at };
  await sql`insert into tenants (shard, id, name, created_at) values (chime_shard_of(${TENANT}::uuid), ${TENANT}, 'bench', now())`;
  await sql`insert into jobs (shard, id, tenant_id, status, schedule, callback, retry, delivery_mode, overlap_policy, catch_up,
                              jitter_ms, metadata, next_run_at, created_at, updated_at)
            values (chime_shard_of(${TENANT}::uuid), ${TEMPLATE_JOB}, ${TENANT}, 'active', ${sql.json(schedule)},
                    '{"url":"http://127.0.0.1:9/db-drain","method":"POST","headers":{},"timeoutMs":10000,"successStatusCodes":["2xx"]}',
                    '{"strategy":"none"}', 'at-least-once', 'allow', 'latest', 0, '{}', ${at}, now(), now())`;
  await sql`insert into runs (shard, id, tenant_id, job_id, scheduled_for, trigger, status, next_attempt_at, created_at)
            values (chime_shard_of(${TENANT}::uuid), ${TEMPLATE_JOB}, ${TENANT}, ${TEMPLATE_JOB}, ${at}, 'schedule', 'canceled', null, now())`;
  await cloneRows(sql, { schema: 'public', name: 'jobs' }, `t.id = '${TEMPLATE_JOB}'`, { id: `md5('j' || g)::uuid` }, 1, n);
  await cloneRows(sql, { schema: 'public', name: 'runs' }, `t.id = '${TEMPLATE_JOB}'`, {
    id: `md5('r' || g)::uuid`,
    job_id: `md5('j' || g)::uuid`,
    status: `'scheduled'`,
    next_attempt_at: 't.scheduled_for',
  }, 1, n);
  await sql.unsafe('vacuum analyze jobs, runs');
}

/**
 * @param deliverMs how long each delivery takes (0: answers at once); with the per-destination limit (16, one
 *   destination here) it sets the pace, and so the sizes of claims and finishes, as a receiver's latency would
 */
async function drainOnce(factory: DatabaseFactory, n: number, deliverMs: number): Promise<Figures> {
  const { name, url } = await factory.create('dbdrain');
  await migratePostgresUrl(url);
  const sql = connect(url);
  await addDueRuns(sql, n);
  const database = openPostgres(url, { max: 20 });
  const dispatcher = createDispatcher({
    database,
    clock: systemClock,
    logger: pino({ level: 'warn' }),
    deliver: async () => {
      if (deliverMs > 0) await new Promise((r) => setTimeout(r, deliverMs));
      return { kind: 'response', status: 200, retryAfterMs: null, bodyExcerpt: '' };
    },
    keyring: stubKeyring,
    userAgent: 'chime-db-drain',
  });
  // The dispatcher's backends are all opened by this drain, so each one's whole CPU counts (its last reading).
  const last: Record<number, number> = {};
  const sample = async () => Object.assign(last, cpuSecondsOf(await clientBackendPids(sql)));
  const cpu0 = process.cpuUsage();
  const started = Date.now();
  await dispatcher.start();
  let left = n;
  while (left > 0 && Date.now() - started < CAP_MS) {
    await new Promise((r) => setTimeout(r, SAMPLE_MS));
    await sample();
    const [row] = await sql<{ left: number }[]>`select count(*)::int as left from runs where status <> 'succeeded' and id <> ${TEMPLATE_JOB}`;
    left = row!.left;
  }
  const seconds = (Date.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await dispatcher.stop();
  await database.close();
  await sql.end();
  await factory.drop(name);
  if (left > 0) throw new Error(`${left} of ${n} runs not drained within ${CAP_MS} ms`);
  return {
    runsPerSecond: n / seconds,
    pgCpuPer1k: (cpuDelta({}, last) / n) * 1000,
    dispatcherCpuPer1k: ((cpu.user + cpu.system) / 1e6 / n) * 1000,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '50000' },
      repeat: { type: 'string', default: '3' },
      'deliver-ms': { type: 'string', default: '0' },
      quick: { type: 'boolean', default: false },
    },
  });
  // CI: small, once; a drain that does not finish throws (exit 1).
  if (values.quick) Object.assign(values, { runs: '1000', repeat: '1' });
  const adminUrl = process.env.DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  if (!adminUrl) throw new Error('set DATABASE_URL (or TEST_DATABASE_URL) to a PostgreSQL where databases may be created');
  const n = Number(values.runs);
  const repeat = Number(values.repeat);
  const deliverMs = Number(values['deliver-ms']);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--runs: a whole number of runs ≥ 1, not "${values.runs}"`);
  if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat: a whole number ≥ 1, not "${values.repeat}"`);
  if (!(deliverMs >= 0)) throw new Error(`--deliver-ms: milliseconds ≥ 0, not "${values['deliver-ms']}"`);
  const factory = new DatabaseFactory(adminUrl);
  const all: Figures[] = [];
  try {
    await factory.dropStale();
    for (let i = 0; i < repeat; i++) {
      const f = await drainOnce(factory, n, deliverMs);
      all.push(f);
      console.log(`db-drain ${i + 1}: ${fmt(f)}`);
    }
  } finally {
    await factory.close();
  }
  const median = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 0.5);
  const med: Figures = {
    runsPerSecond: median(all.map((f) => f.runsPerSecond)),
    pgCpuPer1k: median(all.map((f) => f.pgCpuPer1k)),
    dispatcherCpuPer1k: median(all.map((f) => f.dispatcherCpuPer1k)),
  };
  console.log(`db-drain median of ${all.length} × ${n.toLocaleString('en')} runs: ${fmt(med)}`);
}

const fmt = (f: Figures) =>
  `${Math.round(f.runsPerSecond).toLocaleString('en')} runs/s, PostgreSQL ${f.pgCpuPer1k.toFixed(3)} CPU s per 1,000 runs, dispatcher ${f.dispatcherCpuPer1k.toFixed(3)}`;

await main();
