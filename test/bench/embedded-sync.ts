/**
 * `tsx test/bench/embedded-sync.ts [--rounds 3] [--singles 300] [--batches 10] [--drain 3000] [--commits 500]`: what syncing each
 * commit to disk costs the embedded database (CHIME_EMBEDDED_SYNC, issue #30 point 1). Each round runs both settings,
 * in alternating order, each on a fresh data folder with the built service (`npm run build` first):
 * - registration, by an API-only process (`serve --role api`): `--singles` POST /v1/jobs one after another (jobs/s
 *   and median latency), then `--batches` POST /v1/jobs/batch of 1,000 jobs (jobs/s), all due in a day;
 * - drain: `--drain` jobs due now are registered in batches, the API process stops, and `serve` (role all) drains
 *   them into the bench receiver: runs/s from the first callback to all of them `succeeded` (GET /v1/usage, polled).
 * - commits: `--commits` one-row INSERTs, each its own transaction, on PGlite opened in this process (openEmbedded):
 *   the median latency of a commit, which is what a sync adds to.
 * Prints one line per setting and round, and a summary (range and median of the rounds).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openEmbedded } from '../../src/store/embedded.ts';
import { endProcess } from './end-process.ts';
import { type BenchReceiver, startBenchReceiver } from './receiver.ts';
import { ROOT } from './systems/process.ts';

const ADMIN_TOKEN = 'bench-admin-token-0123456789';
const BATCH = 1000;
const DAY_MS = 86_400_000;
type Setting = 'on' | 'off';
type Result = { singlesPerS: number; singleP50Ms: number; batchJobsPerS: number; drainPerS: number; commitP50Ms: number };

const log = (line: string) => process.stderr.write(`${line}\n`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

type Service = { url: string; child: ChildProcess; stop(): Promise<void> };

/** Starts `node dist/node/cli.mjs serve <args>` on `dataDir` with CHIME_EMBEDDED_SYNC=`sync`, once it listens. */
async function startService(dataDir: string, sync: Setting, args: string[]): Promise<Service> {
  const child = spawn(process.execPath, ['dist/node/cli.mjs', 'serve', ...args], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      CHIME_DATA_DIR: dataDir,
      CHIME_EMBEDDED_SYNC: sync,
      CHIME_ADMIN_TOKEN: ADMIN_TOKEN,
      CHIME_ALLOW_PRIVATE_DESTINATIONS: 'true',
      CHIME_RATE_LIMIT_PER_SECOND: '0',
      CHIME_LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const port = /"port":(\d+)[^\n]*"msg":"listening"/.exec(out)?.[1];
    if (port) {
      const stop = () => {
        child.kill('SIGTERM');
        return exited;
      };
      return { url: `http://127.0.0.1:${port}`, child, stop };
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`chime did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function call(url: string, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

const later = (receiver: BenchReceiver) => ({
  schedule: { type: 'once', at: new Date(Date.now() + DAY_MS).toISOString() },
  callback: { url: `${receiver.url}/hook` },
});
const now = (receiver: BenchReceiver) => ({ schedule: { type: 'delay', delayMs: 0 }, callback: { url: `${receiver.url}/hook` } });

/** The median latency in ms of `count` one-row INSERTs, each its own transaction, on a fresh folder. */
async function commitP50(dir: string, sync: Setting, count: number): Promise<number> {
  const db = await openEmbedded(join(dir, 'commits'), { sync: sync === 'on' });
  try {
    await db.pg.exec('CREATE TABLE bench_commits (id serial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())');
    const latencies: number[] = [];
    for (let i = 0; i < count; i++) {
      const s = performance.now();
      await db.pg.query('INSERT INTO bench_commits DEFAULT VALUES');
      latencies.push(performance.now() - s);
    }
    return median(latencies);
  } finally {
    await db.close();
  }
}

async function round(
  sync: Setting,
  receiver: BenchReceiver,
  opts: { singles: number; batches: number; drain: number; commits: number },
): Promise<Result> {
  const dir = await mkdtemp(join(tmpdir(), `chime-bench-sync-${sync}-`));
  try {
    const api = await startService(join(dir, 'data'), sync, ['--role', 'api']);
    let key: string;
    const result: Partial<Result> = {};
    try {
      key = (await call(api.url, ADMIN_TOKEN, 'POST', '/v1/tenants', { name: 'bench' })).apiKey as string;
      const latencies: number[] = [];
      const t0 = performance.now();
      for (let i = 0; i < opts.singles; i++) {
        const s = performance.now();
        await call(api.url, key, 'POST', '/v1/jobs', later(receiver));
        latencies.push(performance.now() - s);
      }
      result.singlesPerS = opts.singles / ((performance.now() - t0) / 1000);
      latencies.sort((a, b) => a - b);
      result.singleP50Ms = latencies[Math.floor(latencies.length / 2)]!;
      const t1 = performance.now();
      for (let b = 0; b < opts.batches; b++) {
        await call(api.url, key, 'POST', '/v1/jobs/batch', { jobs: Array.from({ length: BATCH }, () => later(receiver)) });
      }
      result.batchJobsPerS = (opts.batches * BATCH) / ((performance.now() - t1) / 1000);
      for (let left = opts.drain; left > 0; left -= BATCH) {
        await call(api.url, key, 'POST', '/v1/jobs/batch', { jobs: Array.from({ length: Math.min(BATCH, left) }, () => now(receiver)) });
      }
    } finally {
      await api.stop();
    }
    await receiver.reset();
    const all = await startService(join(dir, 'data'), sync, []);
    try {
      const deadline = Date.now() + 300_000;
      let doneAt = 0;
      for (;;) {
        if (Date.now() > deadline) throw new Error('the drain did not finish within 5 minutes');
        const stats = await receiver.stats();
        if (stats.unique >= opts.drain) {
          const usage = await call(all.url, key, 'GET', '/v1/usage?days=2');
          const succeeded = (usage.daily as { succeeded: number }[]).reduce((n, d) => n + d.succeeded, 0);
          if (succeeded >= opts.drain) {
            doneAt = Date.now();
            result.drainPerS = opts.drain / ((doneAt - stats.firstAt!) / 1000);
            break;
          }
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await all.stop();
    }
    result.commitP50Ms = await commitP50(dir, sync, opts.commits);
    return result as Result;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const fmt = (r: Result) =>
  `singles ${r.singlesPerS.toFixed(0)} jobs/s (p50 ${r.singleP50Ms.toFixed(1)} ms), batches ${r.batchJobsPerS.toFixed(0)} jobs/s, ` +
  `drain ${r.drainPerS.toFixed(0)} runs/s, commit p50 ${r.commitP50Ms.toFixed(2)} ms`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '3' },
      singles: { type: 'string', default: '300' },
      batches: { type: 'string', default: '10' },
      drain: { type: 'string', default: '3000' },
      commits: { type: 'string', default: '500' },
    },
  });
  const opts = {
    singles: Number(values.singles),
    batches: Number(values.batches),
    drain: Number(values.drain),
    commits: Number(values.commits),
  };
  const rounds = Number(values.rounds);
  log(
    `embedded sync bench: ${rounds} rounds, ${JSON.stringify(opts)}, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const receiver = await startBenchReceiver();
  const results: Record<Setting, Result[]> = { on: [], off: [] };
  try {
    for (let i = 0; i < rounds; i++) {
      const order: Setting[] = i % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
      for (const sync of order) {
        const r = await round(sync, receiver, opts);
        results[sync].push(r);
        log(`round ${i + 1} sync=${sync}: ${fmt(r)}`);
      }
    }
  } finally {
    await receiver.close();
  }
  for (const sync of ['off', 'on'] as const) {
    const rs = results[sync];
    const range = (f: (r: Result) => number, digits = 0) =>
      `${Math.min(...rs.map(f)).toFixed(digits)}–${Math.max(...rs.map(f)).toFixed(digits)} (median ${median(rs.map(f)).toFixed(digits)})`;
    process.stdout.write(
      `sync=${sync}: singles ${range((r) => r.singlesPerS)} jobs/s, p50 ${range((r) => r.singleP50Ms, 1)} ms; ` +
        `batches ${range((r) => r.batchJobsPerS)} jobs/s; drain ${range((r) => r.drainPerS)} runs/s; commit p50 ${range((r) => r.commitP50Ms, 2)} ms\n`,
    );
  }
}

main().then(
  () => endProcess(0),
  (err: unknown) => {
    log(`bench: ${err instanceof Error ? err.stack : String(err)}`);
    endProcess(1);
  },
);
