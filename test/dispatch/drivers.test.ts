/**
 * The two drivers of the dispatch engine pass the same engine-level tests (docs/design.md, "The dispatch engine"): the
 * Node dispatcher (`createDispatcher`, a long-running loop) and the Workers tick (`runTick`, called until the work is
 * done, as the cron trigger would), on each database, with the real undici delivery and real receivers:
 * due runs are each delivered once and recorded; a failed attempt is retried and both attempts are logged; and a
 * claim shares itself out over the buckets with due runs, so a quiet tenant's run goes out in the first claim even
 * behind another tenant's backlog.
 */
import { pino } from 'pino';
import type { Agent } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCallbackAgent, createDeliver } from '../../src/dispatch/deliver.ts';
import { createDispatcher } from '../../src/dispatch/drivers/node-dispatcher.ts';
import { runTick } from '../../src/dispatch/drivers/workers-tick.ts';
import { createKeyring } from '../../src/dispatch/keyring.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { newId } from '../../src/domain/ids.ts';
import { shardOf } from '../../src/domain/shard.ts';
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
/** Both drivers with the same bounds: 4 runs per claim, 4 in flight. */
const LIMITS = { concurrency: 4, batchSize: 4 };

type Driver = {
  name: string;
  /** Runs the driver until `done()` holds (polled), then stops it. */
  runUntil(store: TestStore, agent: Agent, done: () => boolean | Promise<boolean>, what: string): Promise<void>;
};

const DRIVERS: Driver[] = [
  {
    name: 'the Node dispatcher',
    async runUntil(store, agent, done, what) {
      const d = createDispatcher({
        database: store.database,
        clock: systemClock,
        logger,
        deliver: createDeliver(agent),
        keyring: createKeyring({ db: store.database.db, cipher: store.cipher, clock: systemClock }),
        userAgent: 'chime-test',
        options: { ...LIMITS, perDestination: 4, pollMs: 100, reapIntervalMs: 60_000, shutdownGraceMs: 2_000 },
      });
      await d.start();
      try {
        await eventually(done, { what, timeoutMs: 20_000 });
      } finally {
        await d.stop();
      }
    },
  },
  {
    name: 'the Workers tick',
    async runUntil(store, agent, done, what) {
      const deps = {
        db: store.database.db,
        clock: systemClock,
        keyring: createKeyring({ db: store.database.db, cipher: store.cipher, clock: systemClock }),
        deliver: createDeliver(agent),
        log: logger,
        userAgent: 'chime-test',
        leaseMarginMs: 30_000,
      };
      // A tick per poll, as the cron trigger calls it (here more often than once a minute).
      await eventually(
        async () => {
          await runTick({ ...deps, owner: newId() }, { concurrency: LIMITS.concurrency, maxCallbacksPerTick: 1_000, tickBudgetMs: 5_000 });
          return done();
        },
        { what, timeoutMs: 20_000, intervalMs: 50 },
      );
    },
  },
];

describe.each(DATABASE_TARGETS)('engine drivers on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  let receiver: Receiver;
  let agent: Agent;
  let failOnce: Set<string>;

  beforeAll(async () => {
    store = await openTestStore(target, systemClock);
    tenantId = await createTestTenantIn(store.ctx);
    receiver = await startReceiver((r) => {
      if (failOnce.has(r.path)) {
        failOnce.delete(r.path);
        return { status: 500, body: 'once' };
      }
      return { status: 200 };
    });
    agent = createCallbackAgent({ allowPrivate: true });
  });
  afterAll(async () => {
    await agent?.close();
    await receiver?.close();
    await store?.close();
  });
  beforeEach(async () => {
    await deleteAllJobs(store.database);
    receiver.received.length = 0;
    failOnce = new Set();
  });

  /** A once job of `tenant` due now, calling back to `path`. */
  const job = (tenant: string, path: string, o: JobSpecInput = {}) => {
    const now = Date.now();
    return createJob(store.ctx, tenant, testJobSpec(now, { ...o, callback: { url: `${receiver.url}${path}`, ...o.callback } }), now);
  };
  const hits = (prefix: string) => receiver.received.filter((r) => r.path.startsWith(prefix));

  describe.each(DRIVERS)('$name', (driver) => {
    it('delivers each due run once and records it succeeded with one attempt', async () => {
      const jobs = await Promise.all(Array.from({ length: 24 }, (_, i) => job(tenantId, `/once/${i % 3}/${i}`)));
      expect(await runsOf(store.database, null)).toHaveLength(24);
      const allDone = async () =>
        hits('/once/').length >= 24 && (await runsOf(store.database, null)).every((r) => r.status === 'succeeded');
      await driver.runUntil(store, agent, allDone, 'every run delivered and recorded succeeded');
      expect(hits('/once/')).toHaveLength(24);
      expect(new Set(hits('/once/').map((h) => h.path)).size).toBe(24);
      for (const j of jobs) {
        const [run] = await runsOf(store.database, j.id);
        expect(run).toMatchObject({ status: 'succeeded', attempts: 1 });
        expect(await attemptsOf(store.database, run!.id)).toHaveLength(1);
      }
    });

    it('retries a failed attempt after its backoff and logs both attempts', async () => {
      failOnce.add('/retry');
      const j = await job(tenantId, '/retry', { retry: { strategy: 'fixed', maxAttempts: 3, initialDelayMs: 200 } });
      await driver.runUntil(
        store,
        agent,
        async () => (await runsOf(store.database, j.id))[0]?.status === 'succeeded',
        'the retried run to succeed',
      );
      const [run] = await runsOf(store.database, j.id);
      const log = await attemptsOf(store.database, run!.id);
      expect(log.map((a) => a.responseStatus)).toEqual([500, 200]);
      expect(hits('/retry')).toHaveLength(2);
      expect(hits('/retry')[1]!.at - hits('/retry')[0]!.at).toBeGreaterThanOrEqual(200);
    });

    it("sends a quiet tenant's run in the first claim, ahead of another tenant's backlog", async () => {
      let quiet = await createTestTenantIn(store.ctx, 'quiet');
      while (shardOf(quiet) === shardOf(tenantId)) quiet = await createTestTenantIn(store.ctx, 'quiet');
      // The backlog is older (due earlier): in due order across tenants the quiet run would come after all of it.
      const past = Date.now() - 10_000;
      for (let i = 0; i < 40; i++)
        await createJob(store.ctx, tenantId, testJobSpec(past, { callback: { url: `${receiver.url}/backlog/${i % 4}/${i}` } }), past);
      await job(quiet, '/quiet');
      await driver.runUntil(
        store,
        agent,
        () => hits('/quiet').length === 1 && hits('/backlog/').length === 40,
        'the backlog and the quiet run',
      );
      const order = receiver.received.map((r) => r.path);
      expect(order.indexOf('/quiet')).toBeLessThan(LIMITS.batchSize);
    });
  });
});
