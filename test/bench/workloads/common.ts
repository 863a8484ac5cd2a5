/**
 * The measuring loop shared by the delivery workloads: poll the receiver (IPC) and the system's own records
 * (`remaining()`, index-only SQL) every 100 ms until every run is delivered and recorded, or the time cap passes,
 * then read CPU, memory, lags and the system's tally.
 *
 * CPU per 1,000 callbacks is the worker process's utime+stime from the first callback (sampled by the receiver
 * process the moment it arrives) to the end, so start-up (tsx compile, migrations) is not counted. PostgreSQL CPU
 * is the sum over the database's client backends (the harness's own excepted) from `dbBefore` to the end, sampled
 * every 500 ms so that a backend that exits (node-postgres pools close idle connections after 10 s) keeps what
 * it had used by its last sample: approximate, and a slight lower bound. WAL bytes and statements per callback
 * (`db-work.ts`) span the same phase.
 */
import type { DatabaseFactory } from '../db.ts';
import { type DbWork, type DbWorkSample, dbWorkPer, NO_STATEMENTS_NOTE, sampleDbWork } from '../db-work.ts';
import { cpuDelta, cpuSeconds, cpuSecondsOf, peakRssMiB } from '../proc-stats.ts';
import type { BenchReceiver, ReceiverStats } from '../receiver.ts';
import type { LagSummary } from '../stats.ts';
import type { BenchSystem } from '../systems/types.ts';
import type { WorkloadId } from './plan.ts';
import type { BenchResult } from './types.ts';

/** How often the receiver and the database are polled while a workload runs, in ms. */
export const POLL_MS = 100;
/** Every this many polls, the database's backends are sampled too (so backends that exit lose little). */
const BACKEND_SAMPLE_EVERY = 5;

/** The database's counters when a measured phase begins: its backends' CPU, and the WAL and statements so far. */
export type Baseline = { cpu: Record<number, number>; work: DbWorkSample };

/** Reads `sys`'s database counters: call it when the measured phase begins (before the worker starts, for a drain). */
export async function baselineOf(sys: BenchSystem, databases: DatabaseFactory): Promise<Baseline> {
  return { cpu: cpuSecondsOf(await sys.backendPids()), work: await sampleDbWork(databases, sys.dbName, sys.harnessStatements()) };
}

export type Delivery = {
  n: number;
  stats: ReceiverStats;
  /** When the system's records first showed every run done (epoch ms), or null when capped. */
  doneAt: number | null;
  /** When polling stopped (doneAt, or the cap). */
  endAt: number;
  capped: boolean;
  recorded: number;
  failed: number;
  retries: number | null;
  lags: LagSummary;
  workerCpuSeconds: number | null;
  dbCpuSeconds: number;
  dbWork: DbWork;
  /** CPU seconds of the receiver process over the workload: near 1 s per second means it may be the bottleneck. */
  receiverCpuSeconds: number | null;
  peakRssMiB: number | null;
  notes: string[];
};

/**
 * Waits until the receiver has `n` distinct callbacks and the system records none remaining, or `deadline`
 * (epoch ms) passes, then measures.
 * @param before the database's counters when the measured phase began (`baselineOf`)
 */
