/**
 * `npm run bench [-- --quick] [--only chime,pgboss,graphile]
 * [--workloads drain,steady,burst,registration,scale,slow,noisy] [--out PATH_PREFIX]`: measures Chime against pg-boss
 * and graphile-worker on the PostgreSQL of DATABASE_URL (or TEST_DATABASE_URL), each configuration on a fresh
 * database, all against one receiver process, and writes a markdown table (also printed) and JSON:
 * test/bench/results.{md,json}, or test/bench/out/quick.{md,json} with --quick. --quick runs every workload small
 * (CI) and exits 1 unless every system delivered and recorded every run. `--only` takes families (`pgboss` runs
 * pg-boss's defaults, tuned and same-work configurations: systems/types.ts; `graphile` graphile-worker's) and
 * configurations by id (`--only chime,graphile-punctual`).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { DatabaseFactory } from './db.ts';
import { endProcess } from './end-process.ts';
import { type BenchReceiver, startBenchReceiver } from './receiver.ts';
import { describeMachine, type Report, ratios, renderMarkdown, TUNING } from './report.ts';
import { GRAPHILE_WORKER_SCRIPT } from './systems/graphile.ts';
import { installSchema } from './systems/index.ts';
import { PGBOSS_WORKER_SCRIPT } from './systems/pgboss.ts';
import { buildSystems, killAll, ROOT } from './systems/process.ts';
import { type BenchContext, type Family, SYSTEMS, type SystemSpec } from './systems/types.ts';
import { burst } from './workloads/burst.ts';
import { drain, type WorkloadDeps } from './workloads/drain.ts';
import { noisy } from './workloads/noisy.ts';
import { FULL_PLAN, QUICK_PLAN, WORKLOADS, type WorkloadId } from './workloads/plan.ts';
import { registration } from './workloads/registration.ts';
import { scale } from './workloads/scale.ts';
import { slow } from './workloads/slow.ts';
import { steady } from './workloads/steady.ts';
import type { BenchResult } from './workloads/types.ts';

const RUN: Record<WorkloadId, (spec: SystemSpec, deps: WorkloadDeps) => Promise<BenchResult[]>> = {
  drain,
  steady,
  burst,
  registration,
  scale,
  slow,
  noisy,
};
const FAMILIES: readonly Family[] = ['chime', 'pgboss', 'graphile'];

const log = (line: string) => process.stderr.write(`${line}\n`);

function fail(message: string): never {
  process.stderr.write(`bench: ${message}\n`);
  endProcess(2);
}

function listArg<T extends string>(value: string | undefined, allowed: readonly T[], name: string): T[] {
  if (value === undefined) return [...allowed];
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const i of items) if (!allowed.includes(i as T)) fail(`--${name}: unknown "${i}" (one of ${allowed.join(', ')})`);
  return items as T[];
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      workloads: { type: 'string' },
      out: { type: 'string' },
    },
  });
  const adminUrl = process.env.DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  if (!adminUrl) fail('set DATABASE_URL (or TEST_DATABASE_URL) to a PostgreSQL the bench may create databases in');
  const plan = values.quick ? QUICK_PLAN : FULL_PLAN;
  const only = listArg<string>(values.only, [...FAMILIES, ...SYSTEMS.map((s) => s.id)], 'only');
  const workloads = listArg(values.workloads, WORKLOADS, 'workloads');
  const out = values.out ?? `${ROOT}test/bench/${values.quick ? 'out/quick' : 'results'}`;
  const specs = SYSTEMS.filter((s) => only.includes(s.family) || only.includes(s.id));
  const families = FAMILIES.filter((f) => specs.some((s) => s.family === f));

  const databases = new DatabaseFactory(adminUrl);
  let receiver: BenchReceiver | null = null;
  const cleanup = async () => {
    killAll();
    await receiver?.close().catch(() => {});
    await databases.close().catch(() => {});
  };
  // A library's unhandled error (say, a pool connection dropped) must not leave processes and databases behind.
  process.once('uncaughtException', (err) => {
    log(`bench: uncaught ${err.stack ?? String(err)}`);
    void cleanup().finally(() => endProcess(1));
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`bench: ${signal}, cleaning up`);
      void cleanup().finally(() => endProcess(130));
    });
  }

  try {
    const stale = await databases.dropStale();
    if (stale.length) log(`dropped ${stale.length} databases left by earlier runs`);
    const machine = describeMachine(await databases.serverVersion());
    log(
      `bench (${plan.quick ? 'quick' : 'full'}): ${specs.map((s) => s.id).join(', ')} × ${workloads.join(', ')} on ${machine.cpuModel} ×${machine.cores}, load ${machine.loadAverage1m.toFixed(2)}`,
    );
    await buildSystems([GRAPHILE_WORKER_SCRIPT, PGBOSS_WORKER_SCRIPT]);
    receiver = await startBenchReceiver();
    const templates = {} as Record<Family, string>;
    for (const family of families) {
      const db = await databases.create(`tpl_${family}`);
      await installSchema(family, db.url);
      templates[family] = db.name;
    }
    const ctx: BenchContext = { databases, templates, callbackUrl: `${receiver.url}/hook`, log };
    const deps: WorkloadDeps = { ctx, receiver, plan };

    const results: BenchResult[] = [];
    for (const workload of workloads) {
      for (const spec of specs) {
        // Registration is measured once per family (it does not depend on worker tuning): by the defaults configuration.
        if (workload === 'registration' ? spec.tuned : spec.family !== 'chime' && !spec.tuned && !plan.defaultsWorkloads.includes(workload))
          continue;
        if (spec.punctual && workload !== 'steady') continue;
        const started = Date.now();
        log(`${workload} / ${spec.id}`);
        try {
          const rs = await RUN[workload](spec, deps);
          for (const r of rs) {
            log(
              `  ${r.ok ? 'ok' : 'NOT OK'}${r.variant ? ` (${r.variant})` : ''}: ${summary(r)}${r.notes.length ? `; ${r.notes.join('; ')}` : ''}`,
            );
          }
          results.push(...rs);
        } catch (err) {
          log(`  ERROR: ${(err as Error).stack ?? String(err)}`);
          results.push({
            system: spec.id,
            workload,
            variant: null,
            ok: false,
            error: String((err as Error).message ?? err).slice(0, 2000),
            n: null,
            delivered: null,
            recorded: null,
            capped: false,
            figures: {},
            notes: [],
          });
        }
        log(`  (${((Date.now() - started) / 1000).toFixed(1)} s)`);
      }
    }

    const report: Report = {
      generatedAt: new Date().toISOString(),
      mode: plan.quick ? 'quick' : 'full',
      args: argv,
      machine,
      plan,
      tuning: TUNING,
      results,
      ratios: ratios(results),
      ok: results.length > 0 && results.every((r) => r.ok),
    };
    const markdown = renderMarkdown(report);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(`${out}.md`, markdown);
    writeFileSync(`${out}.json`, `${JSON.stringify(report, null, 2)}\n`);
    process.stdout.write(markdown);
    log(`written ${out}.md and ${out}.json`);
    if (plan.quick) return report.ok ? 0 : 1;
    return results.some((r) => r.error) ? 1 : 0;
  } finally {
    await cleanup();
  }
}

function summary(r: BenchResult): string {
  const f = r.figures;
  const parts: string[] = [];
  if (r.n !== null) parts.push(`${r.delivered}/${r.n} delivered, ${r.recorded} recorded`);
  const pick: [string, string, number][] = [
    ['callbacksPerSecond', 'callbacks/s', 0],
    ['lagP50Ms', 'lag p50 ms', 1],
    ['lagP99Ms', 'p99', 1],
    ['lagMaxMs', 'max', 1],
    ['earlyFires', 'early', 0],
    ['bLagP50Ms', 'B lag p50 ms', 1],
    ['bLagP99Ms', 'p99', 1],
    ['bLagMaxMs', 'max', 1],
    ['bEarlyFires', 'early', 0],
    ['aCallbacksPerSecond', 'A callbacks/s', 0],
    ['aAloneCallbacksPerSecond', 'A alone', 0],
    ['aVsAlonePct', '% of alone', 0],
    ['singleRequestsPerSecond', 'single/s', 0],
    ['batchJobsPerSecond', 'batch jobs/s', 0],
    ['cpuSecondsPer1k', 'CPU s/1k', 3],
  ];
  for (const [k, label, d] of pick) if (typeof f[k] === 'number' && Number.isFinite(f[k])) parts.push(`${label} ${f[k].toFixed(d)}`);
  return parts.join(', ');
}

process.exitCode = await main();
