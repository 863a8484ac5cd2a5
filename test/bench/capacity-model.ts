/**
 * Chime on Citus: how many nodes for a load. A model, not a measurement (docs/scaling.md, "How many nodes for my load").
 *
 *   npx tsx test/bench/capacity-model.ts [--coordinator-cpu-per-1k S] [--worker-cpu-per-1k S] [--dispatcher-cpu-per-1k S]
 *     [--cores-per-node N] [--headroom F] [--burst-fraction F] [--burst-window S] [--burst-factor F] ... [--json]
 *
 * For 10 M, 100 M and 1 B scheduled jobs × 5k, 50k and 500k callbacks/s (average) it prints the nodes needed. Formulas
 * (R = average callbacks/s, J = scheduled jobs; every parameter is a flag below):
 *   peak P       = R × (60·b / W + (1 − b))      the :00 burst: a fraction b of each minute's 60·R callbacks falls due in
 *                                                its first second and is drained within W s; the rest arrives evenly.
 *                                                `--burst-factor F` sets P = R × F instead.
 *   DB CPU       = P × cpu_per_1k / 1000 × recurring     cores, for the coordinator and the workers apart; `recurring`
 *                                                covers the next-run insert a cron job's claim makes (once-jobs measured)
 *   coordinator += dispatchers / poll_s × probe_ms / 1000  the idle 64-bucket due probe (a multi-shard read), per dispatcher
 *   nodes        = ⌈cores / (cores_per_node × headroom)⌉
 *   dispatchers  = max(⌈P × disp_cpu_per_1k / 1000 / headroom⌉,  ⌈P × callback_s / concurrency⌉)   (one core each; Little's law)
 *   API procs    = max(2, ⌈R × api_per_callback × api_cpu_per_1k / 1000 / headroom⌉)
 *   storage      = J × (job_bytes + run_bytes) + H × (run_bytes + attempts_per_run × attempt_bytes),
 *                  H = R × 86,400 × retention_days   (finished runs are kept, with their attempts, for the retention)
 *   clusters     = max(⌈max(CPU nodes, ⌈storage / storage_per_worker⌉) / shards⌉, coordinators); workers = that max, ≥ 2 per cluster
 *   connections  = on each coordinator: its dispatchers × (pool + 1 LISTEN) + its API processes × pool; each coordinator
 *                  backend keeps ≤ 1 connection per worker (citus.max_cached_conns_per_worker) and opens up to
 *                  citus.max_adaptive_executor_pool_size (16) per worker for a multi-shard statement.
 * Sources of the defaults (measured on 2 vCPU AMD EPYC, PostgreSQL 15, all processes on one machine):
 *   0.60 coordinator, 0.91 workers (together), 0.41 dispatcher CPU s per 1,000 callbacks: `npm run bench:citus`, a
 *     drain of 20,000 due runs of 16 tenants on a Citus 13.2 coordinator + 2 workers, two runs: coordinator
 *     0.616 / 0.592, workers 0.918 / 0.899, dispatcher 0.425 / 0.399 (test/bench/results-citus.md). Every node and
 *     the dispatcher shared the 2 vCPUs, so CPU was the limit (726–754 callbacks/s). The same drain on one
 *     PostgreSQL: 0.39–0.51 database CPU s per 1,000 at 1,215–1,582/s (a drain of one tenant's runs: 0.23 at 3,265/s).
 *     Plain HTTP to 127.0.0.1: no TLS.
 *   0.221 API CPU s per 1,000 POST /v1/jobs (test/bench/results.md, registration).
 *   Fastest measured drain on Citus 754 callbacks/s (results-citus.md; on one PostgreSQL 10,965, results.md), largest
 *   measured table 10 M future runs (results-scale.md, one PostgreSQL).
 * Everything else (burst shape, latency, bytes per row, headroom, node size) is modelled: change it by flag.
 */
import { parseArgs } from 'node:util';

