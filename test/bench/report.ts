/**
 * The bench's output: a markdown table per workload (systems as columns, figures as rows, and for each figure the
 * ratios Chime / best tuned raw peer and Chime / best same-work peer) and the same data as JSON, plus the machine
 * the figures come from.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { GRAPHILE_PUNCTUAL_POLL_MS } from './peers/tuning.ts';
import { ROOT } from './systems/process.ts';
import { SYSTEMS, type SystemId } from './systems/types.ts';
import { type Plan, WORKLOADS, type WorkloadId } from './workloads/plan.ts';
import type { BenchResult } from './workloads/types.ts';

type Better = 'higher' | 'lower' | null;
type FigureMeta = { label: string; better: Better; digits: number };

/** Every figure a workload may report: its label (with unit), which way is better (null: no ratio), precision. */
export const FIGURES: Record<string, FigureMeta> = {
  callbacksPerSecond: { label: 'callbacks/s (first callback → all recorded)', better: 'higher', digits: 0 },
  burstDoneMs: { label: 'all delivered and recorded, ms after the first due time', better: 'lower', digits: 0 },
  lagP50Ms: { label: 'fire lag p50 (ms)', better: 'lower', digits: 1 },
  lagP99Ms: { label: 'fire lag p99 (ms)', better: 'lower', digits: 1 },
  lagP999Ms: { label: 'fire lag p99.9 (ms)', better: 'lower', digits: 1 },
  lagMaxMs: { label: 'fire lag max (ms)', better: 'lower', digits: 1 },
  earlyFires: { label: 'early fires (must be 0)', better: null, digits: 0 },
  meanInFlight: { label: "callbacks in flight (Little's law)", better: 'higher', digits: 1 },
  singleRequestsPerSecond: { label: 'single registrations/s (Chime: POST /v1/jobs; peers: send / addJob)', better: 'higher', digits: 0 },
  singleP50Ms: { label: 'single registration p50 (ms)', better: 'lower', digits: 1 },
  singleP99Ms: { label: 'single registration p99 (ms)', better: 'lower', digits: 1 },
  apiCpuSecondsPer1k: { label: 'API CPU s per 1,000 POST /v1/jobs', better: 'lower', digits: 3 },
  batchJobsPerSecond: { label: 'batch registration jobs/s (1,000 per call)', better: 'higher', digits: 0 },
  batchApiCpuSecondsPer1k: { label: 'API CPU s per 1,000 jobs in batches', better: 'lower', digits: 3 },
  cpuSecondsPer1k: { label: 'worker CPU s per 1,000 callbacks', better: 'lower', digits: 3 },
  dbCpuSecondsPer1k: { label: 'PostgreSQL CPU s per 1,000 callbacks (approx.)', better: 'lower', digits: 3 },
  walBytesPerCallback: { label: 'PostgreSQL WAL bytes per callback', better: 'lower', digits: 0 },
  statementsPerCallback: { label: 'SQL statements per callback (pg_stat_statements)', better: 'lower', digits: 2 },
  peakRssMiB: { label: 'worker peak RSS (MiB)', better: 'lower', digits: 0 },
  receiverCpuSecondsPer1k: { label: 'receiver CPU s per 1,000 callbacks (the same for all; a check)', better: null, digits: 3 },
  firstCallbackMs: { label: 'first callback, ms after the worker was spawned', better: null, digits: 0 },
  enqueueJobsPerSecond: { label: 'loading the runs, jobs/s (Chime: POST /v1/jobs/batch)', better: 'higher', digits: 0 },
  futureRowsSeconds: { label: 'adding the future rows in SQL (s)', better: null, digits: 1 },
  bLagP50Ms: { label: "B's fire lag p50 (ms)", better: 'lower', digits: 1 },
  bLagP99Ms: { label: "B's fire lag p99 (ms; the bar: ≤ 100)", better: 'lower', digits: 1 },
  bLagMaxMs: { label: "B's fire lag max (ms)", better: 'lower', digits: 1 },
  bEarlyFires: { label: "B's early fires (must be 0)", better: null, digits: 0 },
  bSpanMs: { label: "B's runs fall due over (ms, first to last due time)", better: null, digits: 0 },
  bDueAfterADrain: { label: "B's runs due after A's last callback (should be 0)", better: null, digits: 0 },
  aDrainMs: { label: 'A: first → last callback beside B (ms)', better: null, digits: 0 },
  aCallbacksPerSecond: { label: "A: callbacks/s beside B (A's first → last callback)", better: 'higher', digits: 0 },
  aAloneCallbacksPerSecond: { label: 'A: callbacks/s alone (same runs, no B, fresh system)', better: 'higher', digits: 0 },
  aVsAlonePct: { label: "A's rate beside B, % of alone (the bar: ≥ 90)", better: 'higher', digits: 0 },
};

