/**
 * The drain on a Citus cluster beside the same drain on one PostgreSQL (issue #21, docs/scaling.md "Measured on
 * Citus"): `--runs` once-jobs of `--tenants` tenants, registered through a real API process and all due, are drained
 * by one real dispatcher process (`chime serve --role dispatcher`, signatures and attempt log as in production) into
 * the bench receiver. Per target it reports callbacks/s and CPU seconds per 1,000 callbacks of the dispatcher and of
 * each PostgreSQL server: the whole server (postmaster, live backends and the reaped ones, proc-stats.ts
 * `serverCpuSeconds`), so Citus's connections from the coordinator to the workers count too.
 *
 *   npm run bench:citus [-- --runs 20000 --tenants 16 --workers 2 --repeat 1 --postgres URL | --no-postgres]
 *                       [--citus-setting citus.max_adaptive_executor_pool_size=1 ...]
 *
 * Citus: a throwaway coordinator and `--workers` workers from ../shared/citus (test/support/citus.ts), on this
 * machine's cores like everything else. PostgreSQL: a fresh database on `--postgres` (default TEST_DATABASE_URL or
 * DATABASE_URL), whose server CPU includes whatever else runs there. Writes test/bench/results-citus.{json,md}.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { buildChime } from '../support/build.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { startCitusCluster } from '../support/citus.ts';
import { TEST_ENCRYPTION_KEY } from '../support/databases.ts';
import { connect, DatabaseFactory } from './db.ts';
import { endProcess } from './end-process.ts';
import { cpuSeconds, parentPid, serverCpuSeconds } from './proc-stats.ts';
import { type BenchReceiver, startBenchReceiver } from './receiver.ts';
import { chimeJobBody } from './systems/chime.ts';

const BATCH = 1_000;
/** Longest a drain may take, in ms. */
const CAP_MS = 300_000;
const OUT = new URL('./results-citus', import.meta.url).pathname;

/** One database server to measure: its URL for Chime and the postmaster pids whose CPU counts, by node name. */
type Target = { name: string; url: string; nodes: Record<string, number>; close(): Promise<void> };

/** A drain's figures: callbacks/s and CPU s per 1,000 callbacks per process or server (dispatcher, receiver, nodes). */
type Figures = { target: string; runs: number; callbacksPerSecond: number; cpuPer1k: Record<string, number> };

const log = (line: string) => process.stderr.write(`${line}\n`);

/**
 * @param settings `name=value` pairs set on the coordinator's database (`ALTER DATABASE … SET`), for the processes'
 *   sessions, e.g. `citus.max_adaptive_executor_pool_size=1`
 */
async function citusTarget(workers: number, settings: string[]): Promise<Target> {
  const cluster = await startCitusCluster(workers);
  const sql = connect(cluster.url);
  for (const s of settings) {
    const [name, value] = s.split('=') as [string, string];
    if (!/^[a-z_.]+$/.test(name) || value === undefined) throw new Error(`--citus-setting ${s}: name=value`);
    await sql.unsafe(`alter database postgres set ${name} = '${value.replaceAll("'", "''")}'`);
  }
  await sql.end();
  const nodes: Record<string, number> = { coordinator: await cluster.postmasterPid(cluster.coordinatorPort) };
  for (const [i, port] of cluster.workerPorts.entries()) nodes[`worker ${i + 1}`] = await cluster.postmasterPid(port);
  const label = `Citus (coordinator + ${workers} workers${settings.length ? `; ${settings.join(', ')}` : ''})`;
  return { name: label, url: cluster.url, nodes, close: () => cluster.stop() };
}

async function postgresTarget(adminUrl: string): Promise<Target> {
  const databases = new DatabaseFactory(adminUrl);
  const db = await databases.create('citus_compare');
  // The postmaster is the parent of this connection's backend (same machine).
  const sql = connect(db.url);
  const [row] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
  const ppid = parentPid(row!.pid);
  await sql.end();
  if (ppid === null) throw new Error('the PostgreSQL server is not on this machine: its CPU cannot be read');
  return {
    name: 'PostgreSQL (one server)',
    url: db.url,
    nodes: { postgres: ppid },
    close: async () => {
      await databases.drop(db.name);
      await databases.close();
    },
  };
}

