/**
 * Workload 7, noisy neighbour: tenant A's 30,000 runs, due at once and registered with the worker stopped, go
 * round-robin to 16 destinations (16 ports of the bench receiver); the worker starts and drains them. Tenant B's
 * 200 runs fall due during that drain, evenly spaced from 300 ms after the worker is ready over most of the drain the
 * plan expects (plan.ts, `NoisyPlan`); they are registered once the worker is ready, through the same registration
 * path (Chime: B's own `POST /v1/jobs/batch`; the peers: the same queue as A's jobs), each at its explicit time.
 * Measured: B's fire lag p50/p99/max (receiver time − B's due time), A's drain rate, and A's drain rate without B
 * (the same runs on a fresh system: `NoisyPlan.baseline`) to see what serving B costs A.
 *
 * Callbacks go to `/hook/a` and `/hook/b`, which the receiver counts apart (receiver-process.ts, tags). B's callbacks
 * go to the receiver's first destination, none of A's, so B never waits for a per-destination slot behind A.
 *
 * Chime: A is the bench tenant and B another tenant. Chime shares its claims between the tenant buckets
 * (`shardOf`, src/domain/shard.ts); a B in A's bucket would measure nothing, so B is created again until its bucket
 * differs (logged, and noted in the result). The peers have one queue, as their users would run them: A's and B's
 * jobs are in it side by side.
 */
import { shardOf } from '../../../src/domain/shard.ts';
import type { TagStats } from '../receiver.ts';
import { ChimeSystem, type ChimeTenant } from '../systems/chime.ts';
import { withSystem } from '../systems/index.ts';
import type { BenchSystem, SystemSpec } from '../systems/types.ts';
import { baselineOf, type Delivery, deliveryResult, watchDelivery } from './common.ts';
import type { WorkloadDeps } from './drain.ts';
import { capFor, type NoisyPlan } from './plan.ts';
import type { BenchResult } from './types.ts';

/** The receiver's tags (`/hook/<tag>`) of A's and B's callbacks. */
const TAG_A = 'a';
const TAG_B = 'b';
/** Tenants created for B at most, looking for one outside A's bucket (each lands there with probability 1/64). */
const MAX_TENANT_TRIES = 20;

type Round = {
  delivery: Delivery;
  a: TagStats | undefined;
  b: TagStats | undefined;
  /** B's due times (epoch ms), empty without B. */
  bDue: number[];
  notes: string[];
};

/**
 * B's due times: `bN` evenly spaced from `readyAt + bFirstDueMs` to `readyAt + last`, where `last` is `bSpanFraction`
 * of A's expected drain time, at least 2 × `bFirstDueMs` and at most half the time cap.
 */
export function bDueTimes(p: NoisyPlan, spec: SystemSpec, readyAt: number, capMs: number): number[] {
  const expectedDrainMs = (p.aN / p.expectedPerSecond[spec.id]) * 1000;
  const last = Math.max(2 * p.bFirstDueMs, Math.min(p.bSpanFraction * expectedDrainMs, capMs / 2));
  const step = p.bN > 1 ? (last - p.bFirstDueMs) / (p.bN - 1) : 0;
  return Array.from({ length: p.bN }, (_, i) => readyAt + p.bFirstDueMs + Math.round(i * step));
}

/** A drain rate from the receiver's view of one tag: distinct callbacks ÷ (last − first callback), or null. */
function tagRate(t: TagStats | undefined): number | null {
  if (!t || t.firstAt === null || t.lastAt === null || t.unique === 0) return null;
  return t.unique / (Math.max(1, t.lastAt - t.firstAt) / 1000);
}

const finite = (v: number | null | undefined): number | null => (v === null || v === undefined || !Number.isFinite(v) ? null : v);

/**
 * Creates Chime tenant B, again while it lands in A's bucket (`shardOf`).
 * @throws Error when MAX_TENANT_TRIES tenants all land in A's bucket
 */
async function neighbourTenant(sys: ChimeSystem, deps: WorkloadDeps, notes: string[]): Promise<ChimeTenant> {
  const aBucket = shardOf(sys.tenantId);
  for (let k = 1; k <= MAX_TENANT_TRIES; k++) {
    const t = await sys.createTenant(k === 1 ? 'bench-b' : `bench-b-${k}`);
    const bucket = shardOf(t.tenantId);
    if (bucket !== aBucket) {
      deps.ctx.log(`  chime: tenant A ${sys.tenantId} in bucket ${aBucket}, tenant B ${t.tenantId} in bucket ${bucket}`);
      if (k > 1) notes.push(`tenant B: ${k - 1} tenant(s) created in A's bucket ${aBucket} were set aside; B is in bucket ${bucket}`);
      return t;
    }
    deps.ctx.log(`  chime: tenant B candidate ${t.tenantId} landed in tenant A's bucket ${aBucket}: creating another`);
  }
  throw new Error(`${MAX_TENANT_TRIES} tenants created for B all landed in tenant A's bucket ${aBucket}`);
}

/**
 * One round on a fresh system: A's runs registered with the worker stopped, the worker started, then (when `bUrl` is
 * set) B's runs registered at their times; watched until all are delivered and recorded or the cap.
 */