export async function watchDelivery(
  sys: BenchSystem,
  receiver: BenchReceiver,
  o: { n: number; deadline: number; before: Baseline; databases: DatabaseFactory; log: (line: string) => void },
): Promise<Delivery> {
  const notes: string[] = [];
  let doneAt: number | null = null;
  let lastLog = Date.now();
  let stats: ReceiverStats;
  const receiverCpuBefore = cpuSeconds(receiver.pid);
  const dbSeen: Record<number, number> = { ...o.before.cpu };
  const sampleBackends = async () => Object.assign(dbSeen, cpuSecondsOf(await sys.backendPids()));
  for (let polls = 0; ; polls++) {
    if (polls % BACKEND_SAMPLE_EVERY === 0) await sampleBackends();
    stats = await receiver.stats();
    if (stats.unique >= o.n && (await sys.remaining()) === 0) {
      doneAt = Date.now();
      break;
    }
    const pid = sys.workerPid();
    if (pid !== null && cpuSeconds(pid) === null) {
      notes.push('the worker process died');
      break;
    }
    if (Date.now() > o.deadline) break;
    if (Date.now() - lastLog > 10_000) {
      lastLog = Date.now();
      o.log(`  ${sys.spec.id}: ${stats.unique.toLocaleString('en')}/${o.n.toLocaleString('en')} delivered`);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  const endAt = doneAt ?? Date.now();
  const pid = sys.workerPid();
  const workerEnd = pid === null ? null : cpuSeconds(pid);
  const workerStart = pid === null ? undefined : stats.cpuAtFirst?.[pid];
  await sampleBackends();
  const workAfter = await sampleDbWork(o.databases, sys.dbName, sys.harnessStatements());
  const receiverCpuAfter = cpuSeconds(receiver.pid);
  stats = await receiver.stats();
  const tally = await sys.tally();
  if (workAfter.calls === null) notes.push(NO_STATEMENTS_NOTE);
  if (stats.total > stats.unique) notes.push(`${stats.total - stats.unique} duplicate deliveries`);
  notes.push(...(tally.notes ?? []));
  return {
    n: o.n,
    stats,
    doneAt,
    endAt,
    capped: doneAt === null,
    recorded: tally.completed,
    failed: tally.failed,
    retries: tally.retries,
    lags: await receiver.lags(),
    workerCpuSeconds: workerEnd !== null && workerStart !== undefined ? workerEnd - workerStart : null,
    dbCpuSeconds: cpuDelta(o.before.cpu, dbSeen),
    dbWork: await dbWorkPer(o.databases.adminSql, o.before.work, workAfter, stats.unique),
    receiverCpuSeconds: receiverCpuBefore !== null && receiverCpuAfter !== null ? receiverCpuAfter - receiverCpuBefore : null,
    peakRssMiB: pid === null ? null : peakRssMiB(pid),
    notes,
  };
}

/** CPU seconds per 1,000 callbacks, or null without callbacks. */
export function per1k(seconds: number | null, callbacks: number): number | null {
  return seconds === null || callbacks === 0 ? null : (seconds / callbacks) * 1000;
}

/** The common part of a delivery workload's result. */
export function deliveryResult(
  sys: BenchSystem,
  workload: WorkloadId,
  variant: string | null,
  d: Delivery,
  figures: Record<string, number | null>,
  notes: string[] = [],
): BenchResult {
  const ok = !d.capped && d.stats.unique >= d.n && d.recorded >= d.n && d.failed === 0;
  const extra: string[] = [];
  if (d.capped) extra.push(`time cap reached: ${d.stats.unique}/${d.n} delivered, ${d.recorded} recorded`);
  if (d.failed > 0) extra.push(`${d.failed} recorded as failed`);
  if (d.retries) extra.push(`${d.retries} retries`);
  return {
    system: sys.spec.id,
    workload,
    variant,
    ok,
    n: d.n,
    delivered: d.stats.unique,
    recorded: d.recorded,
    capped: d.capped,
    figures: {
      ...figures,
      cpuSecondsPer1k: per1k(d.workerCpuSeconds, d.stats.unique),
      dbCpuSecondsPer1k: per1k(d.dbCpuSeconds, d.stats.unique),
      walBytesPerCallback: d.dbWork.walBytesPerCallback,
      statementsPerCallback: d.dbWork.statementsPerCallback,
      peakRssMiB: d.peakRssMiB,
      receiverCpuSecondsPer1k: per1k(d.receiverCpuSeconds, d.stats.total),
    },
    notes: [...notes, ...d.notes, ...extra],
  };
}

/**
 * Throughput of a delivery: distinct callbacks per second from the first callback to the moment everything
 * was recorded (or the cap).
 */
export function callbacksPerSecond(d: Delivery): number | null {
  if (d.stats.firstAt === null || d.stats.unique === 0) return null;
  const ms = Math.max(1, d.endAt - d.stats.firstAt);
  return d.stats.unique / (ms / 1000);
}
