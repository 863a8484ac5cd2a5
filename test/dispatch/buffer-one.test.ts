/**
 * `overlapPolicy: buffer-one`, and backfills under the overlap policy, through a real dispatcher (API.md "Richer
 * schedules"; the claim's `decideClaim`/`overlapOf`/`bufferRuns`, src/store/queue/run-ends.ts `releaseNextBuffered`,
 * src/store/backfill.ts): undici delivery to a slow receiver on 127.0.0.1, on every database target.
 * - A job every second whose requests take three seconds: the receiver never has two of its requests at once; each
 *   request after the first starts right after the previous one ends (the end released it: not at its occurrence);
 *   the occurrences in between end `skipped` with the buffer-one reason; every occurrence has exactly one run, either
 *   delivered or skipped, and each is delivered once.
 * - A run claimed ahead of its time (the lookahead) and buffered, released by an end before its occurrence, is not sent
 *   before its occurrence.
 * - A backfill of a `skip` job goes one run at a time, oldest first, each started by the end of the one before; an
 *   `allow` job's go together.
 * - A backfill of a `buffer-one` job lets a live occurrence due meanwhile go at the next end, before the backfill's
 *   remaining runs (not skipped behind them).
 * - A backfill whose runs expire at their claim (a relevancy window shorter than the backfill takes) still ends every
 *   run: an end at the claim releases the next.
 */
import { sql } from 'drizzle-orm';
import type { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallbackAgent } from '../../src/dispatch/deliver.ts';
import type { DispatcherOptions } from '../../src/dispatch/drivers/node-dispatcher.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { backfillJob } from '../../src/store/backfill.ts';
import { query } from '../../src/store/db.ts';
import { createJob } from '../../src/store/jobs.ts';
import { createTenant } from '../../src/store/tenants.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { testDispatcher } from '../support/dispatcher.ts';
import { eventually } from '../support/eventually.ts';
import { type Received, type Receiver, startReceiver } from '../support/receiver.ts';
import { type JobSpecInput, openTestStore, runsOf, type TestStore, testJobSpec } from '../support/store.ts';

const DAY_MS = 86_400_000;
const BUFFER_ONE_SKIP = 'a run is already buffered behind the one in flight (overlapPolicy: buffer-one)';
const FINAL = ['succeeded', 'failed', 'expired', 'skipped', 'canceled'];

