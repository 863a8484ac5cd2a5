/**
 * Flow control across dispatchers (API.md "Destination control"; src/store/queue/claim-flow-runs.ts): three
 * dispatchers in one process on one database, real undici delivery, real receivers on 127.0.0.1, on every database
 * target. A flow control of parallelism 5 and 20 starts per 1 s, and 500 runs of its jobs due within half a second:
 * - the receiver never has more than 5 requests unanswered at once, nor more than 20 arriving in any 1 s window;
 * - all 500 arrive, once each, in due order (give or take the 5 that may start together);
 * - pausing the flow control holds its runs (none sent while paused, though the dispatchers go on claiming other runs),
 *   resuming lets them go on;
 * - another flow control's runs and runs of jobs without one are not held up by it.
 */
import { sql } from 'drizzle-orm';
import type { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallbackAgent } from '../../src/dispatch/deliver.ts';
import type { Dispatcher } from '../../src/dispatch/drivers/node-dispatcher.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { query } from '../../src/store/db.ts';
import { getFlowControl, putFlowControl } from '../../src/store/flow-controls.ts';
import { createJobs } from '../../src/store/jobs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { testDispatcher } from '../support/dispatcher.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { createTestTenantIn, openTestStore, type TestStore, testJobSpec } from '../support/store.ts';

const RUNS = 500;
const PARALLELISM = 5;
const RATE = { limit: 20, periodMs: 1_000 };
const OTHER_RUNS = 20;
const FREE_RUNS = 20;

describe.each(DATABASE_TARGETS.filter((t) => t.kind !== 'citus'))('flow control across three dispatchers on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  let limited: Receiver;
  let other: Receiver;
  let free: Receiver;
  let agent: Agent;
  const dispatchers: Dispatcher[] = [];

  beforeAll(async () => {
    store = await openTestStore(target, systemClock);
    tenantId = await createTestTenantIn(store.ctx);
    limited = await startReceiver(() => ({ status: 200, delayMs: 40 }));
    other = await startReceiver(() => ({ status: 200, delayMs: 40 }));
    free = await startReceiver();
    agent = createCallbackAgent({ allowPrivate: true });
  });
  afterAll(async () => {
    await Promise.all(dispatchers.map((d) => d.stop(0)));
    await Promise.all([limited, other, free].map((r) => r?.close()));
    await agent?.destroy();
    await store?.close();
  });

  /** Jobs due at `atMs + i` ms (i = 0, 1, …), each POSTing to `url/i`, naming `flowControlKey`. */
  const jobs = (n: number, url: string, atMs: number, flowControlKey: string | null) => {
    const now = Date.now();
    return createJobs(
      store.ctx,
      tenantId,
      Array.from({ length: n }, (_, i) => ({
        ...testJobSpec(now, {
          schedule: { type: 'once', at: new Date(atMs + i).toISOString() },
          callback: { url: `${url}/${i}`, timeoutMs: 5_000 },
        }),
        flowControlKey,
      })),
      now,
    );
  };
  const indexOf = (path: string) => Number(path.split('/').pop());

  it('holds parallelism and rate together, sends every run once in due order, pauses and resumes, slows nothing else', async () => {
    const put = (key: string, spec: Parameters<typeof putFlowControl>[3]) => putFlowControl(store.ctx, tenantId, key, spec);
    await put('api', { rate: RATE, parallelism: PARALLELISM, paused: false });
    await put('other', { rate: null, parallelism: PARALLELISM, paused: false });
    const start = Date.now() + 1_500;
    await jobs(RUNS, limited.url, start, 'api');
    await jobs(OTHER_RUNS, other.url, start + 200, 'other');
    const freeDue = start + 500;
    await jobs(FREE_RUNS, free.url, freeDue, null);

    for (let i = 0; i < 3; i++) {
      const d = testDispatcher(store, agent, {
        owner: `d${i}`,
        perDestination: 16,
        concurrency: 64,
        batchSize: 100,
        leaseMarginMs: 5_000,
        reapIntervalMs: 500,
        pollMs: 500,
        shutdownGraceMs: 5_000,
      });
      dispatchers.push(d);
      await d.start();
    }
    // On a loaded machine registering 540 jobs can take longer than the lead: a run cannot go before its dispatchers do.
    const readyAt = Date.now();

    // Neither the other flow control's runs nor those without one wait for the limited ones.
    await other.waitFor(OTHER_RUNS, 15_000);
    await free.waitFor(FREE_RUNS, 15_000);

    // Waiting behind the limited runs would take ≥ 20 s (500 at 20 per second); a loaded machine adds a second or so.
    for (const r of free.received) expect(r.at - Math.max(freeDue + indexOf(r.path), readyAt), r.path).toBeLessThan(2_000);
    expect(other.maxActive).toBeLessThanOrEqual(PARALLELISM);

    // Paused: nothing more of it goes out, though the dispatchers go on claiming (a run without a flow control is sent).
    await limited.waitFor(100, 20_000);
    await put('api', { rate: RATE, parallelism: PARALLELISM, paused: true });
    await eventually(async () => (await getFlowControl(store.ctx, tenantId, 'api'))?.inFlight === 0, { what: 'its runs in flight to end' });
    const sentBeforePause = limited.received.length;
    await jobs(1, `${free.url}/after-pause`, Date.now() + 300, null);
    await free.waitFor(FREE_RUNS + 1, 10_000);
    expect(limited.received.length).toBe(sentBeforePause);
    const paused = await getFlowControl(store.ctx, tenantId, 'api');
    expect(paused).toMatchObject({ paused: true, inFlight: 0, waiting: RUNS - sentBeforePause });

    await put('api', { rate: RATE, parallelism: PARALLELISM, paused: false });
    await limited.waitFor(RUNS, 60_000);
    await eventually(
      async () => {
        const [c] = await query<{ n: number }>(store.database.db, sql`select count(*)::int as n from runs where status = 'succeeded'`);
        return c!.n === RUNS + OTHER_RUNS + FREE_RUNS + 1;
      },
      { timeoutMs: 20_000, what: 'every run to succeed' },
    );

    // At the receiver: never more than 5 at once, never more than 20 arriving within any 1 s.
    expect(limited.maxActive).toBeLessThanOrEqual(PARALLELISM);
    const at = limited.received.map((r) => r.at).sort((a, b) => a - b);
    let busiest = 0;
    for (let i = 0, j = 0; j < at.length; j++) {
      while (at[j]! - at[i]! >= RATE.periodMs) i++;
      busiest = Math.max(busiest, j - i + 1);
    }
    console.log(`${target.kind}: busiest 1 s window held ${busiest} of ${RATE.limit} allowed; most at once ${limited.maxActive}`);
    expect(busiest).toBeLessThanOrEqual(RATE.limit);
    // Each run once, in due order give or take the runs that start together.
    const order = limited.received.map((r) => indexOf(r.path));
    expect(new Set(order).size).toBe(RUNS);
    for (let p = 0; p < order.length; p++) expect(Math.abs(order[p]! - p), `position ${p}`).toBeLessThan(2 * PARALLELISM);
  }, 180_000);
});
