/**
 * The database's share of a drain, alone: `--runs` once-jobs with their runs due now (added in SQL with
 * generate_series, as the scale workload adds future runs), drained by the real dispatcher (`createDispatcher`) in
 * this process, with a delivery that answers 200 at once and a keyring that signs with fixed material. No HTTP and
 * no Ed25519 in the way, so what it reports is the hot path's SQL: claims, finishes, the job updates and the attempt
 * log. Each PostgreSQL client backend's CPU comes from /proc (utime + stime, Linux), as in the full benchmark.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:db -- --runs 50000 --repeat 3 [--deliver-ms 5]
 *   … npm run bench:db -- --runs 15000 --steady 500     # the runs fall due at 500/s instead of all at once
 *   … npm run bench:db -- --by-statement                 # also how many times each statement (its first words) was sent
 *
 * Prints, per repetition and as the median: runs/s, PostgreSQL CPU s per 1,000 runs, this process's CPU s per
 * 1,000 runs, the transactions committed and statements sent per 1,000 runs (what steady traffic pays for), the WAL
 * bytes per run, and per run the rows inserted (+), updated (~, of them HOT) and deleted (-) in runs, jobs and attempts. A change to the schema or the queue statements shows here within a few seconds, where the full drain
 * mixes it with the receiver's, undici's and the signatures' CPU on the same cores.
 */
import { parseArgs } from 'node:util';
import pino from 'pino';
import { createDispatcher } from '../../src/dispatch/drivers/node-dispatcher.ts';
import type { Keyring } from '../../src/dispatch/keyring.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { migratePostgresUrl } from '../../src/store/migrate.ts';
import { openPostgres } from '../../src/store/postgres.ts';
import { benchAdminUrl, clientBackendPids, connect, DatabaseFactory } from './db.ts';
import { addDueRuns, TEMPLATE_JOB } from './db-fixtures.ts';
import { formatWrites, type TableWrites, tableWrites, walBytesSince, walPosition, writesPerRun } from './db-work.ts';
import { cpuDelta, cpuSecondsOf } from './proc-stats.ts';
import { percentile } from './stats.ts';

/** How often the backends' CPU is read while the drain runs, in ms (a backend's last reading counts). */
const SAMPLE_MS = 200;
/** With --steady: how long after the start of the drain the first run is due, in ms. */
const STEADY_LEAD_MS = 2_000;
/** Longest a drain may take, in ms. */
const CAP_MS = 120_000;

/** Signs with fixed material: the signatures' cost is not what this measures. */
const stubKeyring: Keyring = {
  secretsFor: async () => [`whsec_${Buffer.alloc(32, 1).toString('base64')}`],
  jwtSigner: async () => ({ kid: 'bench', sign: async () => 'e30.e30.sig' }),
  openAuthToken: async (sealed) => sealed,
};

type Figures = {
  runsPerSecond: number;
  pgCpuPer1k: number;
  dispatcherCpuPer1k: number;
  /** Transactions the database committed per 1,000 runs (pg_stat_database.xact_commit: a statement outside one counts). */
  commitsPer1k: number;
  /** Statements the dispatcher sent per 1,000 runs (drizzle's query log: BEGIN and COMMIT are not among them). */
  statementsPer1k: number;
  /** WAL the server wrote per run, in bytes (pg_current_wal_lsn() after and before; cluster-wide). */
  walBytesPerRun: number;
  /**
   * Row writes per run of the hot tables (pg_stat_user_tables: inserts, updates, of them HOT, deletes): a HOT update
   * changes no indexed column and writes no index entry.
   */
  tables: TableWrites;
};

/** The tables whose row writes db-drain reports. */
const HOT_PATH_TABLES = ['runs', 'jobs', 'open_jobs', 'attempts'];

/**
 * @param deliverMs how long each delivery takes (0: answers at once); with the per-destination limit (16, one
 *   destination here) it sets the pace, and so the sizes of claims and finishes, as a receiver's latency would
 */
