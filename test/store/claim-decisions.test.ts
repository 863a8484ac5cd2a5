/**
 * What `decideClaim` decides, as `claimRuns` applies it in the database: the relevancy window (docs/design.md invariant
 * 5), catch-up after missed occurrences (`all`, `one`, `none`), and `overlapPolicy: skip`.
 */
import { describe, expect, it } from 'vitest';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import { createJob, getJob } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { finishRuns } from '../../src/store/queue/finish-runs.ts';
import { reapExpiredLeases } from '../../src/store/queue/reap-leases.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { type JobSpecInput, runsOf, T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

const MINUTE = 60_000;

describe.each(DATABASE_TARGETS)('claim decisions on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;

  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });

  const claim = (nowMs: number, owner = 'A') => claimRuns(store.database.db, { owner, limit: 100, nowMs, leaseMarginMs: 30_000 });
  const job = (o: JobSpecInput = {}) => createJob(store.ctx, tenantId, testJobSpec(T0, o), T0);
  const finish = (run: ClaimedRun, o: { runStatus: 'succeeded' | 'retrying'; nextAttemptAtMs?: number; owner?: string }) =>
    finishRuns(store.database.db, o.owner ?? 'A', [
      {
        shard: run.shard,
        runId: run.runId,
        jobId: run.jobId,
        attempt: run.attempt,
        startedAtMs: T0,
        finishedAtMs: T0 + 1,
        responseStatus: o.runStatus === 'succeeded' ? 200 : 500,
        responseBodyExcerpt: null,
        errorClass: null,
        error: null,
        runStatus: o.runStatus,
        nextAttemptAtMs: o.nextAttemptAtMs ?? null,
        pauseReason: null,
      },
    ]);

  describe('relevancy window', () => {
    it('a run claimed after scheduledFor + window ends expired, without being handed out', async () => {
      const late = await job({ name: 'late', relevancyWindowMs: 1000 });
      expect(await claim(T0 + 1001)).toEqual([]);
      const [run] = await runsOf(store.database, late.id);
      expect(run).toMatchObject({ status: 'expired', attempts: 0, leaseOwner: null, nextAttemptAtMs: null, finishedAtMs: T0 + 1001 });
      expect(run!.error).toMatch(/relevancy window of 1000 ms/);
      // The once job has nothing left: it completes.
      expect((await getJob(store.ctx, tenantId, late.id))?.status).toBe('completed');
    });

    it('a run claimed inside its window is delivered', async () => {
      const inTime = await job({ name: 'in-time', relevancyWindowMs: 1000 });
      const claimed = await claim(T0 + 1000);
      expect(claimed.map((c) => c.jobId)).toEqual([inTime.id]);
      expect(await runsOf(store.database, inTime.id)).toMatchObject([{ status: 'running', attempts: 1 }]);
    });

    it('a retry that could only start after the window ends expired too', async () => {
      const j = await job({ relevancyWindowMs: 10_000, callback: { timeoutMs: 1000 } });
      const [first] = await claimRuns(store.database.db, { owner: 'A', limit: 10, nowMs: T0, leaseMarginMs: 0 });
      expect(first).toBeDefined();
      expect(await reapExpiredLeases(store.database.db, T0 + 20_000)).toBe(1);
      expect(await claim(T0 + 20_000, 'B')).toEqual([]);
      expect(await runsOf(store.database, j.id)).toMatchObject([{ status: 'expired', attempts: 1 }]);
    });
  });

  describe('catch-up of missed occurrences of an interval job', () => {
    const every = (catchUp: 'all' | 'one' | 'none') => job({ schedule: { type: 'interval', everyMs: MINUTE }, catchUp });
    // Ten and a half minutes late: the occurrences T0 … T0+10 min are all due.
    const now = T0 + 10 * MINUTE + 30_000;

    it("catchUp 'all' delivers every missed occurrence, one claim after another, then resumes on schedule", async () => {
      const j = await every('all');
      const delivered: number[] = [];
      for (let i = 0; i < 20; i++) {
        const got = await claim(now);
        if (got.length === 0) break;
        delivered.push(...got.map((g) => g.scheduledForMs));
      }
      expect(delivered).toEqual(Array.from({ length: 11 }, (_, k) => T0 + k * MINUTE));
      const all = await runsOf(store.database, j.id);
      expect(all).toHaveLength(12);
      expect(all.at(-1)).toMatchObject({ scheduledForMs: T0 + 11 * MINUTE, status: 'scheduled' });
      expect((await getJob(store.ctx, tenantId, j.id))?.nextRunAt?.getTime()).toBe(T0 + 11 * MINUTE);
    });

    it("catchUp 'one' delivers the missed occurrence once and resumes at the first occurrence after now", async () => {
      const j = await every('one');
      const got = await claim(now);
      expect(got.map((g) => g.scheduledForMs)).toEqual([T0]);
      expect(await claim(now)).toEqual([]);
      expect((await runsOf(store.database, j.id)).map((r) => [r.scheduledForMs, r.status])).toEqual([
        [T0, 'running'],
        [T0 + 11 * MINUTE, 'scheduled'],
      ]);
      expect((await getJob(store.ctx, tenantId, j.id))?.nextRunAt?.getTime()).toBe(T0 + 11 * MINUTE);
    });

    it("catchUp 'none' skips the missed occurrence and resumes at the first occurrence after now", async () => {
      const j = await every('none');
      expect(await claim(now)).toEqual([]);
      const all = await runsOf(store.database, j.id);
      expect(all.map((r) => [r.scheduledForMs, r.status])).toEqual([
        [T0, 'skipped'],
        [T0 + 11 * MINUTE, 'scheduled'],
      ]);
      expect(all[0]).toMatchObject({ attempts: 0, leaseOwner: null });
      expect(all[0]!.error).toMatch(/catchUp: none/);
    });

    it('an occurrence claimed on time is not missed, whatever the policy', async () => {
      const j = await every('none');
      expect((await claim(T0 + 1000)).map((g) => g.scheduledForMs)).toEqual([T0]);
      expect((await runsOf(store.database, j.id)).map((r) => r.scheduledForMs)).toEqual([T0, T0 + MINUTE]);
    });
  });

  describe('overlapPolicy', () => {
    const every = (overlapPolicy: 'allow' | 'skip') =>
      job({ schedule: { type: 'interval', everyMs: 1000 }, overlapPolicy, callback: { timeoutMs: 5000 } });

    it("'skip': an occurrence that falls due while the previous run is running ends skipped; the schedule goes on", async () => {
      const j = await every('skip');
      const [r0] = await claim(T0);
      expect(r0?.scheduledForMs).toBe(T0);
      expect(await claim(T0 + 1000)).toEqual([]);
      let all = await runsOf(store.database, j.id);
      expect(all.map((r) => [r.scheduledForMs, r.status])).toEqual([
        [T0, 'running'],
        [T0 + 1000, 'skipped'],
        [T0 + 2000, 'scheduled'],
      ]);
      expect(all[1]!.error).toMatch(/overlapPolicy: skip/);
      // Once the previous run is done, the next occurrence runs.
      expect((await finish(r0!, { runStatus: 'succeeded' })).size).toBe(1);
      expect((await claim(T0 + 2000)).map((g) => g.scheduledForMs)).toEqual([T0 + 2000]);
      all = await runsOf(store.database, j.id);
      expect(all.map((r) => r.status)).toEqual(['succeeded', 'skipped', 'running', 'scheduled']);
    });

    it("'skip': a previous run waiting to retry also counts as in flight", async () => {
      const j = await every('skip');
      const [r0] = await claim(T0);
      await finish(r0!, { runStatus: 'retrying', nextAttemptAtMs: T0 + 5000 });
      expect(await claim(T0 + 1000)).toEqual([]);
      expect((await runsOf(store.database, j.id)).map((r) => r.status)).toEqual(['retrying', 'skipped', 'scheduled']);
    });

    it("'skip': when the previous run's retry and the next occurrence are claimed together, only the retry is sent", async () => {
      const j = await every('skip');
      const [r0] = await claim(T0);
      await finish(r0!, { runStatus: 'retrying', nextAttemptAtMs: T0 + 1000 });
      const got = await claim(T0 + 1000);
      expect(got.map((g) => [g.scheduledForMs, g.attempt])).toEqual([[T0, 2]]);
      expect((await runsOf(store.database, j.id)).map((r) => [r.scheduledForMs, r.status])).toEqual([
        [T0, 'running'],
        [T0 + 1000, 'skipped'],
        [T0 + 2000, 'scheduled'],
      ]);
    });

    it("'allow': the same occurrence is delivered while the previous run is running", async () => {
      const j = await every('allow');
      await claim(T0);
      expect((await claim(T0 + 1000)).map((g) => g.scheduledForMs)).toEqual([T0 + 1000]);
      expect((await runsOf(store.database, j.id)).map((r) => r.status)).toEqual(['running', 'running', 'scheduled']);
    });
  });
});
