/**
 * Crash test (issue #6, docs/design.md invariants 1–3): runs fall due over ~30 s at a real receiver while dispatcher
 * processes are SIGKILLed at random moments and restarted. Afterwards:
 *   - every run was delivered at least once (lost = 0), and every run is in a final state;
 *   - every duplicate delivery belongs to a run whose lease expired: the earlier attempt is in the run's attempt log
 *     as `lease_lost` (logged by the reaper); duplicates carry the same `webhook-id` and a higher `Chime-Attempt`;
 *   - the database and the receiver agree on which runs succeeded and with which attempt.
 * On PostgreSQL: one API process and three dispatchers share the database. On the embedded database (one process
 * per data dir): the single `serve` process is killed and restarted, so recovery happens in the restarted process.
 * The figures are printed (seed, runs, kills, duplicates, lost).
 */
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { openEmbedded } from '../../src/store/embedded.ts';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { type FreshDatabase, freshDatabase, WITH_CITUS } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Received, type Receiver, startReceiver } from '../support/receiver.ts';

/** Deterministic PRNG (mulberry32), so a failing run can be replayed with CHAOS_SEED. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type RunRow = { id: string; status: string; attempts: number };
type AttemptRow = { run_id: string; attempt: number; response_status: number | null; error_class: string | null };

const SPREAD_MS = 30_000;
const FIRST_DUE_MS = 6_000;
/** Lease = callback timeout + margin: short, so killed dispatchers' runs come back within seconds. */
const TIMEOUT_MS = 2_000;
const CHAOS_ENV = { CHIME_LEASE_MARGIN_MS: '1000', CHIME_REAP_INTERVAL_MS: '500', CHIME_SHUTDOWN_GRACE_MS: '2000' };