const OPTIONS = {
  'coordinator-cpu-per-1k': { d: 0.6, h: 'coordinator CPU s per 1,000 callbacks (measured: bench:citus, results-citus.md)' },
  'worker-cpu-per-1k': { d: 0.91, h: 'CPU s per 1,000 callbacks of all workers together (same source)' },
  'dispatcher-cpu-per-1k': { d: 0.41, h: 'dispatcher CPU s per 1,000 callbacks (same source)' },
  'api-cpu-per-1k': { d: 0.221, h: 'API CPU s per 1,000 requests (measured: POST /v1/jobs)' },
  'api-per-callback': { d: 0.05, h: 'API requests per callback (modelled)' },
  recurring: { d: 1.25, h: 'DB cost factor for the next-run insert of recurring jobs (modelled)' },
  'cores-per-node': { d: 16, h: 'cores per database node and per dispatcher/API node' },
  headroom: { d: 0.6, h: "fraction of a node's cores used at peak" },
  'burst-fraction': { d: 0.2, h: "fraction of each minute's callbacks due in its first second (cron :00)" },
  'burst-window': { d: 5, h: 'seconds allowed to drain the :00 burst (its worst fire lag)' },
  'burst-factor': { d: NaN, h: 'peak/average directly (overrides the two above)' },
  'callback-ms': { d: 100, h: "receivers' mean answer time, ms (modelled)" },
  concurrency: { d: 256, h: 'callbacks in flight per dispatcher (Chime default)' },
  'dispatcher-pool': { d: 20, h: 'database pool of a dispatcher process (src/serve.ts)' },
  'api-pool': { d: 10, h: 'database pool of an API process (src/serve.ts)' },
  'max-connections': { d: 1000, h: 'coordinator max_connections you are willing to run' },
  'poll-s': { d: 2, h: 'dispatcher poll, s (DISPATCHER_DEFAULTS.pollMs)' },
  'probe-ms': { d: 2, h: 'coordinator CPU ms of one 64-bucket due probe (modelled)' },
  shards: { d: 32, h: 'Citus shards per table (CITUS_SHARD_COUNT): at most this many useful workers per cluster' },
  'retention-days': { d: 30, h: 'CHIME_RETENTION_DAYS (default 30)' },
  'attempts-per-run': { d: 1.1, h: 'attempts per run (retries)' },
  'job-bytes': { d: 1500, h: 'bytes per job with its indexes (modelled)' },
  'run-bytes': { d: 400, h: 'bytes per run with its indexes (modelled)' },
  'attempt-bytes': { d: 250, h: 'bytes per attempt with its key (modelled)' },
  'storage-per-worker-tb': { d: 4, h: 'usable TB per worker' },
  'callback-bytes': { d: 3000, h: 'bytes on the wire per callback, both ways (modelled)' },
  'measured-rate': { d: 754, h: 'fastest measured drain on Citus, callbacks/s (results-citus.md)' },
  'measured-jobs': { d: 10e6, h: 'largest measured table, runs (results-scale.md)' },
} as const;
type Name = keyof typeof OPTIONS;
type P = Record<Name, number>;

/** One scenario's answer. */
export type Row = {
  jobs: number;
  avgPerS: number;
  peakPerS: number;
  burstFactor: number;
  clusters: number;
  coordinators: number;
  coordinatorCores: number;
  workers: number;
  workersByCpu: number;
  workersByStorage: number;
  workerCores: number;
  dispatchers: number;
  dispatcherNodes: number;
  apiProcesses: number;
  coordinatorConnections: number;
  workerConnections: number;
  storageTB: number;
  historyRows: number;
  egressGbps: number;
  caveats: string[];
};

const up = Math.ceil;

