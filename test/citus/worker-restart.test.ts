/**
 * A Citus worker crashes under load and comes back (issue #21): a coordinator and two workers, an API process and
 * two dispatchers against the coordinator, tenants whose buckets live on each worker, and runs falling due over
 * ~15 s at a real receiver. While callbacks flow, one worker is stopped with `pg_ctl -m immediate` (no checkpoint, as
 * a crash leaves it) and started again after 8 s; meanwhile every tenant keeps registering jobs. Afterwards:
 *   - every run accepted (before the crash, or with a 201 during it) was delivered and succeeded: 0 lost;
 *   - a run delivered twice was re-sent as a new attempt after its lease expired (same webhook-id, higher
 *     Chime-Attempt), never the same attempt twice;
 *   - a registration refused during the crash was refused with 503 problem+json and `Retry-After`, not a 500;
 *   - the tenants on the other worker were served throughout.
 * The figures are printed (runs, registrations accepted and refused during the crash, duplicates, lost).
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardOf } from '../../src/domain/shard.ts';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { CITUS_TESTS, type CitusCluster, startCitusCluster } from '../support/citus.ts';
import { TEST_ENCRYPTION_KEY } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { allArrived, type Receiver, startReceiver } from '../support/receiver.ts';

if (!CITUS_TESTS) console.warn('test/citus: skipped, CHIME_TEST_CITUS is not 1 (set it to start a Citus cluster with ../shared/citus)');

const RUNS_PER_TENANT = 300;
const SPREAD_MS = 15_000;
const FIRST_DUE_MS = 4_000;
/**
 * How long the worker stays down, counted from when it is gone: longer than the claim pacer's longest backoff after a
 * failed claim (5 s, claim-pacer.ts), which a claim caught by the crash may start.
 */
const OUTAGE_MS = 8_000;
/** Short leases (callback timeout + margin), so runs whose finish was lost come back within seconds. */
const TIMEOUT_MS = 2_000;
/** Lets the diagnosis read the processes' /metrics. */
const METRICS_TOKEN = 'worker-restart-metrics-token-0123456789';
const CHAOS_ENV = { CHIME_LEASE_MARGIN_MS: '1000', CHIME_REAP_INTERVAL_MS: '500' };

type Placed = TestTenant & { port: number };

