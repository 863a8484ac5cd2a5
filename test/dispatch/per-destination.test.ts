/**
 * Per-destination concurrency (src/dispatch/limiter.ts) with the dispatcher in process, the real undici delivery and
 * real receivers on 127.0.0.1, on every database target. A flood of due runs at one slow receiver:
 * - that receiver never has more than `perDestination` callbacks in flight at once;
 * - another receiver (another destination: another port) keeps getting its callbacks on time during the flood, although
 *   the flood is larger than the dispatcher's slots (claims leave a saturated destination's runs alone);
 * - runs waiting in the per-destination queue keep their lease (it is renewed while they wait), so none is reaped
 *   and sent twice: every run succeeds on its first attempt, every `webhook-id` arrives once.
 * Leases are short (callback timeout 2 s + 300 ms margin) and the flood lasts longer than one lease.
 */

import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import type { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallbackAgent, createDeliver } from '../../src/dispatch/deliver.ts';
import { createDispatcher, type Dispatcher } from '../../src/dispatch/drivers/node-dispatcher.ts';
import { createKeyring } from '../../src/dispatch/keyring.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { query } from '../../src/store/db.ts';
import { createJob } from '../../src/store/jobs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { createTestTenantIn, openTestStore, runsOf, type TestStore, testJobSpec } from '../support/store.ts';

const PER_DESTINATION = 3;
/** The slow receiver's answer time, in ms: 36 runs / 3 at a time × 250 ms ≈ 3 s of flood, longer than a lease. */
const SLOW_MS = 250;
const FLOOD = 36;
const TIMEOUT_MS = 2_000;
const LEASE_MARGIN_MS = 300;
/** Runs at the other receiver, one every 300 ms from 300 ms into the flood. */
const OTHERS = 5;
const OTHER_EVERY_MS = 300;

describe.each(DATABASE_TARGETS)('per-destination concurrency on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  let slow: Receiver;
  let other: Receiver;
  let agent: Agent;
  let dispatcher: Dispatcher | undefined;

  beforeAll(async () => {
    store = await openTestStore(target, systemClock);
    tenantId = await createTestTenantIn(store.ctx);
    slow = await startReceiver(() => ({ status: 200, delayMs: SLOW_MS }));
    other = await startReceiver();
    agent = createCallbackAgent({ allowPrivate: true });
  });
  afterAll(async () => {
    await dispatcher?.stop(0);
    await slow?.close();
    await other?.close();
    await agent?.destroy();
    await store?.close();
  });

  const job = (url: string, atMs: number, registeredAtMs: number) =>
    createJob(
      store.ctx,
      tenantId,
      testJobSpec(registeredAtMs, {
        schedule: { type: 'once', at: new Date(atMs).toISOString() },
        callback: { url, timeoutMs: TIMEOUT_MS },
      }),
      registeredAtMs,
    );

  // Its latency bounds are for one server; test/citus holds Citus to its own.
  it.runIf(target.kind !== 'citus')(
    'caps callbacks in flight per destination, keeps serving other destinations, and no queued run loses its lease',
    async () => {
      // All the flood due at one instant a little ahead, the other receiver's runs spread over the flood.
      const registeredAt = Date.now();
      const start = registeredAt + 1_000;
      const floodIds = new Set<string>();
      for (let i = 0; i < FLOOD; i++) floodIds.add((await job(`${slow.url}/flood/${i}`, start, registeredAt)).id);
      const otherDue = new Map<string, number>();
      for (let i = 1; i <= OTHERS; i++) {
        const at = start + i * OTHER_EVERY_MS;
        otherDue.set(`/other/${i}`, at);
        await job(`${other.url}/other/${i}`, at, registeredAt);
      }

      dispatcher = createDispatcher({
        database: store.database,
        clock: systemClock,
        logger: pino({ level: 'silent' }),
        deliver: createDeliver(agent),
        keyring: createKeyring(store.ctx),
        userAgent: 'chime-test',
        options: {
          perDestination: PER_DESTINATION,
          // Fewer slots than the flood: the flood must not take them all while the other destination's runs are due.
          concurrency: 8,
          batchSize: 100,
          leaseMarginMs: LEASE_MARGIN_MS,
          reapIntervalMs: 100,
          pollMs: 250,
          shutdownGraceMs: 5_000,
        },
      });
      await dispatcher.start();
      try {
        await eventually(
          async () => {
            const [c] = await query<{ n: number }>(store.database.db, sql`select count(*)::int as n from runs where status = 'succeeded'`);
            return c!.n === FLOOD + OTHERS;
          },
          { timeoutMs: 60_000, intervalMs: 100, what: 'every run to succeed' },
        );
      } finally {
        await dispatcher.stop();
        dispatcher = undefined;
      }

      // The slow destination never saw more than its share at once, and was kept busy with it.
      expect(slow.maxActive).toBeLessThanOrEqual(PER_DESTINATION);
      expect(slow.maxActive).toBe(PER_DESTINATION);

      // Each run once: on its first attempt, one request, no lease lost while queued.
      const runs = await runsOf(store.database, null);
      expect(runs).toHaveLength(FLOOD + OTHERS);
      for (const r of runs) expect(r, r.id).toMatchObject({ status: 'succeeded', attempts: 1 });
      const floodRunIds = runs.filter((r) => floodIds.has(r.jobId)).map((r) => r.id);
      const got = slow.received.map((h) => h.headers['webhook-id'] as string);
      expect(got).toHaveLength(FLOOD);
      expect(new Set(got)).toEqual(new Set(floodRunIds));
      const [lost] = await query<{ n: number }>(
        store.database.db,
        sql`select count(*)::int as n from attempts where error_class is not null`,
      );
      expect(lost!.n).toBe(0);

      // The flood outlasted a lease, so queued runs did wait longer than the lease they were claimed with.
      const floodStart = Math.min(...slow.received.map((h) => h.at));
      const floodEnd = Math.max(...slow.received.map((h) => h.at));
      expect(floodEnd - floodStart).toBeGreaterThan(TIMEOUT_MS + LEASE_MARGIN_MS);

      // The other destination was served during the flood, each callback soon after it was due rather than after the flood.
      expect(other.received).toHaveLength(OTHERS);
      for (const h of other.received) {
        expect(h.at, h.path).toBeLessThan(floodEnd);
        expect(h.at - otherDue.get(h.path)!, h.path).toBeLessThan((floodEnd - floodStart) / 2);
      }
    },
    120_000,
  );
});