/** The model for J jobs at R callbacks/s on average (formulas in the docstring). */
export function model(p: P, J: number, R: number): Row {
  const b = p['burst-fraction'];
  const burstFactor = Number.isFinite(p['burst-factor']) ? p['burst-factor'] : (60 * b) / p['burst-window'] + (1 - b);
  const P = R * burstFactor;
  const perNode = p['cores-per-node'] * p.headroom;
  const dispatchers = Math.max(up((P * p['dispatcher-cpu-per-1k']) / 1000 / p.headroom), up((P * p['callback-ms']) / 1000 / p.concurrency));
  const probeCores = (dispatchers / p['poll-s']) * (p['probe-ms'] / 1000);
  const coordinatorCores = (P * p['coordinator-cpu-per-1k'] * p.recurring) / 1000 + probeCores;
  const coordinators = up(coordinatorCores / perNode);
  const workerCores = (P * p['worker-cpu-per-1k'] * p.recurring) / 1000;
  const workersByCpu = up(workerCores / perNode);
  const historyRows = R * 86_400 * p['retention-days'];
  const bytes = J * (p['job-bytes'] + p['run-bytes']) + historyRows * (p['run-bytes'] + p['attempts-per-run'] * p['attempt-bytes']);
  const workersByStorage = up(bytes / (p['storage-per-worker-tb'] * 1e12));
  const clusters = Math.max(up(Math.max(workersByCpu, workersByStorage) / p.shards), coordinators);
  const workers = Math.max(2 * clusters, workersByCpu, workersByStorage); // at least 2 workers per cluster
  const apiProcesses = Math.max(2, up((R * p['api-per-callback'] * p['api-cpu-per-1k']) / 1000 / p.headroom));
  const coordinatorConnections = up((dispatchers * (p['dispatcher-pool'] + 1) + apiProcesses * p['api-pool']) / clusters);
  const workersPerCluster = up(workers / clusters);
  const row: Row = {
    jobs: J,
    avgPerS: R,
    peakPerS: Math.round(P),
    burstFactor: +burstFactor.toFixed(2),
    clusters,
    coordinators,
    coordinatorCores: +coordinatorCores.toFixed(1),
    workers,
    workersByCpu,
    workersByStorage,
    workerCores: +workerCores.toFixed(1),
    dispatchers,
    dispatcherNodes: up(dispatchers / p['cores-per-node']),
    apiProcesses,
    coordinatorConnections,
    workerConnections: coordinatorConnections,
    storageTB: +(bytes / 1e12).toFixed(1),
    historyRows,
    egressGbps: +((P * p['callback-bytes'] * 8) / 1e9).toFixed(1),
    caveats: [],
  };
  const c = row.caveats;
  const perWorkerPeak = P / workersPerCluster / clusters;
  if (perWorkerPeak > p['measured-rate'])
    c.push(`E: ${(perWorkerPeak / p['measured-rate']).toFixed(1)}× the fastest measured drain per worker`);
  else if (P > p['measured-rate'])
    c.push(`X: ${(P / p['measured-rate']).toFixed(0)}× the fastest measured drain in total (linear scaling assumed)`);
  if (J / clusters / workersPerCluster > p['measured-jobs']) c.push('J: more jobs per worker than any measured table');
  if (coordinators > 1) c.push(`C: ${coordinatorCores.toFixed(0)} coordinator cores > one node: split clusters (or route through workers)`);
  if (coordinatorConnections > p['max-connections'])
    c.push(
      `N: ${coordinatorConnections} connections per coordinator > ${p['max-connections']}: pool (PgBouncer) or fewer, bigger processes`,
    );
  if (workersByStorage > workersByCpu)
    c.push(
      `S: storage sizes the workers (${(bytes / 1e12).toFixed(0)} TB, ${(historyRows / 1e9).toFixed(0)} G history runs): shorten retention`,
    );
  if (J / R < 60) c.push(`P: each job fires every ${(J / R).toFixed(0)} s on average, finer than cron's minute`);
  if (row.egressGbps > 10) c.push(`W: ${row.egressGbps} Gbit/s of callbacks at peak`);
  return row;
}

