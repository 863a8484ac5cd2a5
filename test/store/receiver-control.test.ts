/**
 * What a finish does with a receiver's answer (API.md "Receiver control and result routing"), on every database target:
 * `Chime-Control: pause | complete | skip-next | no-retry`, and result deliveries to `onSuccess` / `onFailure`
 * (store/queue/receiver-effects.ts), which are inserted in the transaction of the run's end, are claimed with their
 * own callback and retry policy, and never count as the job's runs (failures in a row, run lists, dead letters), nor
 * route results of their own. The outcomes are made by `outcomeOf` from HTTP results, as a dispatcher makes them.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { outcomeOf } from '../../src/dispatch/attempt.ts';
import type { HttpResult } from '../../src/domain/attempt-outcome.ts';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import { EVENT_DELIVERY_RETRY } from '../../src/domain/events.ts';
import { query } from '../../src/store/db.ts';
import { createJob, getJob } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { finishRuns } from '../../src/store/queue/finish-runs.ts';
import { reapExpiredLeases } from '../../src/store/queue/reap-leases.ts';
import { SKIPPED_BY_RECEIVER } from '../../src/store/queue/receiver-effects.ts';
import { listDeadLetters, listResultDeliveries, listRuns } from '../../src/store/runs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { createTestTenantIn, openTestStore, runsOf, T0, type TestStore, testJobSpec } from '../support/store.ts';

const OWNER = 'receiver-control';
const MINUTE = 60_000;
const ON_SUCCESS = 'http://127.0.0.1:9/on-success';
const ON_FAILURE = 'http://127.0.0.1:9/on-failure';

const response = (status: number, headers: Record<string, string> = {}, body = ''): HttpResult => ({
  kind: 'response',
  status,
  retryAfterMs: null,
  bodyExcerpt: body,
  headers,
  body: new TextEncoder().encode(body),
  bodyTruncated: false,
});

describe.each(DATABASE_TARGETS.filter((t) => t.kind !== 'citus'))('receiver control and result routing on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  let now: number;

  beforeAll(async () => {
    store = await openTestStore(target);
    tenantId = await createTestTenantIn(store.ctx);
  });
  afterAll(() => store?.close());
  beforeEach(async () => {
    // Every test starts with nothing due: earlier tests' runs are ended, and time moves on.
    await store.database.db.execute(
      sql`update runs set status = 'canceled', next_attempt_at = null where status in ('scheduled', 'retrying')`,
    );
    now = T0 + 3_600_000 * (1 + Math.floor(Math.random() * 1000));
  });

  /** An every-minute job from `now`, routing both results; its first run claimed. */
  async function claimedJob(o: { retries?: number; atMostOnce?: boolean } = {}): Promise<{ jobId: string; run: ClaimedRun }> {
    const job = await createJob(
      store.ctx,
      tenantId,
      {
        ...testJobSpec(now, {
          schedule: { type: 'interval', everyMs: MINUTE },
          retry: { maxAttempts: o.retries ?? 3 },
          deliveryMode: o.atMostOnce ? 'at-most-once' : 'at-least-once',
        }),
        onSuccess: { url: ON_SUCCESS },
        onFailure: { url: ON_FAILURE },
      },
      now,
    );
    const [run, ...more] = await claimRuns(store.database.db, { owner: OWNER, limit: 10, nowMs: now, leaseMarginMs: MINUTE });
    expect(more).toEqual([]);
    expect(run).toMatchObject({ jobId: job.id, onSuccess: { url: ON_SUCCESS }, onFailure: { url: ON_FAILURE } });
    return { jobId: job.id, run: run! };
  }

  const finish = (run: ClaimedRun, result: HttpResult) =>
    finishRuns(store.database.db, OWNER, [outcomeOf(run, result, now, now + 5, () => 0.5)]);
  const jobRow = async (jobId: string) => (await getJob(store.ctx, tenantId, jobId))!;
  const schedulesOf = async (jobId: string) => (await runsOf(store.database, jobId)).filter((r) => r.trigger === 'schedule');
  const resultRuns = (jobId: string) =>
    query<{ id: string; status: string; result_of: string; callback: { url: string }; payload: any; event_id: string }>(
      store.database.db,
      sql`select id, status, result_of, callback, payload, event_id from runs where job_id = ${jobId} and trigger = 'result' order by id`,
    );

  it('pause: the job pauses (pausedReason receiver) after a success, its next occurrence canceled', async () => {
    const { jobId, run } = await claimedJob();
    expect(await finish(run, response(200, { 'chime-control': 'pause' }))).toEqual(new Set([run.runId]));
    expect(await jobRow(jobId)).toMatchObject({ status: 'paused', pausedReason: 'receiver' });
    expect((await schedulesOf(jobId)).map((r) => r.status)).toEqual(['succeeded', 'canceled']);
  });

  it('complete: the job becomes completed, no next run, its pending occurrence canceled', async () => {
    const { jobId, run } = await claimedJob();
    await finish(run, response(204, { 'chime-control': 'complete' }));
    expect(await jobRow(jobId)).toMatchObject({ status: 'completed', nextRunAt: null });
    expect((await schedulesOf(jobId)).map((r) => r.status)).toEqual(['succeeded', 'canceled']);
  });

  it('skip-next: the next occurrence ends skipped and the one after it is planned', async () => {
    const { jobId, run } = await claimedJob();
    await finish(run, response(200, { 'chime-control': 'skip-next' }));
    const runs = await schedulesOf(jobId);
    expect(runs.map((r) => [r.scheduledForMs - now, r.status])).toEqual([
      [0, 'succeeded'],
      [MINUTE, 'skipped'],
      [2 * MINUTE, 'scheduled'],
    ]);
    expect(runs[1]!.error).toBe(SKIPPED_BY_RECEIVER);
    expect((await jobRow(jobId)).nextRunAt?.getTime()).toBe(now + 2 * MINUTE);
  });

  it('no-retry: a 500 ends the run failed with attempts left; the attempt logs the headers (no set-cookie) and unknown tokens', async () => {
    const { jobId, run } = await claimedJob({ retries: 5 });
    await finish(run, response(500, { 'chime-control': 'no-retry, bogus', 'set-cookie': 's=1', 'x-trace': 'abc' }, 'down'));
    const [ended] = (await runsOf(store.database, jobId)).filter((r) => r.id === run.runId);
    expect(ended).toMatchObject({ status: 'failed', attempts: 1, nextAttemptAtMs: null });
    expect(ended!.error).toMatch(/no-retry/);
    expect(ended!.error).not.toMatch(/bogus/); // the note is the attempt's, not the run's
    const [attempt] = await query<{ response_headers: Record<string, string>; error: string }>(
      store.database.db,
      sql`select response_headers, error from attempts where run_id = ${run.runId}`,
    );
    expect(attempt!.response_headers).toEqual({ 'chime-control': 'no-retry, bogus', 'x-trace': 'abc' });
    expect(attempt!.error).toMatch(/ignored unknown token\(s\) bogus/);
    expect((await jobRow(jobId)).consecutiveFailures).toBe(1);
  });

  it('a failed run makes its onFailure delivery in the same transaction, carrying the response', async () => {
    const { jobId, run } = await claimedJob({ retries: 1 });
    await finish(run, response(503, { 'content-type': 'text/plain', 'x-why': 'maintenance' }, 'back soon'));
    const [delivery, ...more] = await resultRuns(jobId);
    expect(more).toEqual([]);
    expect(delivery).toMatchObject({ status: 'scheduled', result_of: run.runId, callback: { url: ON_FAILURE } });
    expect(delivery!.payload).toMatchObject({
      type: 'run.failed',
      eventId: delivery!.event_id,
      data: {
        job: { jobId, onFailure: { url: ON_FAILURE } },
        run: { runId: run.runId, status: 'failed' },
        response: { status: 503, headers: { 'content-type': 'text/plain', 'x-why': 'maintenance' }, body: 'back soon' },
      },
    });
  });

  it('the end and its delivery commit together: a delivery that cannot be inserted leaves the run running', async () => {
    const { jobId, run } = await claimedJob({ retries: 1 });
    await store.database.db.execute(
      sql.raw(`create or replace function test_refuse_result() returns trigger language plpgsql as $$
        begin if new.trigger = 'result' then raise exception 'test: no result deliveries'; end if; return new; end $$`),
    );
    await store.database.db.execute(
      sql`create or replace trigger test_refuse_result before insert on runs for each row execute function test_refuse_result()`,
    );
    try {
      // (drizzle wraps the trigger's exception: "Failed query: insert into runs … trigger = result")
      await expect(finish(run, response(500))).rejects.toThrow(/insert into "runs"/);
    } finally {
      await store.database.db.execute(sql`drop trigger test_refuse_result on runs`);
    }
    expect((await runsOf(store.database, jobId)).find((r) => r.id === run.runId)?.status).toBe('running');
    expect(await resultRuns(jobId)).toEqual([]);
    expect((await jobRow(jobId)).consecutiveFailures).toBe(0);
  });

  it('a result delivery is claimed to its own URL with the event retry policy, and is never one of the job’s runs', async () => {
    const { jobId, run } = await claimedJob({ retries: 1 });
    await finish(run, response(500));
    expect((await jobRow(jobId)).consecutiveFailures).toBe(1);
    // Due at the run's end (now + 5 ms).
    const [claimed, ...more] = await claimRuns(store.database.db, { owner: OWNER, limit: 10, nowMs: now + 10, leaseMarginMs: MINUTE });
    expect(more).toEqual([]);
    expect(claimed).toMatchObject({
      trigger: 'result',
      jobId,
      callback: { url: ON_FAILURE, method: 'POST' },
      authTokenEnc: null,
      retry: EVENT_DELIVERY_RETRY,
      deliveryMode: 'at-least-once',
      onSuccess: null,
      onFailure: null,
    });
    expect((claimed!.payload as { type: string }).type).toBe('run.failed');
    // The delivery fails for good (no-retry): it counts toward nothing, routes nothing and is no dead letter.
    await finish(claimed!, response(500, { 'chime-control': 'no-retry' }));
    const [delivery] = await resultRuns(jobId);
    expect(delivery).toMatchObject({ id: claimed!.runId, status: 'failed' });
    expect((await resultRuns(jobId)).length).toBe(1);
    expect((await jobRow(jobId)).consecutiveFailures).toBe(1);
    const listed = await listRuns(store.ctx, tenantId, jobId, { limit: 50 });
    expect(listed.items.map((r) => r.trigger)).not.toContain('result');
    const dead = await listDeadLetters(store.ctx, tenantId, { limit: 100 });
    expect(dead.items.map((r) => r.id)).not.toContain(claimed!.runId);
    const results = await listResultDeliveries(store.ctx, tenantId, jobId, { limit: 10 });
    expect(results.items.map((r) => [r.id, r.resultOf])).toEqual([[claimed!.runId, run.runId]]);
    // The job's own failure is still a dead letter.
    expect(dead.items.map((r) => r.id)).toContain(run.runId);
  });

  it('a run the reaper fails (lease lost, at-most-once) routes to onFailure too, with no response', async () => {
    const { jobId, run } = await claimedJob({ atMostOnce: true });
    // At least this run (a retry of an earlier test's delivery, claimed beside it, may be taken back too).
    expect(await reapExpiredLeases(store.database.db, run.leaseExpiresAtMs + 1)).toBeGreaterThanOrEqual(1);
    const [delivery, ...more] = await resultRuns(jobId);
    expect(more).toEqual([]);
    expect(delivery).toMatchObject({ result_of: run.runId, callback: { url: ON_FAILURE } });
    expect(delivery!.payload).toMatchObject({ type: 'run.failed', data: { run: { runId: run.runId, status: 'failed' }, response: null } });
  });

  it('a success routes to onSuccess; a retry routes nothing yet', async () => {
    const { jobId, run } = await claimedJob({ retries: 3 });
    await finish(run, response(500));
    expect(await resultRuns(jobId)).toEqual([]);
    const [retry] = await claimRuns(store.database.db, { owner: OWNER, limit: 10, nowMs: now + 3_600_000, leaseMarginMs: MINUTE });
    expect(retry!.runId).toBe(run.runId);
    await finish(retry!, response(200, {}, '{"ok":true}'));
    const [delivery] = await resultRuns(jobId);
    expect(delivery).toMatchObject({ callback: { url: ON_SUCCESS }, result_of: run.runId });
    expect(delivery!.payload).toMatchObject({ type: 'run.succeeded', data: { response: { status: 200, body: '{"ok":true}' } } });
  });
});
