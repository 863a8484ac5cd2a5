/**
 * docs/design.md invariants 3 and 4 at the store level: a claim is a lease; only its holder's outcome is recorded
 * (`finishRuns`), the reaper returns expired leases to the queue (at-least-once) or ends them `failed`
 * (at-most-once: an ambiguous outcome is never re-sent; spent attempts), and `releaseLeases` does the same for the
 * runs a stopping dispatcher gives back.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { AttemptOutcome } from '../../src/domain/attempt-outcome.ts';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import { query } from '../../src/store/db.ts';
import { createJob } from '../../src/store/jobs.ts';
import { createNotificationEndpoint } from '../../src/store/notifications.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { finishRuns } from '../../src/store/queue/finish-runs.ts';
import { reapExpiredLeases, releaseLeases } from '../../src/store/queue/reap-leases.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import type { JobSpecInput } from '../support/store.ts';
import { attemptsOf, runById, runsOf, T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

/** Lease = callback timeout (1000 ms) + this margin. */
const MARGIN = 1;
const LEASE = 1000 + MARGIN;

describe.each(DATABASE_TARGETS)('leases on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;

  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });

  const claim = (owner: string, nowMs: number) => claimRuns(store.database.db, { owner, limit: 100, nowMs, leaseMarginMs: MARGIN });
  const job = (o: JobSpecInput = {}) => createJob(store.ctx, tenantId, testJobSpec(T0, { callback: { timeoutMs: 1000 }, ...o }), T0);
  const outcome = (run: ClaimedRun, o: Partial<AttemptOutcome> & Pick<AttemptOutcome, 'runStatus'>): AttemptOutcome => ({
    shard: run.shard,
    runId: run.runId,
    jobId: run.jobId,
    attempt: run.attempt,
    startedAtMs: T0,
    finishedAtMs: T0 + 10,
    responseStatus: null,
    responseBodyExcerpt: null,
    errorClass: null,
    error: null,
    nextAttemptAtMs: null,
    pauseReason: null,
    ...o,
  });

  it('a claim holds a lease of timeout + margin, and the reaper leaves unexpired leases alone', async () => {
    const j = await job();
    const [a] = await claim('A', T0);
    expect(a).toMatchObject({ jobId: j.id, attempt: 1, leaseExpiresAtMs: T0 + LEASE });
    expect(await runById(store.database, a!.runId)).toMatchObject({ status: 'running', leaseOwner: 'A', leaseExpiresAtMs: T0 + LEASE });
    expect(await reapExpiredLeases(store.database.db, T0 + LEASE - 1)).toBe(0);
    expect(await reapExpiredLeases(store.database.db, T0 + LEASE)).toBe(0);
    expect(await runById(store.database, a!.runId)).toMatchObject({ status: 'running', leaseOwner: 'A' });
  });

  it("after the lease is reaped and reclaimed by B, A's late outcome does not overwrite B's; the log keeps both", async () => {
    await job();
    const [a] = await claim('A', T0);
    expect(await reapExpiredLeases(store.database.db, T0 + 2000)).toBe(1);
    expect(await runById(store.database, a!.runId)).toMatchObject({
      status: 'retrying',
      leaseOwner: null,
      nextAttemptAtMs: T0 + 2000,
      attempts: 1,
    });

    const [b, ...none] = await claim('B', T0 + 2000);
    expect(none).toEqual([]);
    expect(b).toMatchObject({ runId: a!.runId, attempt: 2 });

    // A's delivery finally answers 200: too late, B holds the run.
    const lateA = await finishRuns(store.database.db, 'A', [outcome(a!, { runStatus: 'succeeded', responseStatus: 200 })]);
    expect(lateA.size).toBe(0);
    expect(await runById(store.database, a!.runId)).toMatchObject({ status: 'running', leaseOwner: 'B', attempts: 2 });

    const heldB = await finishRuns(store.database.db, 'B', [
      outcome(b!, { runStatus: 'failed', responseStatus: 500, errorClass: 'bad_status', error: 'unexpected status 500' }),
    ]);
    expect([...heldB]).toEqual([a!.runId]);
    expect(await runById(store.database, a!.runId)).toMatchObject({ status: 'failed', leaseOwner: null, error: 'unexpected status 500' });
    expect(await attemptsOf(store.database, a!.runId)).toEqual([
      // The reaper logged attempt 1 as lease_lost; A's late 200 filled the entry in without changing its class.
      {
        attempt: 1,
        responseStatus: 200,
        errorClass: 'lease_lost',
        error: 'the lease expired before a result was recorded (dispatcher died or stalled); then: status 200',
      },
      { attempt: 2, responseStatus: 500, errorClass: 'bad_status', error: 'unexpected status 500' },
    ]);
  });

  it('finishRuns records every time to the millisecond: the retry time, the finish time, the attempt start, end and duration', async () => {
    await job();
    await job();
    const [a, b] = await claim('A', T0);
    const held = await finishRuns(store.database.db, 'A', [
      outcome(a!, {
        runStatus: 'retrying',
        startedAtMs: T0 + 1,
        finishedAtMs: T0 + 999,
        nextAttemptAtMs: T0 + 61_237,
        responseStatus: 503,
        error: 'unexpected status 503',
      }),
      outcome(b!, {
        runStatus: 'succeeded',
        startedAtMs: T0 + 7,
        finishedAtMs: T0 + 1_024,
        responseStatus: 200,
        responseBodyExcerpt: 'ok ✓',
      }),
    ]);
    expect(held.size).toBe(2);
    expect(await runById(store.database, a!.runId)).toMatchObject({ status: 'retrying', nextAttemptAtMs: T0 + 61_237, finishedAtMs: null });
    expect(await runById(store.database, b!.runId)).toMatchObject({ status: 'succeeded', nextAttemptAtMs: null, finishedAtMs: T0 + 1_024 });
    const [logged] = await query<{
      started_at: Date | string;
      finished_at: Date | string;
      duration_ms: number;
      response_body_excerpt: string;
    }>(store.database.db, sql`select started_at, finished_at, duration_ms, response_body_excerpt from attempts where run_id = ${b!.runId}`);
    expect(new Date(logged!.started_at).getTime()).toBe(T0 + 7);
    expect(new Date(logged!.finished_at).getTime()).toBe(T0 + 1_024);
    expect(logged).toMatchObject({ duration_ms: 1_017, response_body_excerpt: 'ok ✓' });
  });

  it('a run reaped after its dispatcher died shows the lost attempt in its log', async () => {
    await job();
    const [a] = await claim('A', T0);
    expect(await reapExpiredLeases(store.database.db, T0 + 2000)).toBe(1);
    expect(await attemptsOf(store.database, a!.runId)).toEqual([
      {
        attempt: 1,
        responseStatus: null,
        errorClass: 'lease_lost',
        error: 'the lease expired before a result was recorded (dispatcher died or stalled)',
      },
    ]);
    const [b] = await claim('B', T0 + 2000);
    await finishRuns(store.database.db, 'B', [outcome(b!, { runStatus: 'succeeded', responseStatus: 200 })]);
    expect((await attemptsOf(store.database, a!.runId)).map((x) => [x.attempt, x.errorClass])).toEqual([
      [1, 'lease_lost'],
      [2, null],
    ]);
  });

  it("an owner's outcome of an earlier attempt does not overwrite its own later claim of the same run", async () => {
    await job();
    const [first] = await claim('A', T0);
    expect(await reapExpiredLeases(store.database.db, T0 + 2000)).toBe(1);
    const [second] = await claim('A', T0 + 2000);
    expect(second).toMatchObject({ runId: first!.runId, attempt: 2 });
    // Attempt 1's request (still in flight when its lease expired) now answers.
    const late = await finishRuns(store.database.db, 'A', [outcome(first!, { runStatus: 'succeeded', responseStatus: 200 })]);
    expect(late.size).toBe(0);
    expect(await runById(store.database, first!.runId)).toMatchObject({ status: 'running', leaseOwner: 'A', attempts: 2 });
    const current = await finishRuns(store.database.db, 'A', [outcome(second!, { runStatus: 'succeeded', responseStatus: 204 })]);
    expect(current.has(first!.runId)).toBe(true);
    expect(await runById(store.database, first!.runId)).toMatchObject({ status: 'succeeded' });
    expect((await attemptsOf(store.database, first!.runId)).map((x) => [x.attempt, x.responseStatus])).toEqual([
      [1, 200],
      [2, 204],
    ]);
  });

  it('the reaper: at-least-once back to retrying due now; at-most-once failed as ambiguous; spent attempts failed', async () => {
    const again = await job({ name: 'again', retry: { maxAttempts: 3 } });
    const once = await job({ name: 'once', deliveryMode: 'at-most-once', retry: { maxAttempts: 3 } });
    const spent = await job({ name: 'spent', retry: { maxAttempts: 1 } });
    const later = await job({ name: 'later', callback: { timeoutMs: 60_000 } });
    expect(await claim('A', T0)).toHaveLength(4);
    const now = T0 + 5_000;
    expect(await reapExpiredLeases(store.database.db, now)).toBe(3);

    const [r1] = await runsOf(store.database, again.id);
    expect(r1).toMatchObject({
      status: 'retrying',
      nextAttemptAtMs: now,
      finishedAtMs: null,
      leaseOwner: null,
      leaseExpiresAtMs: null,
      attempts: 1,
    });
    expect(r1!.error).toMatch(/lost its lease/);
    const [r2] = await runsOf(store.database, once.id);
    expect(r2).toMatchObject({ status: 'failed', nextAttemptAtMs: null, finishedAtMs: now, leaseOwner: null });
    expect(r2!.error).toMatch(/^ambiguous outcome: .*not re-sent \(at-most-once\)$/);
    const [r3] = await runsOf(store.database, spent.id);
    expect(r3).toMatchObject({ status: 'failed', nextAttemptAtMs: null, finishedAtMs: now, leaseOwner: null });
    const [r4] = await runsOf(store.database, later.id);
    expect(r4).toMatchObject({ status: 'running', leaseOwner: 'A' });

    // Only the at-least-once run comes back, as attempt 2 of the same run.
    const reclaimed = await claim('B', now);
    expect(reclaimed.map((r) => [r.runId, r.attempt])).toEqual([[r1!.id, 2]]);
  });

  it("releaseLeases gives back only the owner's listed runs, like the reaper would end them", async () => {
    const again = await job({ name: 'again', retry: { maxAttempts: 3 } });
    const once = await job({ name: 'once', deliveryMode: 'at-most-once', retry: { maxAttempts: 3 } });
    const spent = await job({ name: 'spent', retry: { maxAttempts: 1 } });
    const unlisted = await job({ name: 'unlisted' });
    const claimed = await claim('A', T0);
    expect(claimed).toHaveLength(4);
    const other = await job({ name: 'other' });
    const [byB] = await claim('B', T0);
    expect(byB?.jobId).toBe(other.id);

    const runOf = (jobId: string) => claimed.find((c) => c.jobId === jobId)!.runId;
    const now = T0 + 500; // before the leases expire: a shutdown, not a reap
    await releaseLeases(
      store.database.db,
      'A',
      [runOf(again.id), runOf(once.id), runOf(spent.id), byB!.runId].map((runId) => ({ shard: claimed[0]!.shard, runId })),
      now,
    );

    const [r1] = await runsOf(store.database, again.id);
    expect(r1).toMatchObject({ status: 'retrying', nextAttemptAtMs: now, finishedAtMs: null, leaseOwner: null, leaseExpiresAtMs: null });
    const [r2] = await runsOf(store.database, once.id);
    expect(r2).toMatchObject({ status: 'failed', nextAttemptAtMs: null, finishedAtMs: now, leaseOwner: null });
    expect(r2!.error).toMatch(/^ambiguous outcome: .*not re-sent \(at-most-once\)$/);
    // Its only attempt was the one cut short: it is not sent a second time.
    const [r3] = await runsOf(store.database, spent.id);
    expect(r3).toMatchObject({ status: 'failed', nextAttemptAtMs: null, finishedAtMs: now, leaseOwner: null });
    expect(await runsOf(store.database, unlisted.id)).toMatchObject([{ status: 'running', leaseOwner: 'A' }]);
    expect(await runsOf(store.database, other.id)).toMatchObject([{ status: 'running', leaseOwner: 'B' }]);

    // A's outcomes arriving after the release change nothing.
    const late = await finishRuns(
      store.database.db,
      'A',
      claimed.filter((c) => c.jobId !== unlisted.id).map((c) => outcome(c, { runStatus: 'succeeded', responseStatus: 200 })),
    );
    expect(late.size).toBe(0);
    expect((await claim('C', now)).map((r) => r.runId)).toEqual([r1!.id]);
  });

  it('releaseLeases records run.failed for the at-most-once run it fails, in the same transaction, as the reaper does', async () => {
    await createNotificationEndpoint(store.ctx, tenantId, { url: 'http://127.0.0.1:9/events', events: ['run.failed'], description: null });
    const once = await job({ name: 'once', deliveryMode: 'at-most-once' });
    const again = await job({ name: 'again', retry: { maxAttempts: 3 } });
    const claimed = await claim('A', T0);
    await releaseLeases(store.database.db, 'A', claimed, T0 + 500);
    const events = await query<{ type: string; run_id: string }>(
      store.database.db,
      sql`select payload->>'type' as type, payload->'data'->'run'->>'runId' as run_id from runs where trigger = 'notification'`,
    );
    const [failed] = await runsOf(store.database, once.id);
    expect(failed!.status).toBe('failed');
    expect((await runsOf(store.database, again.id))[0]!.status).toBe('retrying');
    expect(events).toEqual([{ type: 'run.failed', run_id: failed!.id }]);
  });

  it('a run the reaper or a release ends failed counts toward pauseAfterFailures like a failed finish, and pauses the job', async () => {
    await createNotificationEndpoint(store.ctx, tenantId, { url: 'http://127.0.0.1:9/paused', events: ['job.paused'], description: null });
    const every = { type: 'interval', everyMs: 60_000 } as const;
    const withPause = (n: number, o: JobSpecInput) => ({
      ...testJobSpec(T0, { callback: { timeoutMs: 1000 }, schedule: every, ...o }),
      pauseAfterFailures: n,
    });
    const reaped = await createJob(store.ctx, tenantId, withPause(1, { name: 'reaped', deliveryMode: 'at-most-once' }), T0);
    const released = await createJob(store.ctx, tenantId, withPause(1, { name: 'released', deliveryMode: 'at-most-once' }), T0);
    const spent = await createJob(store.ctx, tenantId, withPause(2, { name: 'spent', retry: { maxAttempts: 1 } }), T0);
    const claimed = await claim('A', T0);
    expect(claimed).toHaveLength(3);
    await releaseLeases(
      store.database.db,
      'A',
      claimed.filter((c) => c.jobId === released.id),
      T0 + 500,
    );
    expect(await reapExpiredLeases(store.database.db, T0 + 5_000)).toBe(2);

    const jobsNow = await query<{ id: string; status: string; paused_reason: string | null; consecutive_failures: number }>(
      store.database.db,
      sql`select id, status, paused_reason, consecutive_failures from jobs where kind = 'callback'`,
    );
    const byId = new Map(
      jobsNow.map((j) => [j.id, { status: j.status, pausedReason: j.paused_reason, failures: Number(j.consecutive_failures) }]),
    );
    // Ambiguous (at-most-once) and spent runs are failed runs: each counts once, and reaching the limit pauses.
    expect(byId.get(reaped.id)).toEqual({ status: 'paused', pausedReason: 'consecutive_failures', failures: 1 });
    expect(byId.get(released.id)).toEqual({ status: 'paused', pausedReason: 'consecutive_failures', failures: 1 });
    expect(byId.get(spent.id)).toEqual({ status: 'active', pausedReason: null, failures: 1 });
    // A pause cancels the next occurrence the claim had made; the job below its limit keeps its own.
    for (const j of [reaped, released]) expect((await runsOf(store.database, j.id)).map((r) => r.status)).toEqual(['failed', 'canceled']);
    expect((await runsOf(store.database, spent.id)).map((r) => r.status)).toEqual(['failed', 'scheduled']);
    // And says so, in the same transactions.
    const paused = await query<{ job_id: string; reason: string }>(
      store.database.db,
      sql`select payload->'data'->'job'->>'jobId' as job_id, payload->'data'->>'reason' as reason from runs
          where trigger = 'notification' and payload->>'type' = 'job.paused'`,
    );
    expect(paused.sort((a, b) => a.job_id.localeCompare(b.job_id))).toEqual(
      [reaped.id, released.id].sort().map((id) => ({ job_id: id, reason: 'consecutive_failures' })),
    );
  });
});
