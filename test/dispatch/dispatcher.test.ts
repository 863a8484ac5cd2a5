/**
 * The dispatcher in process, with the real undici delivery and a real HTTP receiver on 127.0.0.1: a due run is
 * delivered once; two dispatchers sharing one PostgreSQL deliver each of many runs exactly once (SKIP LOCKED
 * leases, docs/design.md invariants 2 and 3); `stop()` past its grace releases the leases of callbacks still in flight
 * and nothing is sent for them afterwards (invariant 4 for at-most-once).
 *
 * Every dispatcher a test starts is tracked: `afterEach` stops any left running and fails the test that leaked it.
 */

import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { Agent } from 'undici';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCallbackAgent, createDeliver } from '../../src/dispatch/deliver.ts';
import { createDispatcher, type Dispatcher, type DispatcherOptions } from '../../src/dispatch/drivers/node-dispatcher.ts';
import { createKeyring } from '../../src/dispatch/keyring.ts';
import { createDispatchMetrics, type DispatchMetrics } from '../../src/dispatch/metrics.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { type Database, query } from '../../src/store/db.ts';
import { createJob } from '../../src/store/jobs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import {
  attemptsOf,
  createTestTenantIn,
  deleteAllJobs,
  type JobSpecInput,
  openTestStore,
  runsOf,
  type TestStore,
  testJobSpec,
} from '../support/store.ts';

const logger = pino({ level: 'silent' });

/** Starts dispatchers and remembers the ones not stopped yet. */
class Dispatchers {
  private readonly live = new Set<Dispatcher>();
  constructor(
    private readonly store: () => TestStore,
    private readonly agent: () => Agent,
  ) {}

  async start(
    database: Database,
    options: Partial<DispatcherOptions> = {},
    userAgent = 'chime-test',
    metrics?: DispatchMetrics,
  ): Promise<Dispatcher> {
    const s = this.store();
    const d = createDispatcher({
      database,
      clock: systemClock,
      logger,
      deliver: createDeliver(this.agent()),
      keyring: createKeyring({ db: database.db, cipher: s.cipher, clock: systemClock }),
      userAgent,
      metrics,
      options: { pollMs: 250, reapIntervalMs: 60_000, shutdownGraceMs: 5_000, ...options },
    });
    this.live.add(d);
    await d.start();
    return d;
  }

  async stop(d: Dispatcher, graceMs?: number): Promise<void> {
    this.live.delete(d);
    await d.stop(graceMs);
  }

  /** Stops every dispatcher still running; rejects when there was any (the test leaked it). */
  async assertNoneLeaked(): Promise<void> {
    const leaked = [...this.live];
    this.live.clear();
    await Promise.all(leaked.map((d) => d.stop(0)));
    if (leaked.length > 0) throw new Error(`${leaked.length} dispatcher(s) left running by the test`);
  }
}

/**
 * `database` with its top-level calls counted: `transaction` (a claim) and `execute` (a plain statement, such as the
 * look for the earliest due time or a finish).
 */
