/**
 * Chains through a real dispatcher (API.md "Richer schedules"; src/store/queue/chain-runs.ts, src/domain/chain.ts):
 * undici delivery to a real receiver on 127.0.0.1, on every database target.
 * - An upstream run that succeeds triggers its `succeeded` and `finished` links, not its `failed` one; each chained
 *   request carries `Chime-Upstream-Job-Id`, `-Run-Id` and `-Status`; a JSON object payload gains `upstream` (its own
 *   fields kept), an array payload and a `body` go out unchanged, and the Standard Webhooks signature verifies the
 *   bytes sent.
 * - An upstream run that fails triggers its `failed` and `finished` links, not its `succeeded` one.
 * - An async upstream's reported output reaches the chained run's `upstream.output`; the next hop names its own upstream.
 * - A chain to a paused job still goes (as a manual trigger does), and the job stays paused.
 * - A canceled target gets no run, and a cycle stored despite the API's check (two changes at once) stops where it would
 *   come back: each job of it runs once.
 */
import { verifyWebhook } from '@chime/receiver';
import { sql } from 'drizzle-orm';
import type { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallbackAgent } from '../../src/dispatch/deliver.ts';
import type { Dispatcher } from '../../src/dispatch/drivers/node-dispatcher.ts';
import type { ChainLink } from '../../src/domain/chain.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { shardOf } from '../../src/domain/shard.ts';
import { reportCompletion } from '../../src/store/completion.ts';
import { completionToken } from '../../src/store/completion-token.ts';
import { query } from '../../src/store/db.ts';
import { cancelJob, triggerRun, updateJob } from '../../src/store/job-lifecycle.ts';
import { createJob, getJob } from '../../src/store/jobs.ts';
import { createTenant } from '../../src/store/tenants.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { testDispatcher } from '../support/dispatcher.ts';
import { eventually } from '../support/eventually.ts';
import { type Received, type Receiver, startReceiver } from '../support/receiver.ts';
import { type JobSpecInput, openTestStore, runsOf, type TestStore, testJobSpec } from '../support/store.ts';

const DAY_MS = 86_400_000;

