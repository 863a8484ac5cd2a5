/**
 * Async completion at the store level (API.md "Long-running jobs: completion reported by the receiver";
 * docs/design.md "Run states and transitions", invariant 20 with 4 and 15), on an injected clock: the finish of an
 * acknowledged attempt makes the run await (running, no lease, deadlines); the receiver's report ends it (or fails the
 * attempt, retried by the policy); the token is valid for its attempt only; the completion reaper fails overdue attempts
 * with `completion_timeout` (retried, at-most-once never re-sent, counted toward pauseAfterFailures); a report faster
 * than the finish ends the run and the finish changes nothing; `overlapPolicy: skip` counts an awaiting run.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { reapOnce } from '../../src/dispatch/engine/lease-keeper.ts';
import type { AttemptOutcome } from '../../src/domain/attempt-outcome.ts';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import type { ManualClock } from '../../src/domain/clock.ts';
import { type CompletionReport, recordHeartbeat, reportCompletion } from '../../src/store/completion.ts';
import { completionToken } from '../../src/store/completion-token.ts';
import { query } from '../../src/store/db.ts';
import { createJob } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { finishRuns } from '../../src/store/queue/finish-runs.ts';
import { reapOverdueCompletions } from '../../src/store/queue/reap-completions.ts';
import { reapExpiredLeases } from '../../src/store/queue/reap-leases.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { recordingLogger } from '../support/logger.ts';
import { type JobSpecInput, runById, runsOf, T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

const TIMEOUT = 60_000;
const HEARTBEAT = 10_000;

describe.each(DATABASE_TARGETS)('async completion on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });
  const clock = () => store.clock as ManualClock;
  const at = (ms: number) => clock().set(ms);

  /** An async job (TIMEOUT, no heartbeat) unless `o.completion` says otherwise (testJobSpec leaves `completion` and `pauseAfterFailures` out). */
  const job = (o: JobSpecInput = {}) =>
    createJob(
      store.ctx,
      tenantId,
      {
        ...testJobSpec(T0, o),
        pauseAfterFailures: o.pauseAfterFailures ?? 0,
        completion: o.completion === undefined ? { mode: 'async', timeoutMs: TIMEOUT } : o.completion,
      },
      T0,
    );
  const claim = async (owner: string, nowMs: number) => claimRuns(store.database.db, { owner, limit: 100, nowMs, leaseMarginMs: 1 });
  const ack = (run: ClaimedRun, finishedAtMs: number, o: Partial<AttemptOutcome> = {}): AttemptOutcome => ({
    shard: run.shard,
    runId: run.runId,
    jobId: run.jobId,
    attempt: run.attempt,
    startedAtMs: finishedAtMs - 5,
    finishedAtMs,
    responseStatus: 202,
    responseBodyExcerpt: 'working',
    errorClass: null,
    error: null,
    nextAttemptAtMs: null,
    pauseReason: null,
    runStatus: 'succeeded',
    awaitCompletion: run.completion
      ? { timeoutMs: run.completion.timeoutMs, heartbeatTimeoutMs: run.completion.heartbeatTimeoutMs ?? null }
      : undefined,
    ...o,
  });
  /** Claims the job's due run at `nowMs` and records its 202 at `nowMs + 10`: the run now awaits. */
  const awaiting = async (nowMs = T0) => {
    const [run] = await claim('A', nowMs);
    expect(run?.completion).toMatchObject({ mode: 'async', timeoutMs: TIMEOUT });
    expect((await finishRuns(store.database.db, 'A', [ack(run!, nowMs + 10)])).has(run!.runId)).toBe(true);
    return run!;
  };
  const tokenOf = (run: ClaimedRun, attempt = run.attempt) => completionToken(store.cipher, run.runId, run.shard, attempt);
  const report = async (run: ClaimedRun, r: CompletionReport, token?: string) =>
    reportCompletion(store.ctx, run.runId, token ?? (await tokenOf(run)), r);
  const row = async (runId: string) => {
    const [r] = await query<Record<string, any>>(
      store.database.db,
      sql`select status, awaiting_completion, completion_deadline, heartbeat_deadline, lease_owner, output, progress, error
          from runs where id = ${runId}`,
    );
    return {
      status: r!.status,
      awaiting: r!.awaiting_completion,
      completionDeadlineMs: r!.completion_deadline === null ? null : new Date(r!.completion_deadline).getTime(),
      heartbeatDeadlineMs: r!.heartbeat_deadline === null ? null : new Date(r!.heartbeat_deadline).getTime(),
      leaseOwner: r!.lease_owner,
      output: r!.output,
      progress: r!.progress,
      error: r!.error as string | null,
    };
  };
  const attempts = async (runId: string) =>
    (
      await query<Record<string, any>>(
        store.database.db,
        sql`select attempt, response_status, error_class, error, completed_at, reported_status from attempts where run_id = ${runId} order by attempt`,
      )
    ).map((a) => ({
      attempt: Number(a.attempt),
      responseStatus: a.response_status === null ? null : Number(a.response_status),
      errorClass: a.error_class,
      error: a.error,
      completedAtMs: a.completed_at === null ? null : new Date(a.completed_at).getTime(),
      reportedStatus: a.reported_status,
    }));

  it('the finish of an acknowledged attempt leaves the run running, awaiting, with no lease and its deadlines; the lease reaper ignores it', async () => {
    await job({ completion: { mode: 'async', timeoutMs: TIMEOUT, heartbeatTimeoutMs: HEARTBEAT } });
    const run = await awaiting();
    expect(await row(run.runId)).toMatchObject({
      status: 'running',
      awaiting: true,
      leaseOwner: null,
      completionDeadlineMs: T0 + 10 + TIMEOUT,
      heartbeatDeadlineMs: T0 + 10 + HEARTBEAT,
    });
    expect((await runById(store.database, run.runId)).finishedAtMs).toBeNull();
    // No dispatcher holds it: no lease to expire.
    expect(await reapExpiredLeases(store.database.db, T0 + 10 * TIMEOUT)).toBe(0);
    expect((await row(run.runId)).status).toBe('running');
  });

  it('a succeeded report ends the run with its output; the attempt records completedAt and reportedStatus; a second report is a conflict', async () => {
    await job();
    const run = await awaiting();
    at(T0 + 5_000);
    const done = await report(run, { status: 'succeeded', output: { rows: 42 } });
    expect(done).toMatchObject({ status: 'succeeded', awaitingCompletion: false, output: { rows: 42 }, leaseOwner: null });
    expect(await attempts(run.runId)).toEqual([
      { attempt: 1, responseStatus: 202, errorClass: null, error: null, completedAtMs: T0 + 5_000, reportedStatus: 'succeeded' },
    ]);
    const again = await report(run, { status: 'failed', error: 'late' });
    expect(again).toMatchObject({ refused: 'conflict' });
    expect((await row(run.runId)).status).toBe('succeeded');
  });

  it('the token is the credential of its attempt only: a stale attempt, another run, a forged or altered token are refused', async () => {
    await job({ retry: { maxAttempts: 3, initialDelayMs: 1000 } });
    await job();
    const [first, other] = await claim('A', T0);
    await finishRuns(store.database.db, 'A', [ack(first!, T0 + 10), ack(other!, T0 + 10)]);
    // Attempt 1 reports failed: retried by the policy; attempt 2 is claimed and acknowledged.
    at(T0 + 1_000);
    expect(await report(first!, { status: 'failed', error: 'disk full' })).toMatchObject({ status: 'retrying', error: 'disk full' });
    const [second] = await claim('B', T0 + 10_000);
    expect(second).toMatchObject({ runId: first!.runId, attempt: 2 });
    await finishRuns(store.database.db, 'B', [ack(second!, T0 + 10_010)]);

    const stale = await tokenOf(first!, 1);
    expect(await report(second!, { status: 'succeeded' }, stale)).toMatchObject({ refused: 'unauthorized' });
    expect(await report(second!, { status: 'succeeded' }, await tokenOf(other!))).toMatchObject({ refused: 'unauthorized' });
    const good = await tokenOf(second!);
    const forged = `${good.slice(0, -4)}AAAA`;
    expect(await report(second!, { status: 'succeeded' }, forged)).toMatchObject({ refused: 'unauthorized' });
    const altered = good.replace(/^ct1\.(\d+)\.2\./, 'ct1.$1.1.');
    expect(await report(second!, { status: 'succeeded' }, altered)).toMatchObject({ refused: 'unauthorized' });
    expect(await report(second!, { status: 'succeeded' }, 'not a token')).toMatchObject({ refused: 'unauthorized' });
    expect(await recordHeartbeat(store.ctx, second!.runId, stale, undefined)).toMatchObject({ refused: 'unauthorized' });
    expect((await row(second!.runId)).status).toBe('running');
    // The right one is taken.
    expect(await report(second!, { status: 'succeeded' }, good)).toMatchObject({ status: 'succeeded' });
    // Attempt 1's entry keeps its report; attempt 2's has its own.
    expect((await attempts(first!.runId)).map((a) => [a.attempt, a.reportedStatus, a.errorClass])).toEqual([
      [1, 'failed', 'reported_failure'],
      [2, 'succeeded', null],
    ]);
  });

  it('a failed report of an at-most-once run ends it failed (never re-sent); with no retries left it ends failed', async () => {
    await job({ deliveryMode: 'at-most-once', retry: { maxAttempts: 3 } });
    const run = await awaiting();
    expect(await report(run, { status: 'failed', error: 'boom', output: { partial: true } })).toMatchObject({
      status: 'failed',
      output: { partial: true },
    });
    expect((await row(run.runId)).error).toMatch(/^boom; not re-sent \(at-most-once\)$/);
    expect(await claim('A', T0 + 3_600_000)).toEqual([]);
  });

  it('the completion reaper fails an overdue attempt with completion_timeout, retries it by the policy, then fails the run and pauses the job', async () => {
    const j = await job({
      schedule: { type: 'interval', everyMs: 3_600_000 }, // active after the claim (a `once` job would be completed)
      retry: { maxAttempts: 2, initialDelayMs: 1000 },
      pauseAfterFailures: 1,
    });
    const run = await awaiting();
    const deadline = T0 + 10 + TIMEOUT;
    expect(await reapOverdueCompletions(store.database.db, deadline - 1)).toBe(0);
    expect(await reapOverdueCompletions(store.database.db, deadline + 1)).toBe(1);
    const r1 = await row(run.runId);
    expect(r1).toMatchObject({ status: 'retrying', awaiting: false, completionDeadlineMs: null, leaseOwner: null });
    expect(r1.error).toMatch(/^completion_timeout: no report within 60000 ms/);
    expect((await attempts(run.runId))[0]).toMatchObject({ responseStatus: 202, errorClass: 'completion_timeout', reportedStatus: null });
    // A report of the timed-out attempt is too late.
    expect(await report(run, { status: 'succeeded' })).toMatchObject({ refused: 'conflict' });

    const second = await awaiting(deadline + 1_001);
    expect(second.attempt).toBe(2);
    expect(await reapOverdueCompletions(store.database.db, deadline + 1_012 + TIMEOUT)).toBe(1);
    expect(await row(run.runId)).toMatchObject({ status: 'failed', awaiting: false });
    // A failure as any other: the job reached pauseAfterFailures, and a run.failed event would go to endpoints.
    const [jobRow] = await query<{ status: string; paused_reason: string; consecutive_failures: number }>(
      store.database.db,
      sql`select status, paused_reason, consecutive_failures from jobs where id = ${j.id}`,
    );
    expect(jobRow).toMatchObject({ status: 'paused', paused_reason: 'consecutive_failures', consecutive_failures: 1 });
  });

  it("the dispatchers' reaper round (reapOnce: the lease keeper's and the Workers tick's step) fails overdue completions", async () => {
    await job({ retry: { maxAttempts: 1 } });
    const run = await awaiting();
    const logger = recordingLogger();
    at(T0 + 10 + TIMEOUT);
    expect(await reapOnce({ db: store.database.db, clock: store.clock, logger })).toBe(0);
    at(T0 + 11 + TIMEOUT);
    expect(await reapOnce({ db: store.database.db, clock: store.clock, logger })).toBe(1);
    expect(await row(run.runId)).toMatchObject({ status: 'failed', awaiting: false });
    expect(logger.entries.map((e) => e.msg)).toContain('failed attempts whose completion report was overdue (completion_timeout)');
  });

  it('at-most-once: a completion_timeout fails the run at once, never re-sent', async () => {
    await job({ deliveryMode: 'at-most-once', retry: { maxAttempts: 5 } });
    const run = await awaiting();
    expect(await reapOverdueCompletions(store.database.db, T0 + 11 + TIMEOUT)).toBe(1);
    expect(await row(run.runId)).toMatchObject({ status: 'failed' });
    expect((await row(run.runId)).error).toMatch(/^completion_timeout: .*not re-sent \(at-most-once\)$/);
  });

  it('heartbeats postpone the heartbeat deadline and store progress; silence past it is a completion_timeout', async () => {
    await job({ completion: { mode: 'async', timeoutMs: TIMEOUT, heartbeatTimeoutMs: HEARTBEAT } });
    const run = await awaiting();
    const token = await tokenOf(run);
    at(T0 + 8_000);
    expect(await recordHeartbeat(store.ctx, run.runId, token, { done: 10 })).toEqual({
      completionDeadlineMs: T0 + 10 + TIMEOUT,
      heartbeatDeadlineMs: T0 + 8_000 + HEARTBEAT,
    });
    // Past the first heartbeat deadline, but the heartbeat moved it.
    expect(await reapOverdueCompletions(store.database.db, T0 + 10 + HEARTBEAT + 1)).toBe(0);
    expect(await row(run.runId)).toMatchObject({ status: 'running', progress: { done: 10 } });
    expect(await reapOverdueCompletions(store.database.db, T0 + 8_000 + HEARTBEAT + 1)).toBe(1);
    expect((await row(run.runId)).error).toMatch(/^completion_timeout: no heartbeat within 10000 ms/);
  });

  it('a report faster than the finish ends the run; the finish arriving later changes nothing but fills in the response', async () => {
    await job();
    const [run] = await claim('A', T0);
    at(T0 + 3);
    expect(await report(run!, { status: 'succeeded', output: 'fast' })).toMatchObject({
      status: 'succeeded',
      output: 'fast',
      leaseOwner: null,
    });
    const held = await finishRuns(store.database.db, 'A', [ack(run!, T0 + 10)]);
    expect(held.size).toBe(0);
    expect(await row(run!.runId)).toMatchObject({ status: 'succeeded', awaiting: false, output: 'fast' });
    expect(await attempts(run!.runId)).toEqual([
      { attempt: 1, responseStatus: 202, errorClass: null, error: null, completedAtMs: T0 + 3, reportedStatus: 'succeeded' },
    ]);
  });

  it('a heartbeat faster than the finish makes the run await from then: the finish changes nothing', async () => {
    await job();
    const [run] = await claim('A', T0);
    at(T0 + 3);
    expect(await recordHeartbeat(store.ctx, run!.runId, await tokenOf(run!), undefined)).toMatchObject({
      completionDeadlineMs: T0 + 3 + TIMEOUT,
    });
    expect((await finishRuns(store.database.db, 'A', [ack(run!, T0 + 10)])).size).toBe(0);
    expect(await row(run!.runId)).toMatchObject({
      status: 'running',
      awaiting: true,
      leaseOwner: null,
      completionDeadlineMs: T0 + 3 + TIMEOUT,
    });
    expect((await attempts(run!.runId))[0]).toMatchObject({ responseStatus: 202 });
  });

  it("overlapPolicy 'skip' counts an awaiting run as in flight", async () => {
    const j = await job({ schedule: { type: 'interval', everyMs: 1000 }, overlapPolicy: 'skip', callback: { timeoutMs: 5000 } });
    await awaiting(T0);
    expect(await claim('A', T0 + 1000)).toEqual([]);
    expect((await runsOf(store.database, j.id)).map((r) => r.status)).toEqual(['running', 'skipped', 'scheduled']);
  });

  it('a job in response mode carries no completion and its success ends the run', async () => {
    await job({ completion: null });
    const [run] = await claim('A', T0);
    expect(run!.completion).toBeNull();
    await finishRuns(store.database.db, 'A', [ack(run!, T0 + 10)]);
    expect(await row(run!.runId)).toMatchObject({ status: 'succeeded', awaiting: false });
  });
});