function countingCalls(database: Database): { database: Database; transactions: number; statements: number } {
  const counted = { database, transactions: 0, statements: 0 };
  const db = new Proxy(database.db, {
    get(target, prop, receiver) {
      if (prop === 'transaction') counted.transactions++;
      if (prop === 'execute') counted.statements++;
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  counted.database = { ...database, db, listen: database.listen.bind(database), close: database.close.bind(database) };
  return counted;
}

describe.each(DATABASE_TARGETS)('dispatcher on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  let receiver: Receiver;
  let agent: Agent;
  const dispatchers = new Dispatchers(
    () => store,
    () => agent,
  );

  beforeAll(async () => {
    store = await openTestStore(target, systemClock);
    tenantId = await createTestTenantIn(store.ctx);
    receiver = await startReceiver();
    agent = createCallbackAgent({ allowPrivate: true });
  });
  afterAll(async () => {
    await dispatchers.assertNoneLeaked().catch(() => {});
    await receiver?.close();
    await agent?.destroy();
    await store?.close();
  });
  beforeEach(async () => {
    await deleteAllJobs(store.database);
    receiver.received.length = 0;
    receiver.respond = () => ({ status: 200 });
  });
  afterEach(async () => {
    await dispatchers.assertNoneLeaked();
  });

  // A generous callback timeout: receiver, dispatcher and (on PGlite) the database share this process's event loop,
  // so a busy loop must not turn a prompt answer into a timeout (and an at-least-once retry).
  const job = (path: string, o: JobSpecInput = {}, registeredAtMs = Date.now()) => {
    const callback = { url: `${receiver.url}${path}`, timeoutMs: 10_000, ...o.callback };
    return createJob(store.ctx, tenantId, testJobSpec(registeredAtMs, { ...o, callback }), registeredAtMs);
  };
  const hits = (prefix: string) => receiver.received.filter((r) => r.path.startsWith(prefix));

  it('delivers a due job once and the run succeeds', async () => {
    const j = await job('/once', { payload: { n: 1 } });
    const d = await dispatchers.start(store.database);
    try {
      const [run] = await eventually(
        async () => {
          const rs = await runsOf(store.database, j.id);
          return rs[0]?.status === 'succeeded' ? rs : undefined;
        },
        { what: 'the run to succeed' },
      );
      expect(run).toMatchObject({ attempts: 1, leaseOwner: null, leaseExpiresAtMs: null, nextAttemptAtMs: null });
      expect(await attemptsOf(store.database, run!.id)).toEqual([{ attempt: 1, responseStatus: 200, errorClass: null, error: null }]);
      const got = hits('/once');
      expect(got).toHaveLength(1);
      expect(got[0]!.headers['webhook-id']).toBe(run!.id);
      expect(got[0]!.headers['chime-attempt']).toBe('1');
      expect(JSON.parse(got[0]!.body)).toEqual({ n: 1 });
    } finally {
      await dispatchers.stop(d);
    }
    expect(hits('/once')).toHaveLength(1);
  });

  it('retries a failing receiver with the same webhook-id until it succeeds', async () => {
    let calls = 0;
    receiver.respond = () => (++calls === 1 ? { status: 503, body: 'busy' } : { status: 200 });
    const j = await job('/retry', { retry: { strategy: 'fixed', maxAttempts: 3, initialDelayMs: 100 } });
    const d = await dispatchers.start(store.database);
    try {
      const [run] = await eventually(
        async () => {
          const rs = await runsOf(store.database, j.id);
          return rs[0]?.status === 'succeeded' ? rs : undefined;
        },
        { what: 'the run to succeed on its retry' },
      );
      expect(run!.attempts).toBe(2);
      expect((await attemptsOf(store.database, run!.id)).map((a) => [a.attempt, a.responseStatus])).toEqual([
        [1, 503],
        [2, 200],
      ]);
      expect(hits('/retry').map((h) => [h.headers['webhook-id'], h.headers['chime-attempt']])).toEqual([
        [run!.id, '1'],
        [run!.id, '2'],
      ]);
    } finally {
      await dispatchers.stop(d);
    }
  });

  it('fails a run at once when the destination is refused at delivery (no retries, refused_destination)', async () => {
    // Made while private destinations were allowed; this dispatcher's guard refuses 127.0.0.1 at connect time.
    const j = await job('/refused', { retry: { strategy: 'fixed', maxAttempts: 5, initialDelayMs: 100 } });
    const refusing = createCallbackAgent({ allowPrivate: false });
    const d = createDispatcher({
      database: store.database,
      clock: systemClock,
      logger,
      deliver: createDeliver(refusing),
      keyring: createKeyring({ db: store.database.db, cipher: store.cipher, clock: systemClock }),
      userAgent: 'chime-test',
      options: { pollMs: 250, reapIntervalMs: 60_000, shutdownGraceMs: 5_000 },
    });
    await d.start();
    try {
      const [run] = await eventually(
        async () => {
          const rs = await runsOf(store.database, j.id);
          return rs[0]?.status === 'failed' ? rs : undefined;
        },
        { what: 'the run to fail' },
      );
      expect(run!.attempts).toBe(1);
      const attempts = await attemptsOf(store.database, run!.id);
      expect(attempts).toEqual([
        { attempt: 1, responseStatus: null, errorClass: 'refused_destination', error: expect.stringMatching(/not retried/) },
      ]);
      expect(hits('/refused')).toHaveLength(0);
    } finally {
      await d.stop();
      await refusing.destroy();
    }
  });

  it(`${target.kind === 'postgres' ? 'two dispatchers on one database deliver' : 'a dispatcher delivers'} each of 200 due runs exactly once`, async () => {
    receiver.respond = () => ({ status: 200, delayMs: 2 });
    // On PostgreSQL, each dispatcher has its own connection pool, as separate processes would.
    const databases = target.kind === 'postgres' ? [store.openAnother()!, store.openAnother()!] : [store.database];
    const started = await Promise.all(
      databases.map((database, i) =>
        dispatchers.start(database, { batchSize: 10, concurrency: 32, perDestination: 32 }, `chime-test-${i}`),
      ),
    );
    try {
      // All due at the same instant, a little ahead: the dispatchers sleep until then and race for them.
      // (Registered as of now, so the ones created after `at` on a slow machine still get their run, already due.)
      const registeredAt = Date.now();
      const at = new Date(registeredAt + 1_000).toISOString();
      const jobIds = new Set<string>();
      for (let i = 0; i < 200; i++) jobIds.add((await job(`/many/${i}`, { schedule: { type: 'once', at } }, registeredAt)).id);
      expect(jobIds.size).toBe(200);
      expect(await runsOf(store.database, null)).toHaveLength(200);
      await eventually(
        async () => {
          const [c] = await query<{ n: number }>(store.database.db, sql`select count(*)::int as n from runs where status = 'succeeded'`);
          return c!.n === 200;
        },
        { timeoutMs: 15_000, intervalMs: 100, what: '200 runs to succeed' },
      );
      const rs = await runsOf(store.database, null);
      const got = hits('/many/');
      const ids = got.map((h) => h.headers['webhook-id'] as string);
      expect(new Set(ids).size).toBe(200);
      expect(ids).toHaveLength(200);
      expect(new Set(ids)).toEqual(new Set(rs.map((r) => r.id)));
      expect(new Set(rs.map((r) => r.jobId))).toEqual(jobIds);
      if (started.length === 2) {
        const byDispatcher = (i: number) => got.filter((h) => h.headers['user-agent'] === `chime-test-${i}`).length;
        expect(byDispatcher(0) + byDispatcher(1)).toBe(200);
        expect(byDispatcher(0)).toBeGreaterThan(0);
        expect(byDispatcher(1)).toBeGreaterThan(0);
      }
    } finally {
      await Promise.all(started.map((d) => dispatchers.stop(d)));
    }
    expect(hits('/many/')).toHaveLength(200);
  });

  it('stop() past its grace releases the leases of hanging callbacks: at-least-once due again, at-most-once failed', async () => {
    receiver.respond = (r) => (r.path.startsWith('/hang') ? { status: 200, hang: true } : { status: 200 });
    const again = await job('/hang/again', { callback: { timeoutMs: 10_000 } });
    const once = await job('/hang/once', { callback: { timeoutMs: 10_000 }, deliveryMode: 'at-most-once' });
    const registry = new Registry();
    const d = await dispatchers.start(store.database, {}, undefined, createDispatchMetrics(registry));
    const inFlightSeries = async () =>
      (await registry.getSingleMetricAsString('chime_in_flight')).split('\n').filter((l) => l.startsWith('chime_in_flight{'));
    let stopped = false;
    try {
      await eventually(() => hits('/hang').length === 2, { what: 'both callbacks to hang' });
      expect(d.inFlight).toBe(2);
      expect(await inFlightSeries()).toEqual([`chime_in_flight{destination="${new URL(receiver.url).origin}"} 2`]);
      const t = Date.now();
      await dispatchers.stop(d, 200);
      stopped = true;
      expect(Date.now() - t).toBeLessThan(5_000);
      // A stopped dispatcher no longer reports: no series left behind.
      expect(await inFlightSeries()).toEqual([]);
    } finally {
      if (!stopped) await dispatchers.stop(d, 0);
    }
    const [a] = await runsOf(store.database, again.id);
    expect(a).toMatchObject({ status: 'retrying', leaseOwner: null, leaseExpiresAtMs: null, error: 'released at shutdown', attempts: 1 });
    expect(a!.nextAttemptAtMs).toBeLessThanOrEqual(Date.now());
    const [b] = await runsOf(store.database, once.id);
    expect(b).toMatchObject({ status: 'failed', leaseOwner: null, nextAttemptAtMs: null });
    expect(b!.error).toMatch(/^ambiguous outcome: .*not re-sent \(at-most-once\)$/);

    // Another dispatcher takes the at-least-once run over (same webhook-id, attempt 2); the at-most-once one is not re-sent.
    receiver.respond = () => ({ status: 200 });
    const d2 = await dispatchers.start(store.database);
    try {
      await eventually(async () => (await runsOf(store.database, again.id))[0]?.status === 'succeeded', {
        what: 'the released run to succeed',
      });
    } finally {
      await dispatchers.stop(d2);
    }
    expect(hits('/hang/again').map((h) => [h.headers['webhook-id'], h.headers['chime-attempt']])).toEqual([
      [a!.id, '1'],
      [a!.id, '2'],
    ]);
    expect(hits('/hang/once')).toHaveLength(1);
    expect((await runsOf(store.database, once.id))[0]?.status).toBe('failed');
  });

  it('stop() gives back a run that waited for a per-destination slot untouched, and never sends it', async () => {
    // One slot for the receiver's origin: the first callback holds it past the grace, the second waits for it. A
    // dispatcher claims a run to wait for a slot only when the destination's slots free soon (docs/design.md
    // "Per-destination limits and saturation"): a first callback answered at once tells it so.
    const d = await dispatchers.start(store.database, { perDestination: 1 });
    await job('/warm');
    await eventually(() => hits('/warm').length === 1 && d.inFlight === 0, { what: 'the fast first callback' });
    receiver.respond = () => ({ status: 200, delayMs: 1_500 });
    const first = await job('/queued/1', { callback: { timeoutMs: 10_000 }, deliveryMode: 'at-most-once' });
    const second = await job('/queued/2', { callback: { timeoutMs: 10_000 }, deliveryMode: 'at-most-once' });
    try {
      await eventually(() => hits('/queued').length === 1 && d.inFlight === 2, { what: 'one callback sent, one waiting' });
    } finally {
      await dispatchers.stop(d, 100);
    }
    // Both are due at the same time, so either may be the one sent: the receiver says which.
    const [sent, waiting] = hits('/queued')[0]!.path === '/queued/1' ? [first, second] : [second, first];
    const check = async () => {
      // Sent and cut off by the grace: ambiguous, so an at-most-once run fails.
      expect((await runsOf(store.database, sent.id))[0]).toMatchObject({ status: 'failed', leaseOwner: null });
      // Never sent: back to waiting, due, its attempt not counted, so any dispatcher may send it.
      expect((await runsOf(store.database, waiting.id))[0]).toMatchObject({ status: 'scheduled', leaseOwner: null, attempts: 0 });
    };
    await check();
    // The first callback's answer frees the slot; the given-back second run must not take it.
    await eventually(() => d.inFlight === 0, { what: 'the stopped dispatcher to settle' });
    expect(hits('/queued')).toHaveLength(1);
    await check();
  });

  it('an idle dispatcher polls with one query for the earliest due time, and claims only when a run comes due', async () => {
    // Claims are transactions, the due-time look a plain statement.
    const counted = countingCalls(store.database);
    const d = await dispatchers.start(counted.database, { pollMs: 50 });
    try {
      await eventually(() => counted.statements >= 10, { what: 'ten polls' });
      // The first claim at start found no bucket with a run due, so it opened no transaction; every poll since only
      // looked.
      expect(counted.transactions).toBe(0);
      const j = await job('/idle-then-due');
      await eventually(() => hits('/idle-then-due').length === 1, { what: 'the run that came due to be delivered' });
      expect(counted.transactions).toBeGreaterThan(0);
      expect((await runsOf(store.database, j.id))[0]?.trigger).toBe('schedule');
    } finally {
      await dispatchers.stop(d);
    }
  });

  // Its fire-time bounds are for one server; test/citus holds Citus to its own.
  it.runIf(target.kind !== 'citus')(
    'runs falling due steadily are claimed in batches ahead of time, and each fires at its time, not before',
    async () => {
      const counted = countingCalls(store.database);
      // 300 runs, one every 2 ms (500 a second, faster than a claim's round trip) from 4 s on.
      const start = Date.now() + 4_000;
      const dueAt = Array.from({ length: 300 }, (_, i) => start + i * 2);
      for (const [i, at] of dueAt.entries()) await job(`/steady/${i}`, { schedule: { type: 'once', at: new Date(at).toISOString() } });
      const d = await dispatchers.start(counted.database, { pollMs: 2_000 });
      try {
        await eventually(() => hits('/steady/').length === 300, { what: 'every steady run delivered', timeoutMs: 20_000 });
        // Claiming whenever a run had entered the lookahead would make a claim per round trip, a few runs each;
        // gathered, a claim takes what fell due in up to a fifth of the lookahead (50 ms: ~25 runs here).
        expect(counted.transactions).toBeLessThan(40);
        for (const r of hits('/steady/')) {
          const i = Number(r.path.split('/')[2]);
          expect(r.at).toBeGreaterThanOrEqual(dueAt[i]!);
        }
      } finally {
        await dispatchers.stop(d);
      }
    },
  );

  it('a test that leaves a dispatcher running fails', async () => {
    const d = await dispatchers.start(store.database);
    await expect(dispatchers.assertNoneLeaked()).rejects.toThrow(/1 dispatcher\(s\) left running/);
    // The guard stopped it: stopping again is a no-op, and nothing is left for afterEach.
    await d.stop();
    await expect(dispatchers.assertNoneLeaked()).resolves.toBeUndefined();
  });
});
