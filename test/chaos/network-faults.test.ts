/**
 * Network faults between Chime and PostgreSQL (issue #30, point 3). One process (`serve`: API and dispatcher) reaches
 * the database through a fault-injecting TCP proxy (test/support/fault-proxy.ts); another dispatcher and the API the
 * clients use connect directly. Under registrations (half of them at-most-once) and due runs, the proxy:
 *   1. resets connections in the middle of transactions (the next statement or COMMIT forwarded, then RST both ways);
 *   2. adds 200 ms of latency each way, for 8 s while the direct dispatcher is away: the faulty process does the
 *      sending with every round trip 400 ms longer;
 *   3. black-holes every connection for 10 s: bytes vanish both ways, nothing is closed, the client's data is
 *      acknowledged by the proxy (so TCP keepalives see nothing wrong), and the connections stay dead afterwards.
 * Must hold: the faulty process notices its dead connections within a bounded time (src/store/postgres.ts: nothing
 * received for statement_timeout + 5 s while a statement is outstanding) and serves again without a restart; its API
 * answers every request (503 while it cannot reach the database, never a hang, never a 500); the direct dispatcher
 * keeps delivering on time meanwhile (the server ends the dead sessions' transactions, idle_in_transaction_session_timeout,
 * so their row locks go); nothing is lost; no at-most-once run is sent twice. The figures are printed.
 */
