/**
 * Receiver control and result routing (API.md "Receiver control and result routing") end to end: a real Chime process
 * and real receivers on 127.0.0.1, on every database target. A 500 answered with `Chime-Control: no-retry` is not
 * retried; `pause` pauses the job (`pausedReason: "receiver"`); `onSuccess` receives a POST signed with the tenant's
 * secret (checked with the `standardwebhooks` package) carrying the response's status, headers and body, listed under
 * the job's result deliveries and not among its runs; a success status whose body does not meet `successBody` fails
 * with `body_mismatch`; the attempt log shows the response headers; `timeoutMs` accepts up to 15 min.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, type Reply, startReceiver } from '../support/receiver.ts';

describe.each(DATABASE_TARGETS)('receiver control on $kind', (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let callbacks: Receiver;
  let results: Receiver;
  let tenant: TestTenant;

  beforeAll(async () => {
    db = await freshDatabase(target);
    callbacks = await startReceiver((r): Reply => {
      if (r.path === '/no-retry') return { status: 500, headers: { 'chime-control': 'no-retry' }, body: 'broken for good' };
      if (r.path === '/pause') return { status: 200, headers: { 'chime-control': 'pause' } };
      if (r.path === '/busy') return { status: 200, headers: { 'content-type': 'application/json' }, body: '{"status":"busy"}' };
      if (r.path === '/report') {
        return { status: 201, headers: { 'x-report-id': 'r-42', 'set-cookie': 'session=secret' }, body: '{"rows":3}' };
      }
      return { status: 200 };
    });
    results = await startReceiver(() => ({ status: 200 }));
    chime = await startChime(db.env);
    tenant = await createTestTenant(chime.url, 'receiver-control');
  });
  afterAll(async () => {
    await chime?.stop();
    await callbacks?.close();
    await results?.close();
    await db?.drop();
  });

  const job = async (body: Record<string, unknown>) => {
    const r = await tenant.api.post('/v1/jobs', { schedule: { type: 'delay', delayMs: 0 }, ...body });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body as { jobId: string };
  };
  const runsOf = async (jobId: string) => (await tenant.api.get(`/v1/jobs/${jobId}/runs`)).body.runs as any[];

  it('a 500 with Chime-Control: no-retry ends the run failed after one attempt, with retries left', async () => {
    const j = await job({
      callback: { url: `${callbacks.url}/no-retry` },
      retry: { strategy: 'fixed', maxAttempts: 5, initialDelayMs: 1000 },
    });
    const run = await eventually(async () => (await runsOf(j.jobId)).find((r) => r.status === 'failed'), { what: 'the run to fail' });
    expect(run.attempts).toBe(1);
    expect(run.error).toMatch(/no-retry/);
    expect(callbacks.received.filter((r) => r.path === '/no-retry')).toHaveLength(1);
    const detail = (await tenant.api.get(`/v1/runs/${run.runId}`)).body;
    expect(detail.attemptLog).toHaveLength(1);
    expect(detail.attemptLog[0]).toMatchObject({ responseStatus: 500, responseBodyExcerpt: 'broken for good', errorClass: 'bad_status' });
    expect(detail.attemptLog[0].responseHeaders).toMatchObject({ 'chime-control': 'no-retry' });
  });

  it('Chime-Control: pause pauses the job with pausedReason "receiver"', async () => {
    const j = await job({ schedule: { type: 'interval', everyMs: 60_000 }, callback: { url: `${callbacks.url}/pause` } });
    const paused = await eventually(
      async () => {
        const got = (await tenant.api.get(`/v1/jobs/${j.jobId}`)).body;
        return got.status === 'paused' ? got : undefined;
      },
      { what: 'the job to pause' },
    );
    expect(paused).toMatchObject({ pausedReason: 'receiver', nextRunAt: null });
    expect((await runsOf(j.jobId)).map((r) => r.status).sort()).toEqual(['canceled', 'succeeded']);
  });

  it('onSuccess receives a signed POST with the response status, headers and body, listed under result-deliveries', async () => {
    const j = await job({ callback: { url: `${callbacks.url}/report` }, onSuccess: { url: `${results.url}/done` } });
    expect((await tenant.api.get(`/v1/jobs/${j.jobId}`)).body.onSuccess).toEqual({ url: `${results.url}/done` });
    const got = await eventually(() => results.received.find((r) => r.path === '/done'), { what: 'the result delivery' });
    expect(got.method).toBe('POST');
    const event = new Webhook(tenant.signingSecret).verify(got.body, got.headers as Record<string, string>) as any;
    expect(got.headers['webhook-id']).toBe(event.eventId);
    const [run] = await runsOf(j.jobId);
    expect(event).toMatchObject({
      type: 'run.succeeded',
      data: {
        job: { jobId: j.jobId },
        run: { runId: run.runId, status: 'succeeded' },
        response: { status: 201, body: '{"rows":3}', headers: { 'x-report-id': 'r-42' } },
      },
    });
    expect(event.data.response.headers['set-cookie']).toBeUndefined();
    expect(event.data.response.bodyEncoding).toBeUndefined();
    // Listed as the job's result delivery, not among its runs.
    const listed = await eventually(
      async () => {
        const d = (await tenant.api.get(`/v1/jobs/${j.jobId}/result-deliveries`)).body.deliveries;
        return d[0]?.status === 'succeeded' ? d : undefined;
      },
      { what: 'the delivery to be listed as succeeded' },
    );
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      runId: run.runId,
      eventId: event.eventId,
      type: 'run.succeeded',
      url: `${results.url}/done`,
      attempts: 1,
    });
    expect(got.headers['chime-run-id']).toBe(listed[0].deliveryId);
    expect((await runsOf(j.jobId)).map((r) => r.runId)).toEqual([run.runId]);
  });

  it('a success status whose body does not match successBody fails the attempt with body_mismatch', async () => {
    const j = await job({
      callback: { url: `${callbacks.url}/busy`, successBody: { jsonPointer: '/status', equals: 'ok' } },
      retry: { strategy: 'none' },
    });
    const run = await eventually(async () => (await runsOf(j.jobId)).find((r) => r.status === 'failed'), { what: 'the run to fail' });
    const detail = (await tenant.api.get(`/v1/runs/${run.runId}`)).body;
    expect(detail.attemptLog[0]).toMatchObject({ responseStatus: 200, errorClass: 'body_mismatch' });
    expect(detail.attemptLog[0].error).toMatch(/"busy" at \/status/);
  });

  it('callback.timeoutMs accepts up to 15 min; onSuccess must be a valid destination', async () => {
    await job({ callback: { url: `${callbacks.url}/ok`, timeoutMs: 900_000 } });
    const over = await tenant.api.post('/v1/jobs', {
      schedule: { type: 'delay', delayMs: 0 },
      callback: { url: `${callbacks.url}/ok`, timeoutMs: 900_001 },
      onFailure: { url: 'ftp://example.com/x' },
    });
    expect(over.status).toBe(400);
    const paths = over.body.errors.map((e: { path: string }) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['callback.timeoutMs', 'onFailure.url']));
  });
});