const TITLES: Record<WorkloadId, (p: Plan) => string> = {
  drain: (p) => `drain: ${p.drain.n.toLocaleString('en')} runs due at once`,
  steady: (p) => `steady: ${p.steady.ratePerSecond} runs/s falling due for ${p.steady.durationS} s`,
  burst: (p) => `burst: ${p.burst.n.toLocaleString('en')} runs due in the same second`,
  registration: (p) =>
    `registration: ${p.registration.durationS} s closed loop, ${p.registration.connections} connections; batches of 1,000`,
  scale: (p) => `scale: drain of ${p.scale.n.toLocaleString('en')} runs with future runs in the table`,
  slow: (p) => `slow receiver: ${p.slow.n.toLocaleString('en')} runs, ${p.slow.delayMs} ms per answer`,
  noisy: (p) =>
    `noisy neighbour: tenant A's ${p.noisy.aN.toLocaleString('en')} runs due at once over ${p.noisy.destinations} destinations, ` +
    `tenant B's ${p.noisy.bN.toLocaleString('en')} falling due during the drain`,
};

export type Machine = {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  node: string;
  postgres: string;
  loadAverage1m: number;
  platform: string;
  versions: Record<string, string>;
  commit: string | null;
};

/** Describes this machine and the software measured. */
export function describeMachine(postgresVersion: string): Machine {
  const cpuModel = /^model name\s*:\s*(.+)$/m.exec(safeRead('/proc/cpuinfo'))?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  const version = (pkg: string) => {
    try {
      return (JSON.parse(readFileSync(`${ROOT}node_modules/${pkg}/package.json`, 'utf8')) as { version: string }).version;
    } catch {
      return 'unknown';
    }
  };
  let commit: string | null = null;
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    if (execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).trim()) commit += ' (src/ modified)';
  } catch {
    // not a git checkout
  }
  return {
    cpuModel,
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    postgres: postgresVersion,
    loadAverage1m: os.loadavg()[0]!,
    platform: `${os.type()} ${os.release()}`,
    versions: {
      chime: version('..'),
      'pg-boss': version('pg-boss'),
      'graphile-worker': version('graphile-worker'),
      undici: version('undici'),
      autocannon: version('autocannon'),
    },
    commit,
  };
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Which peers a ratio compares Chime with:
 * - `raw`: the best tuned raw peer (pg-boss or graphile-worker tuned, whose handlers only POST); where no tuned
 *   configuration runs (registration, measured once per family by the defaults), the best raw peer;
 * - `samework`: the best same-work peer (tuned, signing and recording each callback as Chime does: peers/same-work.ts);
 * - `punctual`: the peer tuned to fire as promptly as Chime (`graphile-punctual`, steady workload only).
 */
export type RatioAgainst = 'raw' | 'samework' | 'punctual';

const AGAINST: readonly RatioAgainst[] = ['raw', 'samework', 'punctual'];

export type Ratio = {
  workload: WorkloadId;
  variant: string | null;
  figure: string;
  better: 'higher' | 'lower';
  against: RatioAgainst;
  chime: number;
  bestPeer: number;
  bestPeerSystem: SystemId;
  /** Chime / best peer: above 1 is better for Chime when higher is better, below 1 when lower is better. */
  ratio: number;
};

export type Report = {
  generatedAt: string;
  mode: 'full' | 'quick';
  args: string[];
  machine: Machine;
  plan: Plan;
  tuning: Record<string, string>;
  results: BenchResult[];
  ratios: Ratio[];
  ok: boolean;
};

/** What "tuned" and "same work" mean for each peer (set in test/bench/peers/*.ts). */
export const TUNING = {
  'pgboss-tuned': 'work() with batchSize 100, pollingIntervalSeconds 0.5, burstWhenBatchFull true',
  'graphile-tuned': 'concurrency 50, localQueue.size 500, completeJobBatchDelay 0, failJobBatchDelay 0, pollInterval 500 ms',
  'graphile-punctual': `graphile-worker tuned, with pollInterval ${GRAPHILE_PUNCTUAL_POLL_MS} ms (the interval searched for a fire lag p99 ≤ 10 ms at 500 runs/s; none reached it on the bench machine: test/bench/README.md)`,
  samework:
    'The same-work peers (pgboss-samework, graphile-samework) run with their tuned settings, and their handlers do per callback what Chime does ' +
    'by default: a Standard Webhooks signature (the standardwebhooks package, a fixed whsec_ secret), an Ed25519 JWT over the SHA-256 of the body ' +
    '(node:crypto, a key per worker process) as chime-signature, and after the response one INSERT of the attempt into a history table ' +
    "(bench_attempts, primary key (job_id, attempt)) through the worker's own pool",
  common:
    'Every worker POSTs with an undici Agent (keep-alive 30 s, 16 connections per destination = Chime default per-destination concurrency, 10 s timeout)',
};