describe.runIf(CITUS_TESTS)('a Citus worker crashes and restarts under load', () => {
  let cluster: CitusCluster;
  let admin: postgres.Sql;
  let receiver: Receiver;
  const processes: ChimeProcess[] = [];

  beforeAll(async () => {
    cluster = await startCitusCluster(2);
    admin = postgres(cluster.url, { max: 2, onnotice: () => {} });
    receiver = await startReceiver(() => ({ status: 200 }));
  }, 180_000);
  afterAll(async () => {
    // Graceful shutdown is not what this test is about, and a process still retrying a write to the worker would wait.
    await Promise.all(processes.map((p) => p.stop('SIGKILL').catch(() => null)));
    await receiver?.close();
    await admin?.end();
    await cluster?.stop();
  }, 120_000);

  /**
   * What a failure needs to be understood: the runs by status on each worker, and what the processes logged at warn
   * and above (their last 40 such lines each).
   */
  async function diagnosis(tenants: Placed[], crashed: number): Promise<string> {
    const onCrashed = tenants.filter((t) => t.port === crashed).map((t) => t.tenantId);
    const runs = await admin<{ crashed: boolean; status: string; leased: boolean; n: number }[]>`
      select tenant_id = any(${onCrashed}::uuid[]) as crashed, status, lease_owner is not null as leased, count(*)::int as n
      from runs group by 1, 2, 3 order by 1, 2, 3`.catch((e: Error) => `runs unreadable: ${e.message}`);
    const logs = processes.map((p, i) => {
      const output = p.output().split('\n');
      const lines = output.filter((l) => /"level":(4|5|6)0/.test(l)).slice(-40);
      const pacing = output.filter((l) => /"level":20,/.test(l)).slice(-30);
      return `--- process ${i} (${p.child.exitCode === null ? 'running' : `exited ${p.child.exitCode}`})\n${lines.join('\n')}\n--- its last claims and sleeps\n${pacing.join('\n')}`;
    });
    // What each node is doing: the prepared transactions a crash left (they hold row locks until Citus recovers them)
    // and the statements under way.
    const nodes = await Promise.all(
      [cluster.coordinatorPort, ...cluster.workerPorts].map(async (port) => {
        const node = postgres(cluster.url.replace(`:${cluster.coordinatorPort}/`, `:${port}/`), { max: 1, onnotice: () => {} });
        try {
          const prepared = await node`select gid, prepared from pg_prepared_xacts`;
          const active = await node`select pid, state, wait_event_type, wait_event, now() - xact_start as age, left(query, 160) as query
            from pg_stat_activity where state <> 'idle' and pid <> pg_backend_pid() and backend_type = 'client backend'`;
          return `node ${port}: prepared ${JSON.stringify(prepared)}; active ${JSON.stringify(active)}`;
        } catch (e) {
          return `node ${port}: unreadable: ${(e as Error).message}`;
        } finally {
          await node.end();
        }
      }),
    );
    const waiting = await admin`select status, lease_owner is not null as leased, lease_expires_at, next_attempt_at, attempts, now() as now
      from runs where status not in ('succeeded', 'failed', 'expired', 'canceled') order by next_attempt_at limit 10`.catch(
      (e: Error) => `unreadable: ${e.message}`,
    );
    // Where each dispatcher's runs are: in flight per destination against its limit, fired, claims and finishes.
    const metrics = await Promise.all(
      processes.map(async (p, i) => {
        const text = await fetch(`${p.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
          .then((r) => r.text())
          .catch((e: Error) => `unreadable: ${e.message}`);
        const wanted =
          /^chime_(in_flight|destination_limit|runs_fired_total|attempts_total|leases_reaped_total|database_up|(claim|finish)_duration_seconds_count)\b/;
        return `--- process ${i} metrics\n${text
          .split('\n')
          .filter((l) => wanted.test(l))
          .join('\n')}`;
      }),
    );
    return `runs (crashed worker's tenants?, status, leased, count): ${JSON.stringify(runs)}\nfirst open runs: ${JSON.stringify(waiting)}\n${nodes.join('\n')}\n${metrics.join('\n')}\n${logs.join('\n')}`;
  }

  it('loses no accepted run, and every tenant on either worker is delivered', { timeout: 300_000 }, async () => {
    const env = {
      DATABASE_URL: cluster.url,
      CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      CHIME_MIGRATE: 'true',
      CHIME_METRICS_TOKEN: METRICS_TOKEN,
      // The claim pacer's debug lines (each claim, each sleep) for the diagnosis.
      CHIME_LOG_LEVEL: 'debug',
      ...CHAOS_ENV,
    };
    const api = await startChime(env, ['serve', '--role', 'api']);
    processes.push(api, ...(await Promise.all([0, 1].map(() => startChime(env, ['serve', '--role', 'dispatcher'])))));

    // Two tenants on each worker.
    const [crashed, survivor] = cluster.workerPorts as [number, number];
    const tenants: Placed[] = [];
    for (let i = 0; i < 40 && tenants.length < 4; i++) {
      const t = await createTestTenant(api.url, `t${i}`);
      const port = await cluster.workerOf(shardOf(t.tenantId));
      if (tenants.filter((p) => p.port === port).length < 2) tenants.push({ ...t, port });
    }
    expect(tenants.map((t) => t.port).sort()).toEqual([crashed, crashed, survivor, survivor].sort());

    // Every accepted job carries a unique mark in its payload; the receiver must see each one.
    const accepted = new Set<string>();
    const job = (mark: string, dueInMs: number) => ({
      schedule: { type: 'delay', delayMs: dueInMs },
      callback: { url: `${receiver.url}/w`, timeoutMs: TIMEOUT_MS },
      retry: { strategy: 'fixed', maxAttempts: 30, initialDelayMs: 250 },
      relevancyWindowMs: 600_000,
      payload: { mark },
    });
    for (const t of tenants) {
      const jobs = Array.from({ length: RUNS_PER_TENANT }, (_, i) =>
        job(`${t.tenantId}/${i}`, FIRST_DUE_MS + Math.round((i * SPREAD_MS) / RUNS_PER_TENANT)),
      );
      const res = await t.api.post('/v1/jobs/batch', { jobs });
      expect(res.status).toBe(200);
      expect(res.body.results.every((r: { status: number }) => r.status === 201)).toBe(true);
      for (const j of jobs) accepted.add(j.payload.mark);
    }
    const markOf = (body: string) => (JSON.parse(body) as { mark: string }).mark;
    const arrived = () => new Set(receiver.received.map((r) => markOf(r.body)));
    const arrivedFrom = (t: Placed) => [...arrived()].filter((m) => m.startsWith(t.tenantId)).length;
    await eventually(() => tenants.every((t) => arrivedFrom(t) > 0), { timeoutMs: 60_000, what: 'callbacks of every tenant' });

    // The crash: every tenant keeps registering while the worker is down.
    // The outage counts from when the worker is gone: while it dies (killNode waits for that, seconds on a loaded
    // machine) the coordinator's connections to it may hang, and a CI run saw that whole time counted as the outage.
    await cluster.killNode(crashed);
    const crashedAt = Date.now();
    const refused: number[] = [];
    let n = 0;
    while (Date.now() - crashedAt < OUTAGE_MS) {
      for (const t of tenants) {
        const mark = `${t.tenantId}/outage-${n++}`;
        const res = await t.api.post('/v1/jobs', job(mark, 1_000));
        if (res.status === 201) accepted.add(mark);
        else {
          expect(res.status, JSON.stringify(res.body)).toBe(503);
          expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
          expect(res.headers.get('retry-after')).toBeTruthy();
          expect(t.port, 'a tenant on the live worker was refused').toBe(crashed);
          refused.push(res.status);
        }
      }
    }
    const restartedAt = Date.now();
    await cluster.startNode(crashed);
    // The tenants on the live worker were served while the other was down.
    const servedDuringOutage = receiver.received.filter((r) => r.at >= crashedAt && r.at < restartedAt).map((r) => markOf(r.body));
    for (const t of tenants.filter((p) => p.port === survivor)) {
      expect(
        servedDuringOutage.filter((m) => m.startsWith(t.tenantId)).length,
        `callbacks of ${t.tenantId} during the outage`,
      ).toBeGreaterThan(0);
    }

    await eventually(() => allArrived(accepted, arrived()), { timeoutMs: 120_000, what: 'every accepted run to arrive' }).catch(
      async (err: Error) => {
        throw new Error(`${err.message}\n${await diagnosis(tenants, crashed)}`);
      },
    );

    // The database agrees: every run final and succeeded; a duplicate only where a lease expired.
    await eventually(
      async () => {
        const [row] = await admin<
          { open: number }[]
        >`select count(*)::int as open from runs where status not in ('succeeded', 'failed', 'expired', 'canceled')`;
        return row!.open === 0;
      },
      { timeoutMs: 60_000, what: 'every run to be final' },
    );
    const byStatus = await admin<{ status: string; n: number }[]>`select status, count(*)::int as n from runs group by status`;
    expect(byStatus).toEqual([{ status: 'succeeded', n: accepted.size }]);
    // A run delivered twice was re-sent after its lease expired (its outcome could not be written while the worker
    // was down): a new attempt, with a higher Chime-Attempt and the same webhook-id, never the same attempt twice.
    const deliveries = new Map<string, { id: string; attempt: string }[]>();
    for (const r of receiver.received) {
      const list = deliveries.get(markOf(r.body)) ?? [];
      list.push({ id: String(r.headers['webhook-id']), attempt: String(r.headers['chime-attempt']) });
      deliveries.set(markOf(r.body), list);
    }
    const duplicated = [...deliveries].filter(([, d]) => d.length > 1);
    for (const [mark, d] of duplicated) {
      expect(new Set(d.map((x) => x.id)).size, mark).toBe(1);
      expect(new Set(d.map((x) => x.attempt)).size, `${mark}: one attempt delivered twice`).toBe(d.length);
    }
    const lost = [...accepted].filter((m) => !deliveries.has(m));
    const onLiveWorker = (mark: string) => tenants.some((t) => t.port === survivor && mark.startsWith(t.tenantId));
    const liveDuplicated = duplicated.filter(([mark]) => onLiveWorker(mark)).length;
    console.log(
      `citus worker crash: ${accepted.size} runs accepted (${n - refused.length} of ${n} registrations during the ${OUTAGE_MS} ms outage), ` +
        `${refused.length} refused with 503, ${duplicated.length} delivered twice (expired leases; ${liveDuplicated} of them ` +
        `the live worker's tenants'), ${lost.length} lost`,
    );
    expect(lost).toEqual([]);
  });
});
