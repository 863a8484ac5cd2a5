/**
 * Graceful shutdown of the real process under load (issue #6): SIGTERM stops new claims, lets in-flight callbacks
 * finish within CHIME_SHUTDOWN_GRACE_MS and records their results, then exits 0; a second SIGTERM, or the grace
 * running out, releases the leases of callbacks still in flight (at-least-once runs become due again, logged
 * `lease_lost`), and the process still exits 0.
 */

import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { openEmbedded } from '../../src/store/embedded.ts';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, type Reply, startReceiver } from '../support/receiver.ts';

type RunState = { id: string; status: string; error_class: string | null };

/** Each run's status and its latest attempt's error class, read once the process has exited. */
async function runStates(db: FreshDatabase): Promise<RunState[]> {
  const q = `select r.id, r.status, (select a.error_class from attempts a where a.shard = r.shard and a.run_id = r.id order by a.attempt desc limit 1) as error_class
             from runs r`;
  if (db.url) {
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      return [...(await sql.unsafe<RunState[]>(q))];
    } finally {
      await sql.end();
    }
  }
  const e = await openEmbedded(db.dataDir!);
  try {
    return (await e.pg.query<RunState>(q)).rows;
  } finally {
    await e.close();
  }
}

describe.each(DATABASE_TARGETS)('graceful shutdown on $kind', (target) => {
  let db: FreshDatabase;
  let receiver: Receiver;
  let chime: ChimeProcess;

  afterEach(async () => {
    await chime?.stop('SIGKILL');
    await receiver?.close();
    await db?.drop();
  });

  async function start(reply: () => Reply, env: Record<string, string> = {}): Promise<TestTenant> {
    db = await freshDatabase(target);
    receiver = await startReceiver(reply);
    chime = await startChime({ ...db.env, ...env });
    return createTestTenant(chime.url, 'shutdown');
  }
  /** Registers `n` jobs due at once (in one second) at the receiver. */
  async function register(tenant: TestTenant, n: number): Promise<void> {
    const jobs = Array.from({ length: n }, () => ({
      schedule: { type: 'delay', delayMs: 500 },
      callback: { url: `${receiver.url}/slow`, timeoutMs: 30_000 },
    }));
    expect((await tenant.api.post('/v1/jobs/batch', { jobs })).status).toBe(200);
  }

  it('SIGTERM: no new requests, in-flight callbacks finish and are recorded, exit 0', { timeout: 120_000 }, async () => {
    // 40 runs, at most 16 at a time to one origin: the rest wait, and must not be sent after SIGTERM.
    const tenant = await start(() => ({ status: 200, delayMs: 1500 }));
    await register(tenant, 40);
    await eventually(() => receiver.active >= 5, { timeoutMs: 30_000, what: 'callbacks in flight' });
    const inFlight = receiver.received.length;
    const signaledAt = Date.now();
    const code = await chime.stop('SIGTERM');
    expect(code).toBe(0);
    // Whatever had been received by the signal was answered; nothing new was sent (a 100 ms allowance for requests
    // already on the wire when the signal came).
    const late = receiver.received.filter((r) => r.at > signaledAt + 100);
    expect(late).toEqual([]);
    expect(receiver.received.length).toBeGreaterThanOrEqual(inFlight);
    const states = await runStates(db);
    const received = new Set(receiver.received.map((r) => String(r.headers['webhook-id'])));
    // Every callback that reached the receiver was recorded as succeeded; the others are still waiting.
    for (const s of states) {
      if (received.has(s.id)) expect(s, 'a delivered run').toMatchObject({ status: 'succeeded', error_class: null });
      else expect(['scheduled', 'retrying']).toContain(s.status);
    }
    expect(states.filter((s) => s.status === 'succeeded').length).toBe(received.size);
  });

  it('a second SIGTERM releases the leases of hanging callbacks at once; exit 0', { timeout: 120_000 }, async () => {
    const tenant = await start(() => ({ status: 200, hang: true }), { CHIME_SHUTDOWN_GRACE_MS: '60000', CHIME_LOG_LEVEL: 'info' });
    await register(tenant, 3);
    await eventually(() => receiver.active >= 3, { timeoutMs: 30_000, what: 'three hanging callbacks' });
    chime.child.kill('SIGTERM');
    await eventually(() => chime.output().includes('draining'), { timeoutMs: 10_000, what: 'the drain to start' });
    const secondAt = Date.now();
    const code = await chime.stop('SIGTERM');
    expect(code).toBe(0);
    // Far sooner than the 60 s grace.
    expect(Date.now() - secondAt).toBeLessThan(30_000);
    const states = await runStates(db);
    expect(states).toHaveLength(3);
    for (const s of states) expect(s).toMatchObject({ status: 'retrying', error_class: 'lease_lost' });
  });

  it('when the grace runs out, the leases of hanging callbacks are released; exit 0', { timeout: 120_000 }, async () => {
    const tenant = await start(() => ({ status: 200, hang: true }), { CHIME_SHUTDOWN_GRACE_MS: '1000' });
    await register(tenant, 2);
    await eventually(() => receiver.active >= 2, { timeoutMs: 30_000, what: 'two hanging callbacks' });
    expect(await chime.stop('SIGTERM')).toBe(0);
    const states = await runStates(db);
    expect(states.map((s) => [s.status, s.error_class])).toEqual([
      ['retrying', 'lease_lost'],
      ['retrying', 'lease_lost'],
    ]);
  });
});