/** Every scenario of the issue: 10 M, 100 M, 1 B jobs × 5k, 50k, 500k callbacks/s. */
export function scenarios(p: P): Row[] {
  return [10e6, 100e6, 1e9].flatMap((J) => [5e3, 50e3, 500e3].map((R) => model(p, J, R)));
}

const si = (n: number) => (n >= 1e9 ? `${n / 1e9} B` : n >= 1e6 ? `${n / 1e6} M` : n >= 1e3 ? `${+(n / 1e3).toFixed(1)}k` : String(n));

/** The rows as a markdown table, with its legend and the parameters used. */
export function markdown(rows: Row[], p: P): string {
  const head = [
    'jobs',
    'callbacks/s avg → :00 peak',
    'clusters',
    'coordinator cores',
    'workers (CPU / storage)',
    'dispatchers (nodes)',
    'API',
    'conns / coordinator',
    'storage TB',
    'caveats',
  ];
  const lines = [`| ${head.join(' | ')} |`, `| ${head.map((_, i) => (i === 0 || i === head.length - 1 ? '---' : '---:')).join(' | ')} |`];
  for (const r of rows) {
    lines.push(
      `| ${[
        si(r.jobs),
        `${si(r.avgPerS)} → ${si(r.peakPerS)}`,
        r.clusters,
        r.coordinatorCores,
        `${r.workers} (${r.workersByCpu} / ${r.workersByStorage})`,
        `${r.dispatchers} (${r.dispatcherNodes})`,
        r.apiProcesses,
        r.coordinatorConnections,
        r.storageTB,
        r.caveats.map((x) => x[0]).join(' ') || '—',
      ].join(' | ')} |`,
    );
  }
  const notes = [...new Map(rows.flatMap((r) => r.caveats).map((x) => [x[0], x])).values()];
  return [
    `Chime capacity model (modelled; per-node costs: coordinator ${p['coordinator-cpu-per-1k']}, workers ${p['worker-cpu-per-1k']}, dispatcher ${p['dispatcher-cpu-per-1k']} CPU s per 1,000 callbacks).`,
    `Burst ×${rows[0]?.burstFactor}, ${p['cores-per-node']} cores per node at ${p.headroom * 100} %, retention ${p['retention-days']} d, ${p.shards} shards per cluster.`,
    '',
    ...lines,
    '',
    'Caveats (one example each; letters in the table):',
    ...notes.map((n) => `- ${n}`),
    '- Always: per-node costs were measured on a Citus cluster whose 3 nodes, dispatcher and receiver shared one 2-vCPU machine (CPU-bound, loopback network, no TLS); everything scales linearly in this model; one coordinator per cluster is a single point of failure.',
  ].join('\n');
}

function main(): void {
  const { values } = parseArgs({
    options: {
      ...Object.fromEntries(Object.keys(OPTIONS).map((k) => [k, { type: 'string' as const }])),
      json: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(
      'npx tsx test/bench/capacity-model.ts [--json] [--NAME VALUE]...\n' +
        Object.entries(OPTIONS)
          .map(([k, o]) => `  --${k} (${o.d}): ${o.h}`)
          .join('\n'),
    );
    return;
  }
  const p = {} as P;
  for (const [k, o] of Object.entries(OPTIONS) as [Name, { d: number }][]) {
    const raw = (values as Record<string, string | boolean | undefined>)[k] as string | undefined;
    p[k] = raw === undefined ? o.d : Number(raw);
    if (raw !== undefined && !(Number.isFinite(p[k]) && p[k] >= 0)) {
      console.error(`--${k} must be a number ≥ 0, got ${raw} (--help lists the flags)`);
      process.exitCode = 2;
      return;
    }
  }
  const rows = scenarios(p);
  console.log(values.json ? JSON.stringify({ parameters: p, rows }, null, 2) : markdown(rows, p));
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('capacity-model.ts')) main();