describe.each(WITH_CITUS)('crash test on $kind', (target) => {
  const shared = target.kind !== 'pglite';
  const RUNS = shared ? 3000 : 600;
  const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 1_000_000);
  const random = prng(seed);
  let db: FreshDatabase;
  let receiver: Receiver;
  let api: ChimeProcess;
  let dispatchers: ChimeProcess[] = [];
  const restarts: Promise<unknown>[] = [];

  afterAll(async () => {
    await Promise.allSettled(restarts);
    for (const d of dispatchers) await d.stop('SIGKILL').catch(() => {});
    if (api && !dispatchers.includes(api)) await api.stop().catch(() => {});
    await receiver?.close();
    await db?.drop();
  });

  it(`delivers every run at least once while dispatchers are SIGKILLed (${RUNS} runs)`, { timeout: 300_000 }, async () => {
    db = await freshDatabase(target);
    // A short random answer time keeps requests in flight at the moments of the kills.
    receiver = await startReceiver(() => ({ status: 200, delayMs: Math.floor(random() * 80) }));
    const env = { ...db.env, ...CHAOS_ENV };
    const dispatcherArgs = shared ? ['serve', '--role', 'dispatcher'] : ['serve'];
    if (shared) {
      api = await startChime(env, ['serve', '--role', 'api']);
      dispatchers = await Promise.all([0, 1, 2].map(() => startChime(env, dispatcherArgs)));
    } else {
      api = await startChime(env, dispatcherArgs);
      dispatchers = [api];
    }
    const tenant: TestTenant = await createTestTenant(api.url, 'chaos');

    // Register: `delay` jobs, due FIRST_DUE_MS + i × spacing after registration.
    const spacing = SPREAD_MS / RUNS;
    const jobIds: string[] = [];
    for (let from = 0; from < RUNS; from += 1000) {
      const jobs = Array.from({ length: Math.min(1000, RUNS - from) }, (_, k) => ({
        schedule: { type: 'delay', delayMs: Math.round(FIRST_DUE_MS + (from + k) * spacing) },
        callback: { url: `${receiver.url}/chaos`, timeoutMs: TIMEOUT_MS },
        retry: { strategy: 'fixed', maxAttempts: 20, initialDelayMs: 100 },
        relevancyWindowMs: 600_000,
        payload: { i: from + k },
      }));
      const res = await tenant.api.post('/v1/jobs/batch', { jobs });
      expect(res.status).toBe(200);
      for (const r of res.body.results) {
        expect(r.status).toBe(201);
        jobIds.push(r.job.jobId);
      }
    }
    expect(jobIds).toHaveLength(RUNS);

    // Kill a random live dispatcher every 2–5 s (the first once runs are flowing) until every run has arrived. A killed
    // dispatcher restarts in the background, so the pace of the kills does not hang on how long a start takes on a
    // loaded machine; on PostgreSQL one other dispatcher is always left running.
    const kills: number[] = [];
    const restarting = new Set<number>();
    const allArrived = () => new Set(receiver.received.map((r) => r.headers['webhook-id'])).size >= RUNS;
    const victims = () => dispatchers.map((_, i) => i).filter((i) => !restarting.has(i));
    await eventually(() => receiver.received.length > 0, { timeoutMs: 60_000, what: 'the first callback' });
    const deadline = Date.now() + 180_000;
    while (!allArrived() && Date.now() < deadline) {
      const waitUntil = Date.now() + 2_000 + random() * 3_000;
      await eventually(() => allArrived() || (Date.now() >= waitUntil && victims().length > (shared ? 1 : 0)), {
        timeoutMs: 60_000,
        intervalMs: 50,
        what: 'the next kill',
      });
      if (allArrived() || kills.length >= 8) {
        await eventually(allArrived, { timeoutMs: Math.max(1, deadline - Date.now()), what: `all ${RUNS} runs to arrive` }).catch(() => {});
        break;
      }
      const live = victims();
      const i = live[Math.floor(random() * live.length)]!;
      const victim = dispatchers[i]!;
      kills.push(Date.now());
      victim.child.kill('SIGKILL');
      restarting.add(i);
      const restart = (async () => {
        await victim.stop();
        // The embedded service comes back on its port, where the tenant's API client points.
        const restarted = await startChime(shared ? env : { ...env, PORT: String(victim.port) }, dispatcherArgs);
        dispatchers[i] = restarted;
        if (!shared) api = restarted;
        restarting.delete(i);
      })();
      restart.catch(() => {}); // awaited below; this only keeps a failed start from being reported twice
      restarts.push(restart);
    }
    await Promise.all(restarts);

    // Wait until every run is final, then read the database.
    let state = await finalState(shared ? db.url! : null, tenant, jobIds);
    if (!shared) {
      // The embedded database can only be opened by one process: stop the service to read it.
      await api.stop();
      state = await readEmbedded(db.dataDir!);
    }
    const { runs: dbRuns, attempts: dbAttempts } = state;

    const deliveries = new Map<string, Received[]>();
    for (const r of receiver.received) {
      const id = String(r.headers['webhook-id']);
      expect(r.headers['chime-run-id']).toBe(id);
      deliveries.set(id, [...(deliveries.get(id) ?? []), r]);
    }
    const duplicates = [...deliveries.values()].filter((d) => d.length > 1);
    const figures = {
      seed,
      database: target.kind,
      dispatchers: dispatchers.length,
      runs: RUNS,
      kills: kills.length,
      deliveries: receiver.received.length,
      duplicateDeliveries: receiver.received.length - deliveries.size,
      lost: dbRuns.filter((r) => !deliveries.has(r.id)).length,
      duplicatesPerKill: Number(((receiver.received.length - deliveries.size) / Math.max(1, kills.length)).toFixed(1)),
    };
    // What bounds them: a kill loses the results of the callbacks it had in flight and of those whose outcomes were
    // not yet written (gathered while other attempts were under way, at most 100 ms, or in a write not yet committed).
    console.log(
      `crash test figures: ${JSON.stringify(figures)} (each duplicate is a callback sent before a kill whose result was not yet written)`,
    );

    expect(kills.length).toBeGreaterThanOrEqual(3);
    // Issue #30: at most 8 sent twice per kill on average with three dispatchers (12–16 when outcomes always gathered
    // 100 ms). One process on the embedded database loses all its dispatcher's unwritten results at once.
    if (shared && target.kind === 'postgres') expect(figures.duplicatesPerKill).toBeLessThanOrEqual(8);
    expect(dbRuns).toHaveLength(RUNS);
    expect(figures.lost).toBe(0);
    // Every run ended, and succeeded (the receiver always answers 200 in time).
    expect(dbRuns.filter((r) => r.status !== 'succeeded')).toEqual([]);
    // The receiver saw nothing that is not a run.
    const runIds = new Set(dbRuns.map((r) => r.id));
    expect([...deliveries.keys()].filter((id) => !runIds.has(id))).toEqual([]);

    const recorded = new Map<string, AttemptRow[]>();
    for (const a of dbAttempts) recorded.set(a.run_id, [...(recorded.get(a.run_id) ?? []), a]);
    for (const run of dbRuns) {
      const got = deliveries.get(run.id)!;
      // The attempt that ended the run (a 200 that came after its lease was lost is logged as `lease_lost`).
      const success = (recorded.get(run.id) ?? []).filter((a) => a.response_status === 200 && a.error_class === null);
      // The database and the receiver agree: one recorded success, an attempt the receiver did get.
      const detail = `run ${run.id}: recorded ${JSON.stringify(recorded.get(run.id))}, delivered ${JSON.stringify(got.map((g) => [g.headers['chime-attempt'], g.at]))}, kills ${JSON.stringify(kills)}`;
      expect(success, detail).toHaveLength(1);
      expect(got.map((g) => Number(g.headers['chime-attempt']))).toContain(success[0]!.attempt);
    }
    for (const dup of duplicates) {
      const id = String(dup[0]!.headers['webhook-id']);
      const attemptsSeen = dup.map((d) => Number(d.headers['chime-attempt']));
      // Each re-delivery is a later attempt of the same run, under the same webhook-id...
      expect(attemptsSeen, `attempts of run ${id}`).toEqual([...attemptsSeen].sort((a, b) => a - b));
      expect(new Set(attemptsSeen).size).toBe(attemptsSeen.length);
      // ...and every delivery but the last is an attempt whose lease was lost (the reaper logged it `lease_lost`).
      for (const earlier of dup.slice(0, -1)) {
        const attempt = Number(earlier.headers['chime-attempt']);
        const logged = (recorded.get(id) ?? []).find((a) => a.attempt === attempt);
        expect(logged?.error_class, `attempt ${attempt} of run ${id}`).toBe('lease_lost');
      }
    }
  });
});