describe.each(DATABASE_TARGETS)('buffer-one and backfill through a dispatcher on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  let agent: Agent;

  beforeAll(async () => {
    store = await openTestStore(target, systemClock);
    tenantId = (await createTenant(store.ctx, 'buffer-one')).tenant.tenantId;
    agent = createCallbackAgent({ allowPrivate: true });
  });
  afterAll(async () => {
    await agent?.destroy();
    await store?.close();
  });

  /**
   * Runs `body` with a receiver answering every request after `delayMs` and a started dispatcher (`options` over the
   * test's), both closed after, whatever happens.
   */
  async function withDispatcher(delayMs: number, options: Partial<DispatcherOptions>, body: (receiver: Receiver) => Promise<void>) {
    const receiver = await startReceiver(() => ({ status: 200, delayMs }));
    const dispatcher = testDispatcher(store, agent, { pollMs: 200, reapIntervalMs: 500, leaseMarginMs: 5_000, ...options });
    await dispatcher.start();
    try {
      await body(receiver);
    } finally {
      await dispatcher.stop(0);
      await receiver.close();
    }
  }

  const job = (url: string, o: JobSpecInput) => {
    const now = Date.now();
    return createJob(
      store.ctx,
      tenantId,
      testJobSpec(now, { retry: { maxAttempts: 1 }, ...o, callback: { url, timeoutMs: 10_000, ...o.callback } }),
      now,
    );
  };
  /** The job's runs once every one of them is final (and at least `n` exist). */
  const finalRuns = (jobId: string, n: number, timeoutMs: number) =>
    eventually(
      async () => {
        const runs = await runsOf(store.database, jobId);
        return runs.length >= n && runs.every((r) => FINAL.includes(r.status)) ? runs : undefined;
      },
      { timeoutMs, what: `${n} final runs of job ${jobId}` },
    );
  const scheduledFor = (r: Received) => Date.parse(r.headers['chime-scheduled-for'] as string);
  const byArrival = (received: Received[]) => [...received].sort((a, b) => a.at - b.at);
  /** Runs that were buffered (and released) on their way. */
  const bufferedRuns = async (jobId: string) =>
    (await query<{ id: string }>(store.database.db, sql`select id from runs where job_id = ${jobId} and buffered`)).length;

  it('a slow job every second: one request at a time, each started by the end of the one before, the rest skipped', async () => {
    const DELAY = 3_000;
    await withDispatcher(DELAY, {}, async (receiver) => {
      const start = Math.ceil((Date.now() + 1_500) / 1000) * 1000;
      const occurrences = Array.from({ length: 10 }, (_, k) => start + k * 1000);
      const { id } = await job(`${receiver.url}/slow`, {
        schedule: {
          type: 'interval',
          everyMs: 1000,
          startAt: new Date(start).toISOString(),
          endAt: new Date(occurrences.at(-1)!).toISOString(),
        },
        overlapPolicy: 'buffer-one',
        // Every occurrence gets its run even if a claim is late on a loaded machine.
        catchUp: 'all',
      });
      const runs = await finalRuns(id, occurrences.length, 40_000);

      // Nothing lost, nothing doubled: one run per occurrence, delivered or skipped behind the buffered one.
      expect(runs.map((r) => r.scheduledForMs)).toEqual(occurrences);
      const delivered = runs.filter((r) => r.status === 'succeeded');
      const skipped = runs.filter((r) => r.status === 'skipped');
      expect(delivered.length + skipped.length).toBe(runs.length);
      for (const r of skipped) expect(r.error).toBe(BUFFER_ONE_SKIP);
      expect(delivered.length).toBeGreaterThanOrEqual(3);
      expect(skipped.length).toBeGreaterThanOrEqual(3);
      const requests = byArrival(receiver.received);
      expect(requests.map(scheduledFor)).toEqual(delivered.map((r) => r.scheduledForMs));

      // Never two at once; each after the first starts right after the one before ends, well after its occurrence.
      expect(receiver.maxActive).toBe(1);
      for (let i = 1; i < requests.length; i++) {
        const previousEnd = requests[i - 1]!.at + DELAY;
        const r = requests[i]!;
        expect(r.at).toBeGreaterThanOrEqual(previousEnd);
        // Started by that end (a loaded CI machine took up to 1.3 s for a release): a buffered run has no due time of
        // its own, so nothing but the end could have sent it.
        expect(r.at - previousEnd, `request ${i}: started ${r.at - previousEnd} ms after the previous end`).toBeLessThan(5_000);
        expect(r.at - scheduledFor(r), `request ${i}: not sent at its occurrence`).toBeGreaterThan(1_000);
      }
      expect(await bufferedRuns(id)).toBe(delivered.length - 1);
    });
  }, 60_000);

  it('a run buffered ahead of its time is not sent before its occurrence when the run before ends first', async () => {
    // Claimed 2 s ahead, while the previous request (2.5 s) is in flight: buffered; that request ends ~0.5 s before the
    // occurrence, which releases it.
    await withDispatcher(2_500, { lookaheadMs: 2_000 }, async (receiver) => {
      const start = Math.ceil((Date.now() + 3_000) / 1000) * 1000;
      const { id } = await job(`${receiver.url}/ahead`, {
        schedule: {
          type: 'interval',
          everyMs: 3_000,
          startAt: new Date(start).toISOString(),
          endAt: new Date(start + 9_000).toISOString(),
        },
        overlapPolicy: 'buffer-one',
        catchUp: 'all',
      });
      const runs = await finalRuns(id, 4, 40_000);
      expect(runs.every((r) => r.status === 'succeeded')).toBe(true);
      expect(await bufferedRuns(id)).toBeGreaterThanOrEqual(1);
      for (const r of receiver.received) expect(r.at, 'sent before its occurrence').toBeGreaterThanOrEqual(scheduledFor(r));
      expect(receiver.maxActive).toBe(1);
    });
  }, 60_000);

  /**
   * A daily interval whose occurrences 1..n are in the past (to backfill), an hour apart from now (the next, live one is
   * out of the way); `also` joins a schedule to it (a union).
   */
  const pastDays = (n: number, also?: { type: 'once'; at: string }) => {
    const start = Date.now() - n * DAY_MS + 3_600_000;
    const past = Array.from({ length: n }, (_, k) => start + k * DAY_MS);
    const daily = { type: 'interval' as const, everyMs: DAY_MS, startAt: new Date(start).toISOString() };
    return { past, schedule: also ? { type: 'union' as const, schedules: [daily, also] } : daily };
  };

  /** The job's backfill runs once every one of them is final. */
  const finalBackfill = (jobId: string, n: number, timeoutMs = 30_000) =>
    eventually(
      async () => {
        const runs = (await runsOf(store.database, jobId)).filter((r) => r.trigger === 'backfill');
        return runs.length === n && runs.every((r) => FINAL.includes(r.status)) ? runs : undefined;
      },
      { timeoutMs, what: `${n} final backfill runs of job ${jobId}` },
    );

  it('a backfill of a skip job goes one at a time, oldest first, each started by the end of the one before', async () => {
    const DELAY = 500;
    await withDispatcher(DELAY, {}, async (receiver) => {
      const { past, schedule } = pastDays(5);
      const { id } = await job(`${receiver.url}/skip`, { schedule, overlapPolicy: 'skip' });
      expect(await backfillJob(store.ctx, tenantId, id, { fromMs: past[0]!, toMs: Date.now(), limit: 100 })).toMatchObject({
        created: 5,
        remaining: 0,
      });
      const runs = await finalBackfill(id, 5);
      expect(runs.map((r) => r.status)).toEqual(Array(5).fill('succeeded'));
      const requests = byArrival(receiver.received);
      expect(requests.map(scheduledFor)).toEqual(past);
      expect(receiver.maxActive).toBe(1);
      for (let i = 1; i < requests.length; i++) {
        const gap = requests[i]!.at - (requests[i - 1]!.at + DELAY);
        expect(gap).toBeGreaterThanOrEqual(0);
        // Started by that end (a NOTIFY): a loaded CI machine took up to 1.3 s. Without the release, the buffered runs
        // would have no due time and never go (finalBackfill would time out).
        expect(gap).toBeLessThan(5_000);
      }
    });
  }, 60_000);

  it('a backfill of an allow job goes together', async () => {
    await withDispatcher(1_500, {}, async (receiver) => {
      const { past, schedule } = pastDays(5);
      const { id } = await job(`${receiver.url}/allow`, { schedule });
      await backfillJob(store.ctx, tenantId, id, { fromMs: past[0]!, toMs: Date.now(), limit: 100 });
      await finalBackfill(id, 5);
      expect(receiver.received.map(scheduledFor).sort((a, b) => a - b)).toEqual(past);
      // All five were sent before the first answer came back.
      expect(receiver.maxActive).toBe(5);
    });
  }, 60_000);

  it("a live occurrence of a buffer-one job goes at the next end of a backfill's run, before the rest of it", async () => {
    const DELAY = 1_000;
    await withDispatcher(DELAY, {}, async (receiver) => {
      // The live occurrence falls while the backfill's second run is in flight.
      const live = Date.now() + 1_500;
      const { past, schedule } = pastDays(5, { type: 'once', at: new Date(live).toISOString() });
      const { id } = await job(`${receiver.url}/live`, { schedule, overlapPolicy: 'buffer-one' });
      await backfillJob(store.ctx, tenantId, id, { fromMs: past[0]!, toMs: Date.now(), limit: 100 });
      await finalBackfill(id, 5);
      const liveRun = await eventually(async () => {
        const r = (await runsOf(store.database, id)).find((x) => x.trigger === 'schedule' && x.scheduledForMs === live);
        return r && FINAL.includes(r.status) ? r : undefined;
      });
      expect(liveRun.status).toBe('succeeded');
      const order = byArrival(receiver.received).map(scheduledFor);
      expect(order).toHaveLength(6);
      expect(order.indexOf(live), `sent in ${order.map((t) => (t === live ? 'live' : 'backfill')).join(', ')}`).toBeLessThan(5);
      expect(order.filter((t) => t !== live)).toEqual(past);
      expect(receiver.maxActive).toBe(1);
    });
  }, 60_000);

  it('a backfill whose runs expire at their claim still ends every run', async () => {
    await withDispatcher(1_000, {}, async (receiver) => {
      const { past, schedule } = pastDays(6);
      // The window counts from the backfill: the first run or two go, the later ones are past it when their turn comes.
      const { id } = await job(`${receiver.url}/expire`, { schedule, overlapPolicy: 'skip', relevancyWindowMs: 1_500 });
      await backfillJob(store.ctx, tenantId, id, { fromMs: past[0]!, toMs: Date.now(), limit: 100 });
      const runs = await finalBackfill(id, 6);
      expect(runs.filter((r) => r.status === 'succeeded').length).toBeGreaterThanOrEqual(1);
      expect(runs.filter((r) => r.status === 'expired').length).toBeGreaterThanOrEqual(2);
      expect(receiver.maxActive).toBe(1);
    });
  }, 60_000);
});
