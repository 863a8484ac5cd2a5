/**
 * No dispatcher hoards a slow destination's runs (issue #34 point 6), with two dispatchers in process on one database
 * (on PostgreSQL each with its own connection pool, as two processes would have), the real undici delivery and a slow
 * receiver on 127.0.0.1. 24 runs for it fall due at once; each dispatcher's limit for it is 16. A dispatcher claims no
 * more of a destination's runs than it can start soon (its limit, less what it holds), so the other takes the rest:
 * both send to the receiver, and all 24 requests arrive together, before the first answer, rather than 16 then 8 after a
 * slow round trip (what one dispatcher claiming all 24, 8 of them queued for its slots, did).
 */

import { pino } from 'pino';
import type { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallbackAgent, createDeliver } from '../../src/dispatch/deliver.ts';
import { createDispatcher, type Dispatcher } from '../../src/dispatch/drivers/node-dispatcher.ts';
import { createKeyring } from '../../src/dispatch/keyring.ts';
import { systemClock } from '../../src/domain/clock.ts';
import type { Database } from '../../src/store/db.ts';
import { createJobs } from '../../src/store/jobs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { createTestTenantIn, openTestStore, runsOf, type TestStore, testJobSpec } from '../support/store.ts';

const RUNS = 24;
const PER_DESTINATION = 16;
/** The slow receiver's answer time, in ms: longer than the dispatchers need to claim and send every run. */
const SLOW_MS = 2_000;

describe.each(DATABASE_TARGETS)('two dispatchers and one slow destination on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  let slow: Receiver;
  let agent: Agent;
  const running: Dispatcher[] = [];

  beforeAll(async () => {
    store = await openTestStore(target, systemClock);
    tenantId = await createTestTenantIn(store.ctx);
    slow = await startReceiver(() => ({ status: 200, delayMs: SLOW_MS }));
    agent = createCallbackAgent({ allowPrivate: true });
  });
  afterAll(async () => {
    await Promise.all(running.map((d) => d.stop(0)));
    await slow?.close();
    await agent?.destroy();
    await store?.close();
  });

  const start = async (database: Database, i: number) => {
    const d = createDispatcher({
      database,
      clock: systemClock,
      logger: pino({ level: 'silent' }),
      deliver: createDeliver(agent),
      keyring: createKeyring({ db: database.db, cipher: store.cipher, clock: systemClock }),
      userAgent: `chime-test-${i}`,
      options: { perDestination: PER_DESTINATION, pollMs: 250, reapIntervalMs: 60_000, shutdownGraceMs: 5_000 },
    });
    running.push(d);
    await d.start();
    return d;
  };

  it('both send to it, and every run goes out in the first round instead of queuing behind one dispatcher', async () => {
    const databases = target.kind === 'pglite' ? [store.database, store.database] : [store.openAnother()!, store.openAnother()!];
    await Promise.all(databases.map((db, i) => start(db, i)));
    // All due at one instant a little ahead: both dispatchers are up and sleeping until then.
    const registeredAt = Date.now();
    const at = new Date(registeredAt + 1_000).toISOString();
    const specs = Array.from({ length: RUNS }, (_, i) =>
      testJobSpec(registeredAt, {
        schedule: { type: 'once', at },
        callback: { url: `${slow.url}/slow/${i}`, timeoutMs: 3 * SLOW_MS },
      }),
    );
    await createJobs(store.ctx, tenantId, specs, registeredAt);

    await slow.waitFor(RUNS, 15_000);
    await eventually(async () => (await runsOf(store.database, null)).every((r) => r.status === 'succeeded'), {
      timeoutMs: 15_000,
      intervalMs: 100,
      what: 'every run to succeed',
    });
    const by = (i: number) => slow.received.filter((h) => h.headers['user-agent'] === `chime-test-${i}`).length;
    expect(by(0) + by(1)).toBe(RUNS);
    // Both sent to the slow receiver, neither more than its limit: neither queued runs for a slot the other had free.
    expect(by(0)).toBeGreaterThan(0);
    expect(by(1)).toBeGreaterThan(0);
    expect(Math.max(by(0), by(1))).toBeLessThanOrEqual(PER_DESTINATION);
    // One round: the last request arrived before the first answer came back.
    const times = slow.received.map((h) => h.at);
    expect(Math.max(...times) - Math.min(...times)).toBeLessThan(SLOW_MS);
    expect(slow.maxActive).toBe(RUNS);
    // Each run once.
    expect(new Set(slow.received.map((h) => h.headers['webhook-id'])).size).toBe(RUNS);
  }, 60_000);
});