async function round(sys: BenchSystem, deps: WorkloadDeps, o: { aUrls: string[]; bUrl: string | null; capMs: number }): Promise<Round> {
  const { receiver, ctx } = deps;
  const p = deps.plan.noisy;
  const notes: string[] = [];
  await receiver.reset(0);
  const bTenant = o.bUrl !== null && sys instanceof ChimeSystem ? await neighbourTenant(sys, deps, notes) : null;

  const now = Date.now();
  const enqueue = await sys.enqueue(new Array<number>(p.aN).fill(now), { callbackUrls: o.aUrls });
  ctx.log(
    `  ${sys.spec.id}: registered A's ${p.aN.toLocaleString('en')} runs over ${o.aUrls.length} destinations at ${Math.round(enqueue.jobsPerSecond).toLocaleString('en')}/s`,
  );
  const before = await baselineOf(sys, ctx.databases);
  const spawnedAt = Date.now();
  await sys.startWorker((pid) => receiver.watch([pid]));
  const readyAt = Date.now();

  let bDue: number[] = [];
  if (o.bUrl !== null) {
    bDue = bDueTimes(p, sys.spec, readyAt, o.capMs);
    const e = await sys.enqueue(bDue, { callbackUrls: [o.bUrl], ...(bTenant ? { apiKey: bTenant.apiKey } : {}) });
    const late = Date.now() - bDue[0]!;
    if (late > 0) notes.push(`B's registration ended ${late} ms after B's first run was due: its first lags include registration`);
    ctx.log(
      `  ${sys.spec.id}: registered B's ${bDue.length} runs in ${e.ms} ms, due ${p.bFirstDueMs}–${bDue.at(-1)! - readyAt} ms after the worker was ready`,
    );
  }

  const delivery = await watchDelivery(sys, receiver, {
    n: p.aN + bDue.length,
    deadline: spawnedAt + o.capMs,
    before,
    databases: ctx.databases,
    log: ctx.log,
  });
  const tags = await receiver.tags();
  return { delivery, a: tags[TAG_A], b: tags[TAG_B], bDue, notes };
}

export async function noisy(spec: SystemSpec, deps: WorkloadDeps): Promise<BenchResult[]> {
  const p = deps.plan.noisy;
  const capMs = capFor(deps.plan, spec);
  const aUrls = (await deps.receiver.destinations(p.destinations)).map((destination) => `${destination}/hook/${TAG_A}`);
  const bUrl = `${deps.receiver.url}/hook/${TAG_B}`;

  let alone: { rate: number | null; ok: boolean; notes: string[] } | null = null;
  if (p.baseline) {
    deps.ctx.log(`  ${spec.id}: A alone`);
    alone = await withSystem(spec, deps.ctx, async (sys) => {
      const r = await round(sys, deps, { aUrls, bUrl: null, capMs });
      const res = deliveryResult(sys, 'noisy', null, r.delivery, {});
      return { rate: tagRate(r.a), ok: res.ok, notes: [...r.notes, ...res.notes] };
    });
    deps.ctx.log(`  ${spec.id}: A alone drained at ${Math.round(alone.rate ?? 0).toLocaleString('en')} callbacks/s; now A with B`);
  }

  const result = await withSystem(spec, deps.ctx, async (sys) => {
    const r = await round(sys, deps, { aUrls, bUrl, capMs });
    const aRate = tagRate(r.a);
    const bLag = r.b?.lags;
    const aLastAt = r.a?.lastAt ?? null;
    const bAfterDrain = aLastAt === null ? null : r.bDue.filter((t) => t > aLastAt).length;
    const notes = [...r.notes];
    const aDone = (r.a?.unique ?? 0) >= p.aN;
    if (bAfterDrain && aDone)
      notes.push(`${bAfterDrain} of B's ${r.bDue.length} runs fell due after A's last callback: A drained faster than the plan expects`);
    if ((r.b?.unique ?? 0) < r.bDue.length) notes.push(`B: ${r.b?.unique ?? 0}/${r.bDue.length} delivered`);
    if (!aDone) notes.push(`A: ${r.a?.unique ?? 0}/${p.aN} delivered`);
    if (alone && !alone.ok) notes.push(`A alone did not complete${alone.notes.length ? `: ${alone.notes.join('; ')}` : ''}`);
    const res = deliveryResult(
      sys,
      'noisy',
      null,
      r.delivery,
      {
        bLagP50Ms: finite(bLag?.p50),
        bLagP99Ms: finite(bLag?.p99),
        bLagMaxMs: finite(bLag?.max),
        bEarlyFires: bLag && bLag.count > 0 ? bLag.early : null,
        bSpanMs: r.bDue.length ? r.bDue.at(-1)! - r.bDue[0]! : null,
        bDueAfterADrain: bAfterDrain,
        aDrainMs: r.a && r.a.firstAt !== null && aLastAt !== null ? aLastAt - r.a.firstAt : null,
        aCallbacksPerSecond: aRate,
        aAloneCallbacksPerSecond: alone?.rate ?? null,
        aVsAlonePct: aRate !== null && alone?.rate ? (aRate / alone.rate) * 100 : null,
      },
      notes,
    );
    return { ...res, ok: res.ok && (alone?.ok ?? true) };
  });
  return [result];
}
