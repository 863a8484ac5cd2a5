/**
 * Database outage (issue #6): PostgreSQL is stopped as in a crash (`pg_ctl -m immediate`) while jobs keep falling due
 * and clients keep registering, then started again. While it is down the API answers `503` problem+json (never a
 * 500, never a hang), `/readyz` says unavailable, and no process dies; afterwards the API accepts again, the
 * dispatcher reconnects on its own and delivers every run it had accepted: nothing that got a `201` is lost.
 * The server is the test's own (initdb in a temp dir), so stopping it disturbs no other test.
 */
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { TEST_ENCRYPTION_KEY } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type PrivatePostgres, postgresBinDir, startPrivatePostgres } from '../support/private-postgres.ts';
import { allArrived, type Receiver, startReceiver } from '../support/receiver.ts';

// Needs the PostgreSQL server binaries (this machine and CI have them); say so rather than pass silently.
const bin = postgresBinDir();
if (!bin) console.warn('outage test: no PostgreSQL server binaries under /usr/lib/postgresql; the outage test cannot run');

describe.runIf(bin !== null)('database outage', () => {
  let pg: PrivatePostgres;
  let receiver: Receiver;
  let api: ChimeProcess;
  let dispatcher: ChimeProcess;

  afterAll(async () => {
    // A process that died on its own: its output says why.
    for (const [name, p] of [
      ['api', api],
      ['dispatcher', dispatcher],
    ] as const) {
      if (p && (p.child.exitCode !== null || p.child.signalCode !== null))
        console.error(`${name} exited (${p.child.exitCode ?? p.child.signalCode}):\n${p.output()}`);
    }
    await dispatcher?.stop('SIGKILL');
    await api?.stop('SIGKILL');
    await receiver?.close();
    await pg?.destroy();
  });

  it('API answers 503 while PostgreSQL is down; afterwards every accepted job is delivered', { timeout: 240_000 }, async () => {
    pg = await startPrivatePostgres();
    receiver = await startReceiver();
    const env = {
      DATABASE_URL: pg.url,
      CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      CHIME_MIGRATE: 'true',
      CHIME_LEASE_MARGIN_MS: '2000',
      CHIME_REAP_INTERVAL_MS: '500',
    };
    api = await startChime(env, ['serve', '--role', 'api']);
    dispatcher = await startChime(env, ['serve', '--role', 'dispatcher']);
    const tenant: TestTenant = await createTestTenant(api.url, 'outage');

    // Clients register a job every 20 ms, each due 1–4 s later, through the whole test.
    const accepted: string[] = [];
    const statuses = new Map<number, number>();
    const problems: unknown[] = [];
    let registering = true;
    let i = 0;
    const load = (async () => {
      while (registering) {
        const r = await tenant.api
          .post('/v1/jobs', {
            schedule: { type: 'delay', delayMs: 1000 + (i++ % 3000) },
            callback: { url: `${receiver.url}/outage`, timeoutMs: 2000 },
            retry: { strategy: 'fixed', maxAttempts: 30, initialDelayMs: 500 },
          })
          .catch(() => ({ status: 0, body: null, headers: new Headers() }));
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status === 201) accepted.push(r.body.jobId);
        else if (r.status !== 0) problems.push({ status: r.status, type: r.headers.get('content-type'), body: r.body });
        await new Promise((res) => setTimeout(res, 20));
      }
    })();

    await eventually(() => receiver.received.length >= 20, { timeoutMs: 30_000, what: 'callbacks before the outage' });
    await pg.stop('immediate');
    const downAt = Date.now();

    // While it is down: 503 problem+json from the API and /readyz; both processes stay up.
    await eventually(() => (statuses.get(503) ?? 0) >= 10, { timeoutMs: 30_000, what: 'ten 503 answers during the outage' });
    const ready = await fetch(`${api.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('content-type')).toContain('application/problem+json');
    const dispatcherReady = await fetch(`${dispatcher.url}/readyz`);
    expect(dispatcherReady.status).toBe(503);
    await eventually(() => Date.now() - downAt >= 5_000, { timeoutMs: 10_000, what: 'five seconds of outage' });
    expect(api.child.exitCode).toBeNull();
    expect(dispatcher.child.exitCode).toBeNull();

    await pg.start();
    const upAt = Date.now();
    const acceptedBeforeRecovery = accepted.length;
    await eventually(() => accepted.length >= acceptedBeforeRecovery + 20, { timeoutMs: 60_000, what: 'registrations to succeed again' });
    registering = false;
    await load;

    // Every accepted job is delivered, after the dispatcher reconnected by itself.
    const delivered = () => new Set(receiver.received.map((r) => r.headers['chime-job-id']));
    await eventually(() => allArrived(accepted, delivered()), { timeoutMs: 90_000, what: 'every accepted job to be delivered' });
    expect(dispatcher.child.exitCode).toBeNull();

    // Nothing but 201, 503 (problem+json) or a refused connection during the whole test: never a 500.
    expect([...statuses.keys()].filter((s) => ![0, 201, 503].includes(s))).toEqual([]);
    for (const p of problems) expect(p).toMatchObject({ status: 503, type: expect.stringContaining('application/problem+json') });

    // The database agrees: every accepted job's run succeeded.
    const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
    try {
      await eventually(
        async () => {
          const rows = await sql<{ n: string }[]>`select count(*) as n from runs where status = 'succeeded'`;
          return Number(rows[0]!.n) >= accepted.length;
        },
        { timeoutMs: 30_000, what: 'every run recorded as succeeded' },
      );
    } finally {
      await sql.end();
    }
    console.log(
      `outage test figures: ${JSON.stringify({
        outageMs: upAt - downAt,
        accepted: accepted.length,
        answered503: statuses.get(503) ?? 0,
        connectionRefused: statuses.get(0) ?? 0,
        delivered: delivered().size,
        deliveries: receiver.received.length,
        lost: accepted.filter((id) => !delivered().has(id)).length,
      })}`,
    );
  });
});
