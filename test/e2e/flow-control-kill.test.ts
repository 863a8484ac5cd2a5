/**
 * A flow control's slots across a dispatcher crash (API.md "Destination control"; claim-flow-runs.ts): three real
 * dispatcher processes (`chime serve --role dispatcher`) and an API process on one PostgreSQL, a flow control of
 * parallelism 5 and 80 runs of its jobs at a slow receiver. One dispatcher is SIGKILLed mid-way while it holds slots:
 * - its slots come back once its leases expire (callback timeout + margin), not later: then no run holds a lease of
 *   the dead dispatcher, and the others go on using all 5;
 * - the receiver never has more than 5 requests unanswered at once, before or after the crash;
 * - every run succeeds (the dead dispatcher's are sent again, at least once).
 * PostgreSQL only: the embedded database is opened by one process.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../src/store/db.ts';
import { openPostgres } from '../../src/store/postgres.ts';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

const RUNS = 80;
const PARALLELISM = 5;
const TIMEOUT_MS = 3_000;
const MARGIN_MS = 1_000;
const REAP_MS = 300;
const DISPATCHER_ENV = { CHIME_LEASE_MARGIN_MS: String(MARGIN_MS), CHIME_REAP_INTERVAL_MS: String(REAP_MS) };

describe.skipIf(!process.env.TEST_DATABASE_URL)('a flow control across a dispatcher crash (postgres)', () => {
  let db: FreshDatabase;
  let api: ChimeProcess;
  const dispatchers: ChimeProcess[] = [];
  let receiver: Receiver;
  let tenant: TestTenant;
  let database: ReturnType<typeof openPostgres>;

  beforeAll(async () => {
    db = await freshDatabase({ kind: 'postgres' });
    receiver = await startReceiver(() => ({ status: 200, delayMs: 300 }));
    api = await startChime(db.env, ['serve', '--role', 'api']);
    tenant = await createTestTenant(api.url, 'flows');
    database = openPostgres(db.url!);
  });
  afterAll(async () => {
    for (const d of dispatchers) await d.stop('SIGKILL').catch(() => {});
    await api?.stop();
    await receiver?.close();
    await database?.close();
    await db?.drop();
  });

  /** The lease owner a dispatcher logged at its start. */
  const ownerOf = (p: ChimeProcess) => /"owner":"([0-9a-f-]{36})"/.exec(p.output())?.[1];
  const leasedBy = async (owner: string) =>
    Number(
      (
        await query<{ n: string }>(
          database.db,
          sql`select count(*) as n from runs where lease_owner = ${owner} and lease_expires_at is not null`,
        )
      )[0]!.n,
    );

  it('gives the dead dispatcher its slots back with its leases, never exceeds the parallelism, and loses no run', async () => {
    expect((await tenant.api.request('PUT', '/v1/flow-controls/crm', { parallelism: PARALLELISM })).status).toBe(201);
    const at = new Date(Date.now() + 2_000).toISOString();
    const batch = await tenant.api.post('/v1/jobs/batch', {
      jobs: Array.from({ length: RUNS }, (_, i) => ({
        name: `sync ${i}`,
        schedule: { type: 'once', at },
        callback: { url: `${receiver.url}/sync/${i}`, timeoutMs: TIMEOUT_MS },
        flowControlKey: 'crm',
      })),
    });
    expect(
      batch.body.results.map((r: { status: number }) => r.status),
      JSON.stringify(batch.body).slice(0, 500),
    ).toEqual(Array(RUNS).fill(201));
    for (let i = 0; i < 3; i++) dispatchers.push(await startChime({ ...db.env, ...DISPATCHER_ENV }, ['serve', '--role', 'dispatcher']));
    // Each logs its lease owner as its dispatcher starts, which may be just after the process answers /readyz.
    const owners = await eventually(
      () => {
        const o = dispatchers.map(ownerOf);
        return o.every(Boolean) ? (o as string[]) : undefined;
      },
      { what: 'each dispatcher to log its lease owner' },
    );

    // Kill one while it holds slots.
    await receiver.waitFor(15, 30_000);
    const victim = await eventually(
      async () => {
        for (let i = 0; i < 3; i++) if ((await leasedBy(owners[i]!)) > 0) return i;
        return undefined;
      },
      { what: 'a dispatcher holding a slot' },
    );
    const held = await leasedBy(owners[victim]!);
    await dispatchers[victim]!.stop('SIGKILL');
    const killedAt = Date.now();

    // Its slots come back with its leases (timeout + margin from their start), reaped within a reap interval or two.
    await eventually(async () => (await leasedBy(owners[victim]!)) === 0, {
      timeoutMs: TIMEOUT_MS + MARGIN_MS + 10_000,
      intervalMs: 100,
      what: "the dead dispatcher's leases to be reaped",
    });
    const freedAfterMs = Date.now() - killedAt;
    console.log(`the dead dispatcher held ${held} slot(s); they came back ${freedAfterMs} ms after the kill`);
    expect(freedAfterMs).toBeLessThan(TIMEOUT_MS + MARGIN_MS + 4 * REAP_MS + 2_000);

    await eventually(
      async () => {
        const r = await tenant.api.get('/v1/flow-controls/crm');
        const rows = await query<{ n: string }>(database.db, sql`select count(*) as n from runs where status = 'succeeded'`);
        return Number(rows[0]!.n) === RUNS && r.body.inFlight === 0 && r.body.waiting === 0;
      },
      { timeoutMs: 90_000, intervalMs: 250, what: 'every run to succeed' },
    );
    expect(receiver.maxActive).toBeLessThanOrEqual(PARALLELISM);
    const paths = new Set(receiver.received.map((r) => r.path));
    expect(paths.size).toBe(RUNS);
  }, 180_000);
});