/** Registers `runs` due-now jobs spread over `tenants`, through the API, two batches in flight. */
async function register(tenants: TestTenant[], runs: number, callbackUrl: string): Promise<void> {
  const batches: { tenant: TestTenant; jobs: object[] }[] = [];
  for (let from = 0; from < runs; from += BATCH) {
    const tenant = tenants[(from / BATCH) % tenants.length]!;
    const jobs = Array.from({ length: Math.min(BATCH, runs - from) }, (_, k) => chimeJobBody(callbackUrl, 0, from + k));
    batches.push({ tenant, jobs });
  }
  const send = async () => {
    for (let b = batches.shift(); b; b = batches.shift()) {
      const res = await b.tenant.api.post('/v1/jobs/batch', { jobs: b.jobs });
      if (res.status !== 200 || res.body.results.some((r: { status: number }) => r.status !== 201)) {
        throw new Error(`registration refused: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
      }
    }
  };
  await Promise.all([send(), send()]);
}

async function drainOn(target: Target, receiver: BenchReceiver, o: { runs: number; tenants: number }): Promise<Figures> {
  const env = { DATABASE_URL: target.url, CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, CHIME_MIGRATE: 'true' };
  const api = await startChime(env, ['serve', '--role', 'api']);
  let dispatcher: ChimeProcess | null = null;
  const sql = postgres(target.url, { max: 1, onnotice: () => {} });
  try {
    const tenants = await Promise.all(Array.from({ length: o.tenants }, (_, i) => createTestTenant(api.url, `bench-${i}`)));
    const started = Date.now();
    await register(tenants, o.runs, `${receiver.url}/hook`);
    log(
      `  ${target.name}: registered ${o.runs.toLocaleString('en')} runs of ${o.tenants} tenants in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    await api.stop();
    await receiver.reset(0);

    const serversBefore = Object.fromEntries(Object.entries(target.nodes).map(([n, pid]) => [n, serverCpuSeconds(pid) ?? 0]));
    const receiverBefore = cpuSeconds(receiver.pid) ?? 0;
    dispatcher = await startChime(env, ['serve', '--role', 'dispatcher']);
    await receiver.watch([dispatcher.child.pid!]);
    const deadline = Date.now() + CAP_MS;
    let doneAt = 0;
    for (;;) {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from runs where status = 'succeeded'`;
      if (row!.n >= o.runs) {
        doneAt = Date.now();
        break;
      }
      if (Date.now() > deadline) throw new Error(`${target.name}: ${row!.n} of ${o.runs} runs recorded after ${CAP_MS} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const stats = await receiver.stats();
    const per1k = (seconds: number) => Math.round((seconds / o.runs) * 1000 * 1000) / 1000;
    const dispatcherPid = dispatcher.child.pid!;
    const cpuPer1k: Record<string, number> = {
      dispatcher: per1k((cpuSeconds(dispatcherPid) ?? 0) - (stats.cpuAtFirst?.[dispatcherPid] ?? 0)),
      receiver: per1k((cpuSeconds(receiver.pid) ?? 0) - receiverBefore),
    };
    for (const [n, pid] of Object.entries(target.nodes)) cpuPer1k[n] = per1k((serverCpuSeconds(pid) ?? 0) - serversBefore[n]!);
    if (stats.unique < o.runs) throw new Error(`${target.name}: the receiver saw ${stats.unique} of ${o.runs} callbacks`);
    const seconds = (doneAt - stats.firstAt!) / 1000;
    return { target: target.name, runs: o.runs, callbacksPerSecond: Math.round(o.runs / seconds), cpuPer1k };
  } finally {
    await dispatcher?.stop().catch(() => {});
    await api.stop().catch(() => {});
    await sql.end();
  }
}

function markdown(results: Figures[], machine: string): string {
  const columns = [...new Set(results.flatMap((r) => Object.keys(r.cpuPer1k)))];
  const lines = [
    `Drain of due once-jobs by one dispatcher process (${machine}); CPU s per 1,000 callbacks.`,
    '',
    `| target | runs | callbacks/s | ${columns.join(' | ')} |`,
    `| --- | ---: | ---: | ${columns.map(() => '---:').join(' | ')} |`,
    ...results.map(
      (r) =>
        `| ${r.target} | ${r.runs.toLocaleString('en')} | ${r.callbacksPerSecond.toLocaleString('en')} | ${columns.map((c) => r.cpuPer1k[c] ?? '').join(' | ')} |`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '20000' },
      tenants: { type: 'string', default: '16' },
      workers: { type: 'string', default: '2' },
      repeat: { type: 'string', default: '1' },
      postgres: { type: 'string' },
      'no-postgres': { type: 'boolean', default: false },
      'citus-setting': { type: 'string', multiple: true, default: [] },
    },
  });
  const o = { runs: Number(values.runs), tenants: Number(values.tenants) };
  const adminUrl = values.postgres ?? process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  if (!Number.isInteger(o.runs) || o.runs < 1 || !Number.isInteger(o.tenants) || o.tenants < 1)
    throw new Error('--runs and --tenants: positive integers');
  buildChime();
  const receiver = await startBenchReceiver();
  const results: Figures[] = [];
  try {
    for (let i = 0; i < Number(values.repeat); i++) {
      const targets: (() => Promise<Target>)[] = [() => citusTarget(Number(values.workers), values['citus-setting'])];
      if (!values['no-postgres'] && adminUrl) targets.push(() => postgresTarget(adminUrl));
      for (const make of targets) {
        const target = await make();
        try {
          log(`drain on ${target.name}`);
          const f = await drainOn(target, receiver, o);
          log(`  ${f.callbacksPerSecond.toLocaleString('en')} callbacks/s; CPU s per 1,000: ${JSON.stringify(f.cpuPer1k)}`);
          results.push(f);
        } finally {
          await target.close();
        }
      }
    }
  } finally {
    await receiver.close();
  }
  const os = await import('node:os');
  const machine = `${os.cpus().length} vCPU ${os.cpus()[0]?.model.trim()}, Node ${process.version}, every server on this machine`;
  const md = markdown(results, machine);
  process.stdout.write(md);
  writeFileSync(`${OUT}.md`, md);
  writeFileSync(`${OUT}.json`, `${JSON.stringify({ generatedAt: new Date().toISOString(), machine, results }, null, 2)}\n`);
}

main().then(
  () => endProcess(0),
  (err) => {
    log(`bench:citus: ${(err as Error).stack ?? String(err)}`);
    endProcess(1);
  },
);
