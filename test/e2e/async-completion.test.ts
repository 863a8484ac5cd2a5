/**
 * Async completion end to end (API.md "Long-running jobs: completion reported by the receiver"), with a real Chime
 * process and a real receiver on 127.0.0.1, on every database target:
 * - the receiver answers 202 to an attempt carrying Chime-Completion-Url and Chime-Completion-Token; the run awaits
 *   (running, `awaitingCompletion`, `completionDeadline`); the receiver heartbeats (progress shown) and reports
 *   `succeeded` with output, through the URL it was given and its token alone (no API key): the run succeeds with
 *   the output, and its attempt shows `completedAt` and `reportedStatus`;
 * - the token is the credential of its attempt only: a stale attempt's token (after a `failed` report and a retry),
 *   another run's, a forged one, none → 401; a second report → 409; an output or progress over its limit → 400
 *   naming the field;
 * - a dispatcher SIGKILLed while a run awaits changes nothing for it: the report to the next process completes it.
 * The timeouts (`completion_timeout` at the deadline, the heartbeat deadline) run on an injected clock in
 * test/store/async-completion.test.ts: the contract's minimums (60 s, 10 s) are too long for a process test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, apiClient, createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { isRunning, killProcessTree } from '../support/chime-run.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Received, type Receiver, startReceiver } from '../support/receiver.ts';

const E2E_TIMEOUT_MS = 120_000;
const COMPLETION = { mode: 'async', timeoutMs: 60_000, heartbeatTimeoutMs: 10_000 } as const;
const RETRY = { strategy: 'fixed', maxAttempts: 3, initialDelayMs: 100, jitter: false } as const;

describe.each(DATABASE_TARGETS)('async completion on $kind', (target) => {
  let db: FreshDatabase;
  let receiver: Receiver;
  let chime: ChimeProcess | undefined;
  let tenant: TestTenant;

  beforeAll(async () => {
    db = await freshDatabase(target);
    // The receiver acknowledges every attempt with 202: the work goes on after the response.
    receiver = await startReceiver(() => ({ status: 202, body: 'accepted' }));
    chime = await startChime({ ...db.env, CHIME_REAP_INTERVAL_MS: '200' });
    tenant = await createTestTenant(chime.url, 'async');
  }, E2E_TIMEOUT_MS);
  afterAll(async () => {
    if (chime) expect(await chime.stop()).toBe(0);
    await receiver?.close();
    await db?.drop();
  });

  const hits = (path: string): Received[] => receiver.received.filter((r) => r.path === path);
  /** A receiver's client: the completion URL's origin, authenticated by the completion token only. */
  const reporter = (token: string | null) => apiClient('', token);
  const post = (url: string, token: string | null, body: unknown) => reporter(token).post(url, body);
  const heartbeatUrl = (completionUrl: string) => completionUrl.replace(/\/completion$/, '/heartbeat');

  async function createJob(api: Api, path: string, body: Record<string, unknown> = {}): Promise<string> {
    const r = await api.post('/v1/jobs', {
      schedule: { type: 'delay', delayMs: 0 },
      callback: { url: `${receiver.url}${path}` },
      completion: COMPLETION,
      retry: RETRY,
      ...body,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.completion).toEqual(body.completion ?? COMPLETION);
    return r.body.jobId;
  }

  /** The `n`th request to `path` (1-based), once it arrived, with its completion URL and token. */
  async function attemptAt(path: string, n = 1) {
    const [req] = (await eventually(() => (hits(path).length >= n ? [hits(path)[n - 1]!] : undefined), {
      timeoutMs: 30_000,
      what: `request ${n} to ${path}`,
    })) as Received[];
    const url = String(req!.headers['chime-completion-url']);
    const token = String(req!.headers['chime-completion-token']);
    return { req: req!, url, token, runId: String(req!.headers['chime-run-id']) };
  }

  /** Waits until the run shows the `awaitingCompletion` it should (the finish recorded the 202). */
  const awaitingRun = (api: Api, runId: string) =>
    eventually(
      async () => {
        const r = await api.get(`/v1/runs/${runId}`);
        return r.body.awaitingCompletion === true && r.body.attemptLog.length === 1 ? r.body : undefined;
      },
      { timeoutMs: 30_000, what: `run ${runId} to await its report` },
    );

  it(
    'the receiver answers 202, heartbeats with progress and reports succeeded with output, with its token alone',
    async () => {
      const jobId = await createJob(tenant.api, '/long');
      const { req, url, token, runId } = await attemptAt('/long');
      expect(url).toBe(`http://localhost:${chime!.port}/v1/runs/${runId}/completion`);
      expect(token).toMatch(/^ct1\./);
      expect(req.headers['chime-job-id']).toBe(jobId);

      const waiting = await awaitingRun(tenant.api, runId);
      expect(waiting).toMatchObject({ status: 'running', awaitingCompletion: true, finishedAt: null, output: null, responseStatus: 202 });
      const deadlineMs = Date.parse(waiting.completionDeadline);
      expect(deadlineMs).toBeGreaterThan(Date.now() + 50_000);
      expect(deadlineMs).toBeLessThanOrEqual(Date.now() + 60_000);
      expect(waiting.attemptLog[0]).toMatchObject({ responseStatus: 202, completedAt: null, reportedStatus: null });

      const beat = await post(heartbeatUrl(url), token, { progress: { done: 3, of: 10 } });
      expect(beat.status, JSON.stringify(beat.body)).toBe(200);
      expect(beat.body.completionDeadline).toBe(waiting.completionDeadline);
      expect(Date.parse(beat.body.heartbeatDeadline)).toBeGreaterThan(Date.now() + 5_000);
      const working = (await tenant.api.get(`/v1/runs/${runId}`)).body;
      expect(working).toMatchObject({ status: 'running', progress: { done: 3, of: 10 } });
      expect(working.lastHeartbeatAt).not.toBeNull();

      const done = await post(url, token, { status: 'succeeded', output: { rows: 1234, file: 's3://bucket/report.csv' } });
      expect(done.status, JSON.stringify(done.body)).toBe(200);
      expect(done.body).toMatchObject({ runId, status: 'succeeded', awaitingCompletion: false, output: { rows: 1234 } });

      const run = (await tenant.api.get(`/v1/runs/${runId}`)).body;
      expect(run).toMatchObject({ status: 'succeeded', output: { rows: 1234, file: 's3://bucket/report.csv' }, completionDeadline: null });
      expect(run.attemptLog).toHaveLength(1);
      expect(run.attemptLog[0]).toMatchObject({ attempt: 1, responseStatus: 202, reportedStatus: 'succeeded', errorClass: null });
      expect(Date.parse(run.attemptLog[0].completedAt)).toBeGreaterThanOrEqual(Date.parse(run.attemptLog[0].finishedAt));
      // A second report of the same attempt: the first stands.
      const again = await post(url, token, { status: 'failed', error: 'changed my mind' });
      expect(again.status).toBe(409);
      expect((await tenant.api.get(`/v1/runs/${runId}`)).body.status).toBe('succeeded');
      expect(hits('/long')).toHaveLength(1);
    },
    E2E_TIMEOUT_MS,
  );

  it(
    "the token is its attempt's only: stale, another run's, forged or missing → 401; limits → 400 naming the field",
    async () => {
      await createJob(tenant.api, '/retried');
      await createJob(tenant.api, '/other');
      const first = await attemptAt('/retried');
      const other = await attemptAt('/other');
      await awaitingRun(tenant.api, first.runId);

      // Over the limits: refused, nothing recorded.
      const big = await post(first.url, first.token, { status: 'succeeded', output: 'x'.repeat(17 * 1024) });
      expect(big.status).toBe(400);
      expect(big.body.errors.map((e: { path: string }) => e.path)).toEqual(['output']);
      const chatty = await post(heartbeatUrl(first.url), first.token, { progress: 'x'.repeat(1100) });
      expect(chatty.status).toBe(400);
      expect(chatty.body.errors.map((e: { path: string }) => e.path)).toEqual(['progress']);

      // Attempt 1 fails by the receiver's word: retried by the policy, with a new token.
      const failed = await post(first.url, first.token, { status: 'failed', error: 'upstream unavailable' });
      expect(failed.status, JSON.stringify(failed.body)).toBe(200);
      expect(failed.body).toMatchObject({ status: 'retrying', error: 'upstream unavailable' });
      const second = await attemptAt('/retried', 2);
      expect(second.req.headers['chime-attempt']).toBe('2');
      expect(second.token).not.toBe(first.token);
      await eventually(async () => (await tenant.api.get(`/v1/runs/${first.runId}`)).body.awaitingCompletion === true, {
        timeoutMs: 30_000,
        what: 'attempt 2 to be awaited',
      });

      const stale = await post(second.url, first.token, { status: 'succeeded' });
      expect(stale.status).toBe(401);
      expect(stale.headers.get('www-authenticate')).toBe('Bearer');
      expect((await post(second.url, other.token, { status: 'succeeded' })).status).toBe(401);
      const forged = `${second.token.slice(0, -6)}${second.token.endsWith('AAAAAA') ? 'BBBBBB' : 'AAAAAA'}`;
      expect((await post(second.url, forged, { status: 'succeeded' })).status).toBe(401);
      expect((await post(second.url, null, { status: 'succeeded' })).status).toBe(401);
      // An API key is no completion token.
      expect((await post(second.url, tenant.apiKey, { status: 'succeeded' })).status).toBe(401);
      expect((await post(heartbeatUrl(second.url), first.token, {})).status).toBe(401);
      expect((await tenant.api.get(`/v1/runs/${first.runId}`)).body).toMatchObject({ status: 'running', awaitingCompletion: true });

      const ok = await post(second.url, second.token, { status: 'succeeded' });
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
      const run = (await tenant.api.get(`/v1/runs/${first.runId}`)).body;
      expect(run.attemptLog.map((a: Record<string, unknown>) => [a.attempt, a.reportedStatus, a.errorClass, a.error])).toEqual([
        [1, 'failed', 'reported_failure', 'upstream unavailable'],
        [2, 'succeeded', null, null],
      ]);
      // The other run is untouched by all of it, and its own token still works.
      expect((await post(other.url, other.token, { status: 'succeeded' })).status).toBe(200);
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'a dispatcher SIGKILLed while a run awaits changes nothing for it: the report completes it on the next process',
    async () => {
      // Deadlines longer than a kill and a restart take on a loaded machine (over 10 s seen): the run must still be
      // awaiting on the next process, not reaped at its heartbeat deadline meanwhile.
      await createJob(tenant.api, '/survives', { completion: { ...COMPLETION, timeoutMs: 300_000, heartbeatTimeoutMs: 120_000 } });
      const { url, token, runId } = await attemptAt('/survives');
      await awaitingRun(tenant.api, runId);

      const dying = chime!;
      const killed = killProcessTree(dying.child.pid!);
      expect(await dying.stop()).toBeNull();
      await eventually(() => killed.every((pid) => !isRunning(pid)), { what: 'every process of the killed chime to be gone' });
      // The next process, where the completion URL points (same port).
      chime = await startChime({ ...db.env, CHIME_REAP_INTERVAL_MS: '200', PORT: String(dying.port) });
      const api = apiClient(chime.url, tenant.apiKey);
      expect((await api.get(`/v1/runs/${runId}`)).body).toMatchObject({ status: 'running', awaitingCompletion: true });

      const done = await post(url, token, { status: 'succeeded', output: 'made it' });
      expect(done.status, JSON.stringify(done.body)).toBe(200);
      expect((await api.get(`/v1/runs/${runId}`)).body).toMatchObject({ status: 'succeeded', output: 'made it', attempts: 1 });
      // Never re-sent: the awaiting run held no lease for a reaper to take back.
      expect(hits('/survives')).toHaveLength(1);
    },
    E2E_TIMEOUT_MS,
  );
});