const SPEC = new Map(SYSTEMS.map((s) => [s.id, s]));

/**
 * The results `against` compares Chime with in one (workload, variant) group, and whether they are tuned: raw peers
 * (the tuned ones when any ran, else the defaults), or the same-work peers.
 */
function comparedPeers(group: BenchResult[], against: RatioAgainst): { peers: BenchResult[]; tuned: boolean } {
  const kindOf = (id: SystemId): RatioAgainst => (SPEC.get(id)?.punctual ? 'punctual' : SPEC.get(id)?.sameWork ? 'samework' : 'raw');
  const peers = group.filter((r) => r.system !== 'chime' && kindOf(r.system) === against);
  const tuned = peers.filter((r) => SPEC.get(r.system)?.tuned);
  return tuned.length > 0 ? { peers: tuned, tuned: true } : { peers, tuned: false };
}

/** The best finite value of `figure` in `pool` (highest or lowest, as `better` says) and its system; null when none has one. */
function bestOf(pool: readonly BenchResult[], figure: string, better: 'higher' | 'lower'): { v: number; s: SystemId } | null {
  let best: { v: number; s: SystemId } | null = null;
  for (const p of pool) {
    const v = p.figures[figure];
    if (v === null || v === undefined || !Number.isFinite(v)) continue;
    if (!best || (better === 'higher' ? v > best.v : v < best.v)) best = { v, s: p.system };
  }
  return best;
}

/**
 * Ratios Chime / best tuned raw peer and Chime / best same-work peer for every figure with a direction (`against`
 * says which); the best peer is chosen among complete results when any.
 */
export function ratios(results: BenchResult[]): Ratio[] {
  const out: Ratio[] = [];
  for (const group of groups(results)) {
    const chime = group.find((r) => r.system === 'chime');
    if (!chime || chime.error) continue;
    for (const against of AGAINST) {
      const peers = comparedPeers(group, against).peers.filter((r) => !r.error);
      const complete = peers.filter((r) => r.ok);
      const pool = complete.length > 0 ? complete : peers;
      for (const [figure, value] of Object.entries(chime.figures)) {
        const meta = FIGURES[figure];
        if (!meta?.better || value === null || !Number.isFinite(value)) continue;
        const best = bestOf(pool, figure, meta.better);
        if (!best || best.v === 0) continue;
        out.push({
          workload: chime.workload,
          variant: chime.variant,
          figure,
          better: meta.better,
          against,
          chime: value,
          bestPeer: best.v,
          bestPeerSystem: best.s,
          ratio: value / best.v,
        });
      }
    }
  }
  return out;
}

/** Results grouped by (workload, variant), in workload order. */
function groups(results: BenchResult[]): BenchResult[][] {
  const map = new Map<string, BenchResult[]>();
  const order = [...results].sort((a, b) => WORKLOADS.indexOf(a.workload) - WORKLOADS.indexOf(b.workload));
  for (const r of order) {
    const key = `${r.workload}\u0000${r.variant ?? ''}`;
    map.set(key, [...(map.get(key) ?? []), r]);
  }
  return [...map.values()];
}

/** `v` with `digits` decimals (one more significant digit for small rates such as pg-boss's 0.5 callbacks/s). */
function fmt(v: number | null | undefined, digits: number): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  const d = digits === 0 && v !== 0 && Math.abs(v) < 10 && !Number.isInteger(v) ? 1 : digits;
  return v.toLocaleString('en', { minimumFractionDigits: d, maximumFractionDigits: d });
}