describe.each(DATABASE_TARGETS)('chains through a dispatcher on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  let secret: string;
  let receiver: Receiver;
  let agent: Agent;
  let dispatcher: Dispatcher;

  beforeAll(async () => {
    store = await openTestStore(target, systemClock);
    const made = await createTenant(store.ctx, 'chains');
    tenantId = made.tenant.tenantId;
    secret = made.signingSecret;
    // /fail/… answers 500, /async/… acknowledges (202: the async job's receiver reports later), the rest 200.
    receiver = await startReceiver((r) => ({ status: r.path.startsWith('/fail/') ? 500 : r.path.startsWith('/async/') ? 202 : 200 }));
    agent = createCallbackAgent({ allowPrivate: true });
    dispatcher = testDispatcher(store, agent, { pollMs: 200, reapIntervalMs: 500, leaseMarginMs: 5_000, shutdownGraceMs: 2_000 });
    await dispatcher.start();
  });
  afterAll(async () => {
    await dispatcher?.stop(0);
    await receiver?.close();
    await agent?.destroy();
    await store?.close();
  });

  /**
   * A job calling `path`, registered at `now`: by default one run due in a day (a target waits for its chained run), one
   * attempt.
   */
  const job = (path: string, o: JobSpecInput = {}, now = Date.now()) => {
    return createJob(
      store.ctx,
      tenantId,
      {
        ...testJobSpec(now, {
          schedule: { type: 'once', at: new Date(now + DAY_MS).toISOString() },
          retry: { maxAttempts: 1 },
          ...o,
          callback: { url: `${receiver.url}${path}`, timeoutMs: 5_000, ...o.callback },
        }),
        ...(o.then ? { then: o.then } : {}),
        ...(o.body !== undefined ? { body: o.body, payload: null } : {}),
        ...(o.completion ? { completion: o.completion } : {}),
      },
      now,
    );
  };
  /**
   * An upstream job due at its registration, linking to `then`: one `now` for both, as a `once` before its registration
   * time has no run (a millisecond between two clock reads made the first test fail on a loaded machine).
   */
  const upstream = (path: string, then: ChainLink[], o: Parameters<typeof job>[1] = {}) => {
    const now = Date.now();
    return job(path, { schedule: { type: 'once', at: new Date(now).toISOString() }, then, ...o }, now);
  };
  const requestTo = (path: string, timeoutMs = 15_000) =>
    eventually(() => receiver.received.find((r) => r.path === path), { timeoutMs, what: `a request to ${path}` });
  const chainRuns = async (jobId: string) => (await runsOf(store.database, jobId)).filter((r) => r.trigger === 'chain');
  const upstreamOf = async (runId: string) =>
    (await query<{ upstream: unknown }>(store.database.db, sql`select upstream from runs where id = ${runId}`))[0]!.upstream;
  const json = (r: Received) => JSON.parse(r.body) as Record<string, unknown>;
  const expectSigned = async (r: Received) =>
    expect(await verifyWebhook({ headers: r.headers as Record<string, string>, body: r.body }, secret)).toMatchObject({ ok: true });

  it('a success fires the succeeded and finished links, not the failed one, with the upstream headers and payload', async () => {
    const objectDown = await job('/ok/object', { payload: { keep: 1, upstream: 'replaced' } });
    const finishedDown = await job('/ok/finished');
    const arrayDown = await job('/ok/array', { payload: [1, 2, 3] });
    const bodyDown = await job('/ok/body', { body: 'plain text, sent as is', callback: { contentType: 'text/plain' } });
    const failedDown = await job('/ok/failed');
    const up = await upstream('/ok/up', [
      { jobId: objectDown.id, on: 'succeeded' },
      { jobId: failedDown.id, on: 'failed' },
      { jobId: finishedDown.id, on: 'finished' },
      { jobId: arrayDown.id, on: 'succeeded' },
      { jobId: bodyDown.id, on: 'succeeded' },
    ]);
    const upRequest = await requestTo('/ok/up');
    const runId = upRequest.headers['chime-run-id'] as string;
    const [object, finished, array, body] = await Promise.all(
      ['/ok/object', '/ok/finished', '/ok/array', '/ok/body'].map((p) => requestTo(p)),
    );
    const seen = { jobId: up.id, runId, status: 'succeeded' };
    for (const r of [object!, finished!, array!, body!]) {
      expect(r.headers).toMatchObject({
        'chime-upstream-job-id': up.id,
        'chime-upstream-run-id': runId,
        'chime-upstream-status': 'succeeded',
      });
      await expectSigned(r);
    }
    expect(json(object!)).toEqual({ keep: 1, upstream: seen });
    expect(json(finished!)).toEqual({ hello: 'world', upstream: seen });
    expect(JSON.parse(array!.body)).toEqual([1, 2, 3]);
    expect(body!.body).toBe('plain text, sent as is');
    // Chained in the transaction that ended the upstream run: by now every link of that end has its run, once.
    for (const d of [objectDown, finishedDown, arrayDown, bodyDown]) expect(await chainRuns(d.id)).toHaveLength(1);
    expect(await chainRuns(failedDown.id)).toEqual([]);
    const [chained] = await chainRuns(objectDown.id);
    expect(await upstreamOf(chained!.id)).toEqual({ ...seen, chain: [up.id] });
    // The upstream run's own request carries none of it.
    expect(upRequest.headers['chime-upstream-run-id']).toBeUndefined();
    expect(json(upRequest)).toEqual({ hello: 'world' });
  });

  it('a failure fires the failed and finished links, not the succeeded one', async () => {
    const failedDown = await job('/after-fail/failed');
    const finishedDown = await job('/after-fail/finished');
    const succeededDown = await job('/after-fail/succeeded');
    const up = await upstream('/fail/up', [
      { jobId: succeededDown.id, on: 'succeeded' },
      { jobId: failedDown.id, on: 'failed' },
      { jobId: finishedDown.id, on: 'finished' },
    ]);
    const runId = (await requestTo('/fail/up')).headers['chime-run-id'];
    for (const path of ['/after-fail/failed', '/after-fail/finished']) {
      const r = await requestTo(path);
      expect(r.headers).toMatchObject({
        'chime-upstream-job-id': up.id,
        'chime-upstream-run-id': runId,
        'chime-upstream-status': 'failed',
      });
      expect(json(r).upstream).toEqual({ jobId: up.id, runId, status: 'failed' });
    }
    expect(await chainRuns(succeededDown.id)).toEqual([]);
  });

  it("carries an async upstream's reported output; the next hop names its own upstream", async () => {
    const last = await job('/async-chain/last');
    const middle = await job('/async-chain/middle', { then: [{ jobId: last.id, on: 'finished' }] });
    const up = await upstream('/async/up', [{ jobId: middle.id, on: 'succeeded' }], {
      completion: { mode: 'async', timeoutMs: 60_000 },
    });
    const acknowledged = await requestTo('/async/up');
    const runId = acknowledged.headers['chime-run-id'] as string;
    const attempt = Number(acknowledged.headers['chime-attempt']);
    // Not ended by its 202: nothing is chained until the receiver reports.
    expect(await chainRuns(middle.id)).toEqual([]);
    const token = await completionToken(store.cipher, runId, shardOf(tenantId), attempt);
    const output = { rows: 42, file: 's3://bucket/export.csv' };
    expect(await reportCompletion(store.ctx, runId, token, { status: 'succeeded', output })).toMatchObject({ status: 'succeeded' });

    const m = await requestTo('/async-chain/middle');
    expect(json(m).upstream).toEqual({ jobId: up.id, runId, status: 'succeeded', output });
    expect(m.headers['chime-upstream-status']).toBe('succeeded');
    const l = await requestTo('/async-chain/last');
    expect(l.headers).toMatchObject({
      'chime-upstream-job-id': middle.id,
      'chime-upstream-run-id': m.headers['chime-run-id'],
      'chime-upstream-status': 'succeeded',
    });
    // A synchronous upstream has no output: none is sent.
    expect(json(l).upstream).toEqual({ jobId: middle.id, runId: m.headers['chime-run-id'], status: 'succeeded' });
    const [lastRun] = await chainRuns(last.id);
    expect((await upstreamOf(lastRun!.id)) as { chain: string[] }).toMatchObject({ chain: [up.id, middle.id] });
  });

  it('a chain to a paused job still goes, and the job stays paused', async () => {
    const paused = await job('/paused/down');
    await updateJob(store.ctx, tenantId, paused.id, { paused: true });
    const up = await upstream('/paused/up', [{ jobId: paused.id, on: 'succeeded' }]);
    const r = await requestTo('/paused/down');
    expect(r.headers['chime-upstream-job-id']).toBe(up.id);
    expect((await getJob(store.ctx, tenantId, paused.id))?.status).toBe('paused');
    const runs = await eventually(
      async () => {
        const all = await runsOf(store.database, paused.id);
        return all.some((x) => x.status === 'succeeded') ? all : undefined;
      },
      { what: "the paused job's chained run to succeed" },
    );
    expect(runs.map((x) => [x.trigger, x.status]).sort()).toEqual([
      ['chain', 'succeeded'],
      ['schedule', 'canceled'],
    ]);
  });

  it('skips a canceled target, and stops a stored cycle where it would come back: each job of it runs once', async () => {
    const canceled = await job('/cycle/canceled');
    await cancelJob(store.ctx, tenantId, canceled.id);
    const b = await job('/cycle/b');
    const a = await job('/cycle/a', {
      then: [
        { jobId: b.id, on: 'finished' },
        { jobId: canceled.id, on: 'finished' },
      ],
    });
    // b → a, written past the API's check, as two concurrent changes could leave it: a → b → a.
    await updateJob(store.ctx, tenantId, b.id, { then: [{ jobId: a.id, on: 'finished' }] });
    await triggerRun(store.ctx, tenantId, a.id);
    await requestTo('/cycle/b');
    // b's run ended (its request answered and recorded) without a run of a: wait for its end, then look.
    const [bRun] = await chainRuns(b.id);
    await eventually(async () => (await runsOf(store.database, b.id)).find((r) => r.id === bRun!.id)?.status === 'succeeded', {
      what: "b's chained run to succeed",
    });
    expect((await runsOf(store.database, a.id)).map((r) => r.trigger).sort()).toEqual(['manual', 'schedule']);
    expect(await chainRuns(canceled.id)).toEqual([]);
    expect(receiver.received.filter((r) => r.path.startsWith('/cycle/')).map((r) => r.path)).toEqual(['/cycle/a', '/cycle/b']);
  });
});
