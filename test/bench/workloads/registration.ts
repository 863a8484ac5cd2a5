/**
 * Workload 4, registration: Chime's `POST /v1/jobs` under autocannon (closed loop, 10 connections, 15 s) →
 * requests/s and latency p50/p99, plus the API process's CPU per 1,000 jobs; and `POST /v1/jobs/batch` of 1,000
 * jobs → jobs/s. For comparison, the peers' own enqueue calls from the harness process (pg-boss `send`/`insert`,
 * graphile-worker `addJob`/`addJobs`) with the same number of concurrent callers: a library call, not an HTTP
 * API, so cheaper by construction. Registration does not depend on worker tuning, so it is measured once per family.
 * Every job registered is due ~10 years from now, so no worker is involved.
 */
import autocannon from 'autocannon';
import { cpuSeconds } from '../proc-stats.ts';
import { percentile } from '../stats.ts';
import { ChimeSystem, chimeJobBody } from '../systems/chime.ts';
import { GRAPHILE_TASK, type GraphileSystem } from '../systems/graphile.ts';
import { withSystem } from '../systems/index.ts';
import { PGBOSS_QUEUE, PgBossSystem } from '../systems/pgboss.ts';
import { BATCH_SIZE, type BenchSystem, FUTURE_OFFSET_MS, type SystemSpec } from '../systems/types.ts';
import type { WorkloadDeps } from './drain.ts';
import type { BenchResult } from './types.ts';

type ClosedLoop = { count: number; errors: number; seconds: number; p50Ms: number; p99Ms: number; firstError: string | null };

/** Runs `call` back to back from `callers` concurrent loops for `durationS` seconds, timing each call. */
export async function closedLoop(call: (i: number) => Promise<unknown>, callers: number, durationS: number): Promise<ClosedLoop> {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | null = null;
  let i = 0;
  const started = performance.now();
  const end = started + durationS * 1000;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        try {
          await call(i++);
          latencies.push(performance.now() - t);
        } catch (err) {
          errors++;
          firstError ??= String(err);
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { count: latencies.length, errors, seconds, p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99), firstError };
}

/** Measures `spec`'s family (run.ts calls it for the defaults configurations only). */
export async function registration(spec: SystemSpec, deps: WorkloadDeps): Promise<BenchResult[]> {
  const result = await withSystem(spec, deps.ctx, (sys) => measure(sys, deps));
  return [result];
}

async function measure(sys: BenchSystem, deps: WorkloadDeps): Promise<BenchResult> {
  const { durationS, connections, batches } = deps.plan.registration;
  const future = () => Date.now() + FUTURE_OFFSET_MS;
  const notes: string[] = [];
  const figures: Record<string, number | null> = {};
  let errors = 0;

  if (sys instanceof ChimeSystem) {
    const pid = sys.apiPid()!;
    const cpu0 = cpuSeconds(pid);
    const r = await autocannon({
      url: `${sys.apiUrl}/v1/jobs`,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${sys.apiKey}` },
      body: JSON.stringify(chimeJobBody(deps.ctx.callbackUrl, future(), 0)),
      connections,
      duration: durationS,
    });
    const cpu1 = cpuSeconds(pid);
    const accepted = r['2xx'];
    errors = r.non2xx + r.errors + r.timeouts;
    if (errors) notes.push(`POST /v1/jobs: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
    figures.singleRequestsPerSecond = accepted / r.duration;
    figures.singleP50Ms = r.latency.p50;
    figures.singleP99Ms = r.latency.p99;
    figures.apiCpuSecondsPer1k = cpu0 !== null && cpu1 !== null && accepted > 0 ? ((cpu1 - cpu0) / accepted) * 1000 : null;
  } else {
    const payload = (n: number) => ({ n, scheduledFor: new Date(future()).toISOString() });
    const call =
      sys instanceof PgBossSystem
        ? (n: number) => sys.boss.send(PGBOSS_QUEUE, payload(n), { startAfter: new Date(future()) })
        : (n: number) => (sys as GraphileSystem).workerUtils.addJob(GRAPHILE_TASK, payload(n), { runAt: new Date(future()) });
    const r = await closedLoop(call, connections, durationS);
    errors = r.errors;
    if (r.errors) notes.push(`${r.errors} enqueue calls failed, first: ${r.firstError}`);
    figures.singleRequestsPerSecond = r.count / r.seconds;
    figures.singleP50Ms = r.p50Ms;
    figures.singleP99Ms = r.p99Ms;
  }

  const n = batches * BATCH_SIZE;
  const apiPid = sys instanceof ChimeSystem ? sys.apiPid() : null;
  const cpu0 = apiPid === null ? null : cpuSeconds(apiPid);
  try {
    const e = await sys.enqueue(new Array<number>(n).fill(future()));
    figures.batchJobsPerSecond = e.jobsPerSecond;
    const cpu1 = apiPid === null ? null : cpuSeconds(apiPid);
    figures.batchApiCpuSecondsPer1k = cpu0 !== null && cpu1 !== null ? ((cpu1 - cpu0) / n) * 1000 : null;
  } catch (err) {
    errors++;
    notes.push(`batch registration failed: ${String(err)}`);
  }
  deps.ctx.log(
    `  ${sys.spec.id}: ${Math.round(figures.singleRequestsPerSecond ?? 0)} single/s, ${Math.round(figures.batchJobsPerSecond ?? 0)} jobs/s in batches`,
  );
  return {
    system: sys.spec.id,
    workload: 'registration',
    variant: null,
    ok: errors === 0,
    n: null,
    delivered: null,
    recorded: null,
    capped: false,
    figures,
    notes,
  };
}