async function drainOnce(
  factory: DatabaseFactory,
  n: number,
  deliverMs: number,
  rate: number | null,
  byStatement: boolean,
): Promise<Figures> {
  const { name, url } = await factory.create('dbdrain');
  await migratePostgresUrl(url);
  const sql = connect(url);
  await addDueRuns(sql, n, rate, STEADY_LEAD_MS);
  let statements = 0;
  const kinds = new Map<string, number>();
  const database = openPostgres(url, {
    max: 20,
    onStatement: (q) => {
      statements++;
      const head = q.replace(/\s+/g, ' ').slice(0, 60);
      kinds.set(head, (kinds.get(head) ?? 0) + 1);
    },
  });
  const commits = async () =>
    (await sql<{ n: string }[]>`select xact_commit::text as n from pg_stat_database where datname = current_database()`)[0]!.n;
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
  const commits0 = Number(await commits());
  const wal0 = await walPosition(sql);
  // A backend flushes its table counters at the end of a transaction at least a second after its last flush: the
  // loading's (this connection's) go in with the statement after the wait, before they are read.
  await new Promise((r) => setTimeout(r, 1_100));
  await sql`select 1`;
  const writes0 = await tableWrites(sql, HOT_PATH_TABLES);
  await dispatcher.start();
  let left = n;
  let samples = 0;
  while (left > 0 && Date.now() - started < CAP_MS) {
    await new Promise((r) => setTimeout(r, SAMPLE_MS));
    await sample();
    samples++;
    const [row] = await sql<
      { left: number }[]
    >`select count(*)::int as left from runs where status <> 'succeeded' and id <> ${TEMPLATE_JOB}`;
    left = row!.left;
  }
  const seconds = (Date.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await dispatcher.stop();
  if (byStatement) for (const [head, k] of [...kinds].sort((a, b) => b[1] - a[1])) console.log(`${String(k).padStart(7)}  ${head}`);
  await database.close();
  // A backend adds its commits to pg_stat_database at most once a second, and at its exit: read after the dispatcher's
  // connections closed and a second more. The sampling loop's own (a backend list and a count per sample) and the
  // first reading's are taken out; the dispatcher's stop (nothing left to give back here) adds none.
  await new Promise((r) => setTimeout(r, 1_100));
  const committed = Number(await commits()) - commits0 - 2 * samples - 1;
  const walBytes = await walBytesSince(sql, wal0);
  const tables = writesPerRun(writes0, await tableWrites(sql, HOT_PATH_TABLES), HOT_PATH_TABLES, n);
  await sql.end();
  await factory.drop(name);
  if (left > 0) throw new Error(`${left} of ${n} runs not drained within ${CAP_MS} ms`);
  return {
    runsPerSecond: n / seconds,
    pgCpuPer1k: (cpuDelta({}, last) / n) * 1000,
    dispatcherCpuPer1k: ((cpu.user + cpu.system) / 1e6 / n) * 1000,
    commitsPer1k: (committed / n) * 1000,
    statementsPer1k: (statements / n) * 1000,
    walBytesPerRun: walBytes / n,
    tables,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '50000' },
      repeat: { type: 'string', default: '3' },
      'deliver-ms': { type: 'string', default: '0' },
      quick: { type: 'boolean', default: false },
      steady: { type: 'string' },
      'by-statement': { type: 'boolean', default: false },
    },
  });
  // CI: small, once; a drain that does not finish throws (exit 1).
  if (values.quick) Object.assign(values, { runs: '1000', repeat: '1' });
  const adminUrl = benchAdminUrl();
  const n = Number(values.runs);
  const repeat = Number(values.repeat);
  const deliverMs = Number(values['deliver-ms']);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--runs: a whole number of runs ≥ 1, not "${values.runs}"`);
  if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat: a whole number ≥ 1, not "${values.repeat}"`);
  const rate = values.steady === undefined ? null : Number(values.steady);
  if (rate !== null && !(rate > 0)) throw new Error(`--steady: runs per second > 0, not "${values.steady}"`);
  if (!(deliverMs >= 0)) throw new Error(`--deliver-ms: milliseconds ≥ 0, not "${values['deliver-ms']}"`);
  const factory = new DatabaseFactory(adminUrl);
  const all: Figures[] = [];
  try {
    await factory.dropStale();
    for (let i = 0; i < repeat; i++) {
      const f = await drainOnce(factory, n, deliverMs, rate, values['by-statement']);
      all.push(f);
      console.log(`db-drain ${i + 1}: ${fmt(f)}`);
    }
  } finally {
    await factory.close();
  }
  const median = (xs: number[]) =>
    percentile(
      [...xs].sort((a, b) => a - b),
      0.5,
    );
  const med: Figures = {
    runsPerSecond: median(all.map((f) => f.runsPerSecond)),
    pgCpuPer1k: median(all.map((f) => f.pgCpuPer1k)),
    dispatcherCpuPer1k: median(all.map((f) => f.dispatcherCpuPer1k)),
    commitsPer1k: median(all.map((f) => f.commitsPer1k)),
    statementsPer1k: median(all.map((f) => f.statementsPer1k)),
    walBytesPerRun: median(all.map((f) => f.walBytesPerRun)),
    tables: all[all.length >> 1]!.tables,
  };
  console.log(`db-drain median of ${all.length} × ${n.toLocaleString('en')} runs: ${fmt(med)}`);
}

const fmt = (f: Figures) =>
  `${Math.round(f.runsPerSecond).toLocaleString('en')} runs/s, PostgreSQL ${f.pgCpuPer1k.toFixed(3)} CPU s per 1,000 runs, dispatcher ${f.dispatcherCpuPer1k.toFixed(3)}; per 1,000 runs ${Math.round(f.commitsPer1k)} transactions, ${Math.round(f.statementsPer1k)} statements; WAL ${Math.round(f.walBytesPerRun).toLocaleString('en')} bytes per run; per run ${formatWrites(f.tables)}`;

await main();