/**
 * Polls until every run of `jobIds` is final. Reads PostgreSQL directly (and returns its rows); the embedded database
 * is polled through the API (and read afterwards, once its process has stopped).
 */
async function finalState(url: string | null, tenant: TestTenant, jobIds: string[]): Promise<{ runs: RunRow[]; attempts: AttemptRow[] }> {
  const FINAL = new Set(['succeeded', 'failed', 'expired', 'skipped', 'canceled']);
  if (url) {
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await eventually(
        async () => {
          const [row] = await sql<
            { n: string }[]
          >`select count(*) as n from runs where status not in ('succeeded', 'failed', 'expired', 'skipped', 'canceled')`;
          return Number(row!.n) === 0;
        },
        { timeoutMs: 60_000, what: 'every run to be final' },
      );
      const runs = await sql<RunRow[]>`select id, status, attempts from runs`;
      const attempts = await sql<AttemptRow[]>`select run_id, attempt, response_status, error_class from attempts`;
      return { runs: [...runs], attempts: [...attempts] };
    } finally {
      await sql.end();
    }
  }
  const pending = new Set(jobIds);
  await eventually(
    async () => {
      for (const jobId of [...pending]) {
        const res = await tenant.api.get(`/v1/jobs/${jobId}/runs`);
        if (res.status === 200 && res.body.runs.length > 0 && res.body.runs.every((r: { status: string }) => FINAL.has(r.status)))
          pending.delete(jobId);
      }
      return pending.size === 0;
    },
    { timeoutMs: 90_000, what: `every run to be final (${pending.size} jobs pending)` },
  );
  return { runs: [], attempts: [] };
}

/** Reads runs and attempts from a stopped embedded database. */
async function readEmbedded(dataDir: string): Promise<{ runs: RunRow[]; attempts: AttemptRow[] }> {
  const e = await openEmbedded(dataDir);
  try {
    const runs = (await e.pg.query<RunRow>('select id, status, attempts from runs')).rows;
    const attempts = (await e.pg.query<AttemptRow>('select run_id, attempt, response_status, error_class from attempts')).rows;
    return { runs, attempts };
  } finally {
    await e.close();
  }
}