/** The markdown report. */
export function renderMarkdown(report: Report): string {
  const m = report.machine;
  const lines: string[] = [];
  lines.push(`# Chime benchmark (${report.mode})`, '');
  lines.push(`Generated ${report.generatedAt} by \`npm run bench${report.args.length ? ` -- ${report.args.join(' ')}` : ''}\`.`, '');
  lines.push(
    `Machine: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB; ${m.platform}; Node ${m.node}; PostgreSQL ${m.postgres}; ` +
      `load average ${m.loadAverage1m.toFixed(2)} at start. Chime ${m.versions.chime}${m.commit ? ` (${m.commit})` : ''}, ` +
      `pg-boss ${m.versions['pg-boss']}, graphile-worker ${m.versions['graphile-worker']}, undici ${m.versions.undici}.`,
    '',
  );
  lines.push(
    `Chime runs with its defaults (the API's per-tenant rate limit, a policy of 100 requests/s, lifted). Tuned peers: pg-boss ${TUNING['pgboss-tuned']}; ` +
      `graphile-worker ${TUNING['graphile-tuned']}; punctual: ${TUNING['graphile-punctual']}. ${TUNING.samework}. ${TUNING.common}.`,
    '',
  );
  lines.push(
    'Ratios = Chime / best tuned raw peer (pg-boss or graphile-worker tuned; registration: the peers as measured) and Chime / best same-work peer, ' +
      'each the best among those peers that delivered everything, when any: for ↑ figures above 1 favours Chime, ' +
      'for ↓ figures below 1 does. `*` marks a run that hit its time cap or lost runs; its figures cover what it did.',
    '',
  );
  for (const group of groups(report.results)) {
    const first = group[0]!;
    const present = SYSTEMS.filter((s) => group.some((r) => r.system === s.id));
    lines.push(`## ${TITLES[first.workload](report.plan)}${first.variant ? ` — ${first.variant}` : ''}`, '');
    // Registration is per family (worker tuning plays no part), so its columns are named by the family alone.
    const label = (s: (typeof SYSTEMS)[number]) => (first.workload === 'registration' ? s.label.replace(' (defaults)', '') : s.label);
    // One ratio column per kind of peer that ran beside Chime: tuned raw (or, for registration, the raw peers), same work.
    const withChime = group.some((r) => r.system === 'chime');
    const columns = AGAINST.map((against) => ({ against, ...comparedPeers(group, against) }))
      .filter((c) => withChime && c.peers.length > 0)
      .map((c) => ({
        against: c.against,
        title:
          c.against === 'punctual'
            ? 'Chime / punctual peer'
            : c.against === 'samework'
              ? 'Chime / best same-work peer'
              : c.tuned
                ? 'Chime / best tuned raw peer'
                : 'Chime / best peer',
      }));
    const row = (cells: string[]) => `| ${cells.join(' | ')} |`;
    lines.push(row(['figure', ...present.map(label), ...columns.map((c) => c.title)]));
    lines.push(row(['---', ...[...present, ...columns].map(() => '---:')]));
    const bySystem = new Map(group.map((r) => [r.system, r]));
    if (group.some((r) => r.n !== null)) {
      const cells = present.map((s) => {
        const r = bySystem.get(s.id);
        if (!r) return '';
        if (r.error) return 'error';
        return `${fmt(r.delivered, 0)} / ${fmt(r.recorded, 0)} of ${fmt(r.n, 0)}${r.ok ? '' : '*'}`;
      });
      lines.push(row(['delivered / recorded', ...cells, ...columns.map(() => '')]));
    }
    const figures = Object.keys(FIGURES).filter((f) => group.some((r) => r.figures[f] !== undefined));
    for (const f of figures) {
      const meta = FIGURES[f]!;
      const arrow = meta.better === 'higher' ? ' ↑' : meta.better === 'lower' ? ' ↓' : '';
      const cells = present.map((s) => {
        const r = bySystem.get(s.id);
        if (!r || r.error) return '';
        const v = r.figures[f];
        return v === undefined ? '' : `${fmt(v, meta.digits)}${r.ok ? '' : '*'}`;
      });
      const ratioCells = columns.map((c) => {
        const ratio = report.ratios.find(
          (x) => x.workload === first.workload && x.variant === first.variant && x.figure === f && x.against === c.against,
        );
        return ratio ? `${ratio.ratio.toFixed(2)} (vs ${ratio.bestPeerSystem})` : '';
      });
      lines.push(row([`${meta.label}${arrow}`, ...cells, ...ratioCells]));
    }
    const notes = group.flatMap((r) => [...(r.error ? [`error: ${r.error}`] : []), ...r.notes].map((n) => `- ${r.system}: ${n}`));
    if (notes.length) lines.push('', ...notes);
    lines.push('');
  }
  lines.push(
    report.ok ? 'Every system delivered and recorded every run.' : 'Not every run was delivered and recorded: see `*` and the notes.',
    '',
  );
  return lines.join('\n');
}