import { execFile } from 'node:child_process';
import { chmod, chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql as drizzleSql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { errorChain, query } from '../../src/store/db.ts';
import { ANSWER_GRACE_MS, CONNECTION_SETTINGS, openPostgres } from '../../src/store/postgres.ts';
import { apiClient, createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, killAll, startChime } from '../support/chime-process.ts';
import { type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.ts';
import { type PrivatePostgres, postgresBinDir, startPrivatePostgres } from '../support/private-postgres.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { selfSignedLocalhost } from '../support/tls.ts';

const HOLE_MS = 10_000;
/** How long a dead connection may go unnoticed: the watch's limit, plus its 0.5 s rounds and a loaded machine's slack. */
const DETECTION_BOUND_MS = CONNECTION_SETTINGS.statementTimeoutMs + ANSWER_GRACE_MS + 5_000;
const METRICS_TOKEN = 'network-faults-metrics-token';

describe.runIf(!!process.env.TEST_DATABASE_URL)('network faults between Chime and PostgreSQL', () => {
  let db: FreshDatabase;
  let proxy: FaultProxy;
  let receiver: Receiver;
  const procs: [string, ChimeProcess][] = [];

  afterAll(async () => {
    await killAll(procs);
    await proxy?.close();
    await receiver?.close();
    await db?.drop();
  });

  it('survives resets mid-transaction, latency and a 10 s black hole: nothing lost, no at-most-once run twice', {
    timeout: 170_000,
  }, async () => {
    db = await freshDatabase({ kind: 'postgres' });
    const upstream = new URL(db.url!);
    proxy = await startFaultProxy(upstream.hostname, Number(upstream.port || 5432));
    receiver = await startReceiver(() => ({ status: 200, delayMs: Math.floor(Math.random() * 40) }));
    const env = { ...db.env, CHIME_REAP_INTERVAL_MS: '1000', CHIME_METRICS_TOKEN: METRICS_TOKEN };
    const api = await startChime(env, ['serve', '--role', 'api']);
    procs.push(['api', api]);
    procs.push(['direct dispatcher', await startChime(env, ['serve', '--role', 'dispatcher'])]);
    const faulty = await startChime({ ...env, DATABASE_URL: proxy.urlFor(db.url!) }, ['serve']);
    procs.push(['faulty process', faulty]);
    const tenant: TestTenant = await createTestTenant(api.url, 'network-faults');
    const faultyApi = apiClient(faulty.url, tenant.apiKey, (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(60_000) }));
    const fired = async () => {
      const text = await (await fetch(`${faulty.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
      return Number(/^chime_runs_fired_total (\d+)/m.exec(text)?.[1] ?? 0);
    };

    // Clients register a job every 40 ms through the direct API, due 1–3 s later; every other one at-most-once.
    const accepted = new Map<string, { due: number; atMostOnce: boolean }>();
    const statuses = new Map<number, number>();
    let registering = true;
    let i = 0;
    const load = (async () => {
      while (registering) {
        const atMostOnce = i % 2 === 1;
        const r = await tenant.api
          .post('/v1/jobs', {
            schedule: { type: 'delay', delayMs: 1000 + (i++ % 2000) },
            callback: { url: `${receiver.url}/faults`, timeoutMs: 2000 },
            retry: { strategy: 'fixed', maxAttempts: 20, initialDelayMs: 500 },
            ...(atMostOnce ? { deliveryMode: 'at-most-once' } : {}),
          })
          .catch(() => ({ status: 0, body: null }));
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status === 201) accepted.set(r.body.jobId, { due: Date.parse(r.body.nextRunAt), atMostOnce });
        await new Promise((res) => setTimeout(res, 40));
      }
    })();

    try {
      await eventually(async () => receiver.received.length >= 40 && (await fired()) > 5, {
        timeoutMs: 40_000,
        what: 'both dispatchers delivering',
      });

      // 1. Resets in the middle of transactions, and once of every connection.
      const resets = 12;
      proxy.resetMidTransaction(resets);
      await eventually(() => proxy.stats.midTransactionResets >= resets, { timeoutMs: 30_000, what: `${resets} resets mid-transaction` });
      const resetAll = proxy.resetAll();
      const firedAfterResets = await fired();
      await eventually(async () => (await fired()) > firedAfterResets + 5, {
        timeoutMs: 30_000,
        what: 'the faulty process to deliver after the resets',
      });

      // 2. 200 ms each way, for 8 s while the direct dispatcher is away (stopped by SIGTERM, which gives its unsent runs
      // back, and started again after): the runs due are the faulty process's to send.
      const directAt = procs.findIndex(([name]) => name === 'direct dispatcher');
      expect(await procs[directAt]![1].stop('SIGTERM')).toBe(0);
      proxy.latency(200);
      const latencyAt = Date.now();
      const firedBeforeLatency = await fired();
      await new Promise((r) => setTimeout(r, 8_000));
      const firedDuringLatency = (await fired()) - firedBeforeLatency;
      proxy.latency(0);
      const latencyEndAt = Date.now();
      procs[directAt] = ['direct dispatcher', await startChime(env, ['serve', '--role', 'dispatcher'])];
      expect(firedDuringLatency, 'runs the faulty process sent with 200 ms latency').toBeGreaterThan(20);

      // 3. The black hole. The faulty process's API is asked every second meanwhile.
      const firedBeforeHole = await fired();
      proxy.blackhole();
      const holeAt = Date.now();
      const probes: Promise<{ at: number; ms: number; status: number }>[] = [];
      const asking = setInterval(() => {
        const at = Date.now();
        probes.push(
          faultyApi.get('/v1/jobs?limit=1').then(
            (r) => ({ at, ms: Date.now() - at, status: r.status }),
            () => ({ at, ms: Date.now() - at, status: -1 }),
          ),
        );
      }, 1000);
      await new Promise((r) => setTimeout(r, HOLE_MS));
      proxy.heal();
      const healedAt = Date.now();
      // It serves again on its own: its API answers 200, and its dispatcher sends runs again.
      await eventually(async () => (await faultyApi.get('/v1/jobs?limit=1')).status === 200, {
        timeoutMs: DETECTION_BOUND_MS + 10_000,
        what: "the faulty process's API to answer 200 again",
      });
      const apiBackAt = Date.now();
      await eventually(async () => (await fired()) > firedBeforeHole, { timeoutMs: 30_000, what: 'the faulty dispatcher to send again' });
      const firedBackAt = Date.now();
      clearInterval(asking);
      const answered = await Promise.all(probes);

      registering = false;
      await load;

      // Nothing lost: every at-least-once job delivered; every at-most-once run delivered once or failed, never twice.
      const counted = () => {
        const byJob = new Map<string, number>();
        for (const r of receiver.received)
          byJob.set(r.headers['chime-job-id'] as string, (byJob.get(r.headers['chime-job-id'] as string) ?? 0) + 1);
        return byJob;
      };
      const atLeastOnce = [...accepted].filter(([, j]) => !j.atMostOnce).map(([id]) => id);
      const atMostOnce = [...accepted].filter(([, j]) => j.atMostOnce).map(([id]) => id);
      await eventually(
        () => {
          const byJob = counted();
          return atLeastOnce.every((id) => byJob.has(id));
        },
        {
          timeoutMs: 90_000,
          what: `every at-least-once job to be delivered (${atLeastOnce.filter((id) => !counted().has(id)).length} missing)`,
        },
      );
      const sql = postgres(db.url!, { max: 1, onnotice: () => {} });
      let atMostOnceFailed = 0;
      let deliveries = counted();
      try {
        await eventually(
          async () => {
            const rows = await sql<
              { n: string }[]
            >`select count(*) as n from runs where job_id = any(${[...accepted.keys()]}::uuid[]) and status not in ('succeeded', 'failed')`;
            return Number(rows[0]!.n) === 0;
          },
          { timeoutMs: 60_000, what: 'every run final' },
        );
        const rows = await sql<
          { job_id: string; status: string }[]
        >`select job_id, status from runs where job_id = any(${atMostOnce}::uuid[])`;
        deliveries = counted();
        for (const r of rows) {
          if (r.status === 'failed') atMostOnceFailed++;
          else expect(deliveries.get(r.job_id), `at-most-once job ${r.job_id} succeeded`).toBe(1);
        }
        expect(rows.length).toBe(atMostOnce.length);
      } finally {
        await sql.end();
      }
      deliveries = counted();
      const sentTwice = atMostOnce.filter((id) => (deliveries.get(id) ?? 0) > 1);
      expect(sentTwice, 'at-most-once jobs delivered more than once').toEqual([]);
      expect(atLeastOnce.filter((id) => !deliveries.has(id))).toEqual([]);
      for (const [name, p] of procs) expect(p.child.exitCode, `${name} exited`).toBeNull();
      expect([...statuses.keys()], 'the direct API answered only 201').toEqual([201]);

      // The faulty process noticed its dead connections within the bound, and its API always answered: 200, or 503.
      const detections = faulty
        .output()
        .split('\n')
        .filter((l) => l.includes('received nothing for'))
        .map((l) => (JSON.parse(l) as { time: number }).time)
        .filter((t) => t >= holeAt);
      expect(detections.length, 'the faulty process logged a dead connection').toBeGreaterThan(0);
      const detectedAfterMs = Math.min(...detections) - holeAt;
      expect(detectedAfterMs).toBeLessThanOrEqual(DETECTION_BOUND_MS);
      expect(
        answered.filter((a) => a.status !== 200 && a.status !== 503),
        `answers of the faulty process's API: ${JSON.stringify(answered)}`,
      ).toEqual([]);
      expect(Math.max(...answered.map((a) => a.ms))).toBeLessThanOrEqual(DETECTION_BOUND_MS);

      // The direct dispatcher kept delivering while the faulty one could not: runs due in the hole went out on time.
      const firstDelivery = new Map<string, number>();
      for (const r of receiver.received) {
        const id = r.headers['chime-job-id'] as string;
        if (!firstDelivery.has(id)) firstDelivery.set(id, r.at);
      }
      const dueInHole = [...accepted].filter(([, j]) => j.due >= holeAt + 500 && j.due < holeAt + HOLE_MS);
      const late = dueInHole.map(([id, j]) => (firstDelivery.get(id) ?? Infinity) - j.due).sort((a, b) => a - b);
      const onTime = late.filter((ms) => ms <= 3_000).length;
      expect(dueInHole.length).toBeGreaterThan(20);
      expect(
        onTime / dueInHole.length,
        `runs due in the hole delivered within 3 s: ${onTime} of ${dueInHole.length}`,
      ).toBeGreaterThanOrEqual(0.8);

      const dueInLatency = [...accepted].filter(([, j]) => j.due >= latencyAt + 1_000 && j.due < latencyEndAt - 1_000);
      const latencyLate = dueInLatency.map(([id, j]) => (firstDelivery.get(id) ?? Infinity) - j.due).sort((a, b) => a - b);
      const perRun = new Set(receiver.received.map((r) => r.headers['webhook-id']));
      console.log(
        `network-faults test figures: ${JSON.stringify({
          accepted: accepted.size,
          atMostOnce: atMostOnce.length,
          atMostOnceFailedUnsent: atMostOnceFailed,
          atMostOnceSentTwice: sentTwice.length,
          deliveries: receiver.received.length,
          duplicates: receiver.received.length - perRun.size,
          lost: atLeastOnce.filter((id) => !deliveries.has(id)).length,
          midTransactionResets: proxy.stats.midTransactionResets,
          resetAll,
          firedDuringLatency,
          dueInLatencyLatenessP50Ms: latencyLate[Math.floor(latencyLate.length / 2)],
          holeMs: healedAt - holeAt,
          deadConnectionNoticedAfterMs: detectedAfterMs,
          faultyApiBackAfterHoleMs: apiBackAt - holeAt,
          faultyDispatcherBackAfterHoleMs: firedBackAt - holeAt,
          faultyApiAnswers: answered.map((a) => `${a.status}/${a.ms}ms`).join(' '),
          dueInHole: dueInHole.length,
          dueInHoleOnTime: onTime,
          dueInHoleLatenessP50Ms: late[Math.floor(late.length / 2)],
          dueInHoleLatenessMaxMs: late.at(-1),
        })}`,
      );
    } finally {
      registering = false;
      await load;
    }
  });
});

/**
 * The connector negotiates TLS itself (so that its watch reads the protocol, not ciphertext): each `sslmode` reaches the
 * server as postgres.js would have it, and a dead connection is noticed over TLS too (here with `statement_timeout`
 * lowered in DATABASE_URL, which the watch follows).
 */
describe.runIf(postgresBinDir() !== null)('database connections over TLS', () => {
  let pg: PrivatePostgres;
  let proxy: FaultProxy;
  let certDir: string;
  afterAll(async () => {
    await proxy?.close();
    await pg?.destroy();
    if (certDir) await rm(certDir, { recursive: true, force: true });
  });

  it('connects with each sslmode, and notices a black-holed TLS connection', { timeout: 90_000 }, async () => {
    pg = await startPrivatePostgres();
    // A self-signed certificate, readable by the server (as root it runs as `postgres`), switched on by a reload.
    certDir = await mkdtemp(join(tmpdir(), 'chime-pg-tls-'));
    const { certFile, keyFile } = selfSignedLocalhost(certDir);
    if (userInfo().uid === 0) {
      const id = async (flag: string) => Number((await promisify(execFile)('id', [flag, 'postgres'])).stdout.trim());
      const [uid, gid] = [await id('-u'), await id('-g')];
      for (const f of [certDir, keyFile, certFile]) await chown(f, uid, gid);
    }
    await chmod(keyFile, 0o600);
    const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
    await admin.unsafe(`alter system set ssl_cert_file = '${certFile}'`);
    await admin.unsafe(`alter system set ssl_key_file = '${keyFile}'`);
    await admin.unsafe(`alter system set ssl = on`);
    await admin`select pg_reload_conf()`;
    await admin.end();

    const sslOf = async (url: string) => {
      const database = openPostgres(url, { max: 1 });
      try {
        const [row] = await query<{ ssl: boolean }>(database.db, drizzleSql`select ssl from pg_stat_ssl where pid = pg_backend_pid()`);
        return row!.ssl;
      } finally {
        await database.close();
      }
    };
    await eventually(async () => (await sslOf(`${pg.url}?sslmode=require`)) === true, {
      timeoutMs: 10_000,
      what: 'a TLS session with sslmode=require',
    });
    expect(await sslOf(`${pg.url}?sslmode=prefer`)).toBe(true);
    // The probe for a writable server goes over TLS too.
    expect(await sslOf(`${pg.url}?sslmode=require&target_session_attrs=read-write`)).toBe(true);
    expect(await sslOf(`${pg.url}?sslmode=disable`)).toBe(false);
    expect(await sslOf(pg.url)).toBe(false);
    // verify-full checks the certificate, which nothing here vouches for.
    const refused = await sslOf(`${pg.url}?sslmode=verify-full`).then(
      () => null,
      (err: unknown) => err,
    );
    expect(
      errorChain(refused)
        .map((e) => `${String(e.code)} ${String(e.message)}`)
        .join('; '),
    ).toMatch(/SELF_SIGNED|self.signed/i);

    // Through the proxy, over TLS, with statement_timeout 2 s: a black-holed statement fails after 2 + 5 s.
    proxy = await startFaultProxy('127.0.0.1', pg.port);
    const database = openPostgres(`${proxy.urlFor(pg.url)}?sslmode=require&statement_timeout=2000`, { max: 1 });
    try {
      expect(
        (await query<{ ssl: boolean }>(database.db, drizzleSql`select ssl from pg_stat_ssl where pid = pg_backend_pid()`))[0]!.ssl,
      ).toBe(true);
      proxy.blackhole();
      const started = Date.now();
      const failure = await query(database.db, drizzleSql`select 1`).then(
        () => null,
        (err: unknown) => err,
      );
      expect(errorChain(failure).map((e) => e.code)).toContain('ETIMEDOUT');
      const noticedAfterMs = Date.now() - started;
      expect(noticedAfterMs).toBeGreaterThanOrEqual(2_000 + ANSWER_GRACE_MS - 100);
      expect(noticedAfterMs).toBeLessThan(2_000 + ANSWER_GRACE_MS + 3_000);
      proxy.heal();
      // A statement started while the dead connection was closing fails too (CONNECTION_CLOSED); the next gets a new one.
      await eventually(async () => (await query<{ one: number }>(database.db, drizzleSql`select 1 as one`))[0]?.one === 1, {
        timeoutMs: 10_000,
        what: 'a new connection',
      });
      console.log(
        `network-faults over TLS: a black-holed statement failed after ${noticedAfterMs} ms (statement_timeout 2000 ms + ${ANSWER_GRACE_MS} ms)`,
      );
    } finally {
      await database.close();
    }
  });
});
