/**
 * What reaches the receiver, and how each answer is judged (API.md "The callback request", "Runs and attempts"),
 * against the real process and real receivers on 127.0.0.1, on every database target: methods, headers, success
 * codes, redirects, 410, Retry-After, timeouts, refused connections, the response excerpt, the relevancy window,
 * dead letters and replay, and signing secret rotation.
 */
import { randomBytes } from 'node:crypto';
import { verifyWebhook } from '@chime/receiver';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, freePort, startChime } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Received, type Receiver, type Reply, startReceiver } from '../support/receiver.ts';

type Run = {
  runId: string;
  jobId: string;
  trigger: string;
  status: string;
  attempts: number;
  finishedAt: string | null;
  responseStatus: number | null;
  error: string | null;
};
type Attempt = {
  attempt: number;
  durationMs: number;
  responseStatus: number | null;
  responseBodyExcerpt: string | null;
  errorClass: string | null;
  error: string | null;
};
type RunDetail = Run & { attemptLog: Attempt[] };

const FINAL = new Set(['succeeded', 'failed', 'expired', 'skipped', 'canceled']);
/** A response body longer than the 4 KiB the attempt log keeps: the alphabet over and over. */
const LONG_BODY = Array.from({ length: 5000 }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');
/** No retry: one attempt decides the run. */
const NO_RETRY = { strategy: 'none' } as const;

describe.each(DATABASE_TARGETS)('callback delivery on $kind', (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let receiver: Receiver;
  let tenant: TestTenant;
  const hits = (path: string): Received[] => receiver.received.filter((r) => r.path === path);

  /** The receiver's answers, by path. */
  function respond(r: Received): Reply {
    const seen = hits(r.path).length; // this request included
    const status = /^\/status\/(\d{3})$/.exec(r.path);
    if (status) return { status: Number(status[1]) };
    switch (r.path) {
      case '/redirect':
        return { status: 302, headers: { location: `${receiver.url}/redirect-target` }, body: '' };
      case '/gone':
        return { status: 410, body: 'gone' };
      case '/busy':
        return seen === 1 ? { status: 429, headers: { 'retry-after': '1' }, body: 'slow down' } : { status: 200 };
      case '/slow':
        return { status: 200, delayMs: 2500 };
      case '/long':
        return { status: 200, body: LONG_BODY };
      case '/window':
        return { status: 500, body: 'down' };
      case '/flaky':
        return seen === 1 ? { status: 500, body: 'first time down' } : { status: 200 };
      default:
        return { status: 200 };
    }
  }

  async function createJob(body: Record<string, unknown>, t: TestTenant = tenant): Promise<string> {
    const r = await t.api.post('/v1/jobs', { schedule: { type: 'delay', delayMs: 0 }, ...body });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.jobId;
  }

  /** The job's first run once it is final, with its attempt log. */
  async function finalRun(jobId: string, t: TestTenant = tenant): Promise<RunDetail> {
    const run = await eventually(
      async () => {
        const runs: Run[] = (await t.api.get(`/v1/jobs/${jobId}/runs`)).body.runs;
        const first = runs[runs.length - 1];
        return first && FINAL.has(first.status) ? first : undefined;
      },
      { what: `a final run of job ${jobId}` },
    );
    return runDetail(run.runId, t);
  }

  async function runDetail(runId: string, t: TestTenant = tenant): Promise<RunDetail> {
    const r = await t.api.get(`/v1/runs/${runId}`);
    expect(r.status).toBe(200);
    return r.body;
  }

  beforeAll(async () => {
    db = await freshDatabase(target);
    chime = await startChime(db.env);
    receiver = await startReceiver((r) => respond(r));
    tenant = await createTestTenant(chime.url, 'delivery');
  });
  afterAll(async () => {
    const code = await chime?.stop();
    await receiver?.close();
    await db?.drop();
    expect(code).toBe(0);
  });

  it('sends PUT, PATCH, GET and DELETE with their method; GET without a body', async () => {
    const methods = ['PUT', 'PATCH', 'GET', 'DELETE'] as const;
    const jobs = await Promise.all(
      // A GET job carries no payload (the API refuses one with 400).
      methods.map((method) =>
        createJob({ callback: { url: `${receiver.url}/method/${method}`, method }, ...(method === 'GET' ? {} : { payload: { method } }) }),
      ),
    );
    const runs = await Promise.all(jobs.map((j) => finalRun(j)));
    for (const [i, method] of methods.entries()) {
      expect(runs[i]!.status, method).toBe('succeeded');
      const h = hits(`/method/${method}`);
      expect(h, method).toHaveLength(1);
      expect(h[0]!.method).toBe(method);
      if (method === 'GET') {
        expect(h[0]!.body).toBe('');
        expect(h[0]!.headers['content-type']).toBeUndefined();
        expect(h[0]!.headers['transfer-encoding']).toBeUndefined();
        expect(['0', undefined]).toContain(h[0]!.headers['content-length']);
      } else {
        expect(JSON.parse(h[0]!.body), method).toEqual({ method });
        expect(h[0]!.headers['content-type']).toBe('application/json');
      }
    }
  });

  it("sends the job's custom headers and its auth token as a bearer token", async () => {
    const jobId = await createJob({
      callback: { url: `${receiver.url}/headers`, headers: { 'X-Team': 'ops', 'X-Trace-Id': 'trace-42' }, authToken: 'tok-ABC.123' },
    });
    expect((await finalRun(jobId)).status).toBe('succeeded');
    const [h] = hits('/headers');
    expect(h!.headers['x-team']).toBe('ops');
    expect(h!.headers['x-trace-id']).toBe('trace-42');
    expect(h!.headers.authorization).toBe('Bearer tok-ABC.123');
    // No auth token configured: no Authorization header at all.
    const plain = await createJob({ callback: { url: `${receiver.url}/headers-none` } });
    await finalRun(plain);
    expect(hits('/headers-none')[0]!.headers.authorization).toBeUndefined();
  });

  it('judges responses by successStatusCodes: exact codes and status classes', async () => {
    const cases = [
      { codes: [202], path: '/status/200', expected: 'failed' },
      { codes: [202], path: '/status/202', expected: 'succeeded' },
      { codes: ['2xx'], path: '/status/203', expected: 'succeeded' },
      { codes: ['2xx'], path: '/status/404', expected: 'failed' },
      { codes: ['4xx'], path: '/status/404', expected: 'succeeded' },
    ];
    const jobs = await Promise.all(
      cases.map((c) => createJob({ callback: { url: `${receiver.url}${c.path}`, successStatusCodes: c.codes }, retry: NO_RETRY })),
    );
    const runs = await Promise.all(jobs.map((j) => finalRun(j)));
    for (const [i, c] of cases.entries()) {
      const what = `${c.path} with ${JSON.stringify(c.codes)}`;
      const run = runs[i]!;
      expect(run.status, what).toBe(c.expected);
      expect(run.attemptLog, what).toHaveLength(1);
      expect(run.attemptLog[0]!.responseStatus, what).toBe(Number(c.path.slice(-3)));
      expect(run.attemptLog[0]!.errorClass, what).toBe(c.expected === 'failed' ? 'bad_status' : null);
    }
  });

  it('fails an attempt answered by a redirect, and never follows it', async () => {
    const jobId = await createJob({ callback: { url: `${receiver.url}/redirect` }, retry: NO_RETRY });
    const run = await finalRun(jobId);
    expect(run.status).toBe('failed');
    expect(run.attemptLog[0]).toMatchObject({ responseStatus: 302, errorClass: 'bad_status' });
    expect(hits('/redirect')).toHaveLength(1);
    expect(hits('/redirect-target')).toHaveLength(0);
  });

  it('on 410 Gone fails the run without retrying and pauses the job with a reason', async () => {
    // An hourly job (first occurrence now), default retry policy (5 attempts): only the 410 stops it.
    const jobId = await createJob({ schedule: { type: 'interval', everyMs: 3_600_000 }, callback: { url: `${receiver.url}/gone` } });
    const run = await finalRun(jobId);
    expect(run.status).toBe('failed');
    expect(run.attempts).toBe(1);
    expect(run.attemptLog[0]).toMatchObject({ responseStatus: 410, errorClass: 'bad_status' });
    const job = await eventually(
      async () => {
        const j = (await tenant.api.get(`/v1/jobs/${jobId}`)).body;
        return j.status === 'paused' ? j : undefined;
      },
      { what: 'the job to pause' },
    );
    expect(job.pausedReason).toBe('gone');
    expect(job.nextRunAt).toBeNull();
    expect(hits('/gone')).toHaveLength(1);
    const runs: Run[] = (await tenant.api.get(`/v1/jobs/${jobId}/runs`)).body.runs;
    expect(runs.filter((r) => !FINAL.has(r.status))).toEqual([]); // the next occurrence is not waiting
  });

  it('waits at least Retry-After before retrying a 429', async () => {
    const jobId = await createJob({
      callback: { url: `${receiver.url}/busy` },
      retry: { strategy: 'fixed', maxAttempts: 3, initialDelayMs: 50, jitter: false },
    });
    const run = await finalRun(jobId);
    expect(run.status).toBe('succeeded');
    expect(run.attemptLog.map((a) => a.responseStatus)).toEqual([429, 200]);
    const [first, second] = hits('/busy');
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1000);
  });

  it('logs a receiver slower than timeoutMs as errorClass timeout', async () => {
    const jobId = await createJob({ callback: { url: `${receiver.url}/slow`, timeoutMs: 1000 }, retry: NO_RETRY });
    const run = await finalRun(jobId);
    expect(run.status).toBe('failed');
    const [a] = run.attemptLog;
    expect(a).toMatchObject({ responseStatus: null, errorClass: 'timeout' });
    expect(a!.durationMs).toBeGreaterThanOrEqual(900);
    expect(a!.durationMs).toBeLessThan(2500); // it gave up, it did not wait for the answer
  });

  it('logs a closed port as errorClass connection_refused', async () => {
    const port = await freePort();
    const jobId = await createJob({ callback: { url: `http://127.0.0.1:${port}/nobody` }, retry: NO_RETRY });
    const run = await finalRun(jobId);
    expect(run.status).toBe('failed');
    expect(run.attemptLog[0]).toMatchObject({ responseStatus: null, errorClass: 'connection_refused' });
  });

  it('keeps the first 4 KiB of a long response body in the attempt log', async () => {
    const jobId = await createJob({ callback: { url: `${receiver.url}/long` } });
    const run = await finalRun(jobId);
    expect(run.status).toBe('succeeded');
    expect(run.attemptLog[0]!.responseBodyExcerpt).toBe(LONG_BODY.slice(0, 4096));
  });

  it('expires a run whose retry would start after the relevancy window, after exactly one request', async () => {
    const jobId = await createJob({
      callback: { url: `${receiver.url}/window` },
      retry: { strategy: 'fixed', maxAttempts: 5, initialDelayMs: 3000, jitter: false },
      relevancyWindowMs: 1000,
    });
    const run = await finalRun(jobId);
    expect(run.status).toBe('expired');
    expect(run.attempts).toBe(1);
    expect(run.attemptLog).toHaveLength(1);
    expect(run.attemptLog[0]).toMatchObject({ responseStatus: 500, errorClass: 'bad_status' });
    expect(hits('/window')).toHaveLength(1);
    // Decided when the attempt failed (the retry at +3 s would be past the window), not found expired later.
    expect(run.error).toMatch(/relevancy window/);
    expect(Date.parse(run.finishedAt!) - hits('/window')[0]!.at).toBeLessThan(2000);
    // Expired is not a dead letter: the failure was not the receiver's final word.
    const dead: Run[] = (await tenant.api.get('/v1/dead-letters')).body.runs;
    expect(dead.map((r) => r.runId)).not.toContain(run.runId);
  });

  it('lists a failed run as a dead letter and replays it as a new run with the same payload, dismissing it', async () => {
    const payload = { order: 'A-17', lines: [1, 2, 3] };
    const jobId = await createJob({ callback: { url: `${receiver.url}/flaky` }, payload, retry: NO_RETRY });
    const failed = await finalRun(jobId);
    expect(failed.status).toBe('failed');
    const dead: Run[] = (await tenant.api.get('/v1/dead-letters')).body.runs;
    expect(dead.map((r) => r.runId)).toContain(failed.runId);

    const replay = await tenant.api.post(`/v1/runs/${failed.runId}/replay`);
    expect(replay.status).toBe(202);
    const newRunId: string = replay.body.runId;
    expect(newRunId).not.toBe(failed.runId);
    const replayed = await eventually(
      async () => {
        const r = await runDetail(newRunId);
        return FINAL.has(r.status) ? r : undefined;
      },
      { what: 'the replayed run to finish' },
    );
    expect(replayed).toMatchObject({ jobId, trigger: 'replay', status: 'succeeded', attempts: 1 });

    const h = hits('/flaky');
    expect(h).toHaveLength(2);
    expect(h.map((x) => x.headers['webhook-id'])).toEqual([failed.runId, newRunId]);
    expect(JSON.parse(h[1]!.body)).toEqual(payload);
    expect(h[1]!.body).toBe(h[0]!.body);
    // The dead letter keeps its history, and is dismissed: no longer listed, never replayed again in bulk.
    expect(await runDetail(failed.runId)).toMatchObject({ status: 'failed', dismissedAt: expect.any(String) });
    expect(((await tenant.api.get('/v1/dead-letters')).body.runs as Run[]).map((r) => r.runId)).not.toContain(failed.runId);
  });

  it('signs with both the old and the new secret after a rotation', async () => {
    const rotating = await createTestTenant(chime.url, 'rotating');
    const oldSecret = rotating.signingSecret;
    const jobId = await createJob(
      { schedule: { type: 'interval', everyMs: 1000 }, callback: { url: `${receiver.url}/rotation` } },
      rotating,
    );
    const signatures = (r: Received) => String(r.headers['webhook-signature']).split(' ');
    const asHeaders = (r: Received) => r.headers as Record<string, string>;

    const before = (await eventually(() => hits('/rotation')[0], { what: 'a callback before the rotation' }))!;
    expect(signatures(before)).toHaveLength(1);
    expect(() => new Webhook(oldSecret).verify(before.body, asHeaders(before))).not.toThrow();

    const rotated = await rotating.api.post('/v1/signing-secrets/rotate');
    const rotatedAt = Date.now();
    expect(rotated.status).toBe(201);
    const newSecret: string = rotated.body.signingSecret;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    expect(Date.parse(rotated.body.previousValidUntil) - rotatedAt).toBeGreaterThan(23.9 * 3_600_000);

    // The dispatcher caches secrets for up to 5 s: the first callbacks after the rotation may still carry one.
    const both = await eventually(() => hits('/rotation').find((r) => r.at > rotatedAt && signatures(r).length === 2), {
      timeoutMs: 15_000,
      what: 'a callback signed with two secrets',
    });
    expect(signatures(both).every((s) => /^v1,[A-Za-z0-9+/]+=*$/.test(s))).toBe(true);
    expect(() => new Webhook(oldSecret).verify(both.body, asHeaders(both))).not.toThrow();
    expect(() => new Webhook(newSecret).verify(both.body, asHeaders(both))).not.toThrow();
    expect(() => new Webhook(`whsec_${randomBytes(24).toString('base64')}`).verify(both.body, asHeaders(both))).toThrow();
    expect(await verifyWebhook(both, newSecret)).toMatchObject({ ok: true, id: both.headers['webhook-id'] });
    // Every callback of the rotating tenant, before and after, verifies with the old secret during the overlap.
    for (const r of hits('/rotation')) expect((await verifyWebhook(r, oldSecret, { nowMs: r.at })).ok).toBe(true);

    expect((await rotating.api.request('DELETE', `/v1/jobs/${jobId}`)).status).toBe(204);
  });
});
