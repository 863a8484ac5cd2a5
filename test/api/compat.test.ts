/**
 * The compatibility routes of API.md (`POST /jobs`, `GET /jobs/:jobId/runs`, `POST /jobs/:jobId/trigger`,
 * `PATCH /jobs/:jobId`): their exact shapes, the mapping onto `/v1` jobs, errors named as the client sent the
 * fields; in process on each database, then a delivery through the real process to a real receiver.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { apiClient, startTestApp, TEST_APP_URL, type TestApp } from '../support/app.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

const HOOK = 'http://127.0.0.1:9/hook';
const body = (extra: Record<string, unknown> = {}) => ({ name: 'nightly', cronExpr: '0 3 * * *', handlerUrl: HOOK, ...extra });

describe.each(DATABASE_TARGETS)('compatibility routes ($kind)', (target) => {
  let app: TestApp;
  let t: TestTenant;

  beforeAll(async () => {
    app = await startTestApp({}, { target });
    t = await app.tenant('compat');
  });
  afterAll(() => app?.close());

  it('POST /jobs → 201 { jobId }, a cron job with the mapped fields', async () => {
    const r = await t.api.post('/jobs', body({ payload: { report: 'eu' }, timeout: 2500, retries: 2 }));
    expect(r.status).toBe(201);
    expect(Object.keys(r.body)).toEqual(['jobId']);
    const job = (await t.api.get(`/v1/jobs/${r.body.jobId}`)).body;
    expect(job).toMatchObject({
      name: 'nightly',
      status: 'active',
      schedule: { type: 'cron', expression: '0 3 * * *', timezone: 'UTC' },
      callback: { url: HOOK, method: 'POST', timeoutMs: 2500 },
      payload: { report: 'eu' },
      retry: { maxAttempts: 3 },
    });
    const defaults = (await t.api.get(`/v1/jobs/${(await t.api.post('/jobs', body())).body.jobId}`)).body;
    expect(defaults).toMatchObject({ callback: { timeoutMs: 10_000 }, retry: { maxAttempts: 5 }, payload: null });
    expect((await t.api.post('/jobs', body({ retries: 0 }))).status).toBe(201);
  });

  const invalid: [string, Record<string, unknown>, string][] = [
    ['a cron with six fields', body({ cronExpr: '0 0 0 * * *' }), 'cronExpr'],
    ['a cron that never fires', body({ cronExpr: '0 0 30 2 *' }), 'cronExpr'],
    ['a cron of the wrong type', body({ cronExpr: 5 }), 'cronExpr'],
    ['an ftp handler', body({ handlerUrl: 'ftp://example.com/x' }), 'handlerUrl'],
    ['a missing handler', { name: 'x', cronExpr: '0 0 * * *' }, 'handlerUrl'],
    ['a timeout under 1 s', body({ timeout: 10 }), 'timeout'],
    ['negative retries', body({ retries: -1 }), 'retries'],
    ['retries as a string', body({ retries: '3' }), 'retries'],
    ['no name', { cronExpr: '0 0 * * *', handlerUrl: HOOK }, 'name'],
    ['an unknown field', body({ schedule: {} }), 'schedule'],
  ];
  it.each(invalid)('POST /jobs with %s → 400 naming %s', async (_what, b, path) => {
    const r = await t.api.post('/jobs', b);
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(r.body.errors.map((e: { path: string }) => e.path)).toEqual([path]);
    expect(r.body.detail).not.toMatch(/schedule\.|callback\.|retry\./);
  });

  it('names handlerUrl for a refused private destination', async () => {
    const guarded = await startTestApp({ allowPrivateDestinations: false });
    try {
      const g = await guarded.tenant();
      const r = await g.api.post('/jobs', body({ handlerUrl: 'http://169.254.169.254/latest' }));
      expect(r.status).toBe(400);
      expect(r.body.errors).toEqual([{ path: 'handlerUrl', message: expect.any(String) }]);
    } finally {
      await guarded.close();
    }
  });

  it('POST /jobs/:jobId/trigger → 202 { runId }; GET /jobs/:jobId/runs lists them newest first', async () => {
    const jobId = (await t.api.post('/jobs', body())).body.jobId;
    const triggered: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await t.api.post(`/jobs/${jobId}/trigger`);
      expect(r.status).toBe(202);
      expect(Object.keys(r.body)).toEqual(['runId']);
      triggered.push(r.body.runId);
    }
    const all = await t.api.get(`/jobs/${jobId}/runs`);
    expect(all.status).toBe(200);
    expect(Object.keys(all.body)).toEqual(['runs']);
    expect(all.body.runs).toHaveLength(4); // the scheduled occurrence and three manual runs
    for (const run of all.body.runs) expect(Object.keys(run).sort()).toEqual(['error', 'finishedAt', 'runId', 'startedAt', 'status']);
    expect(all.body.runs.slice(0, 3).map((r: { runId: string }) => r.runId)).toEqual([...triggered].reverse());
    const two = await t.api.get(`/jobs/${jobId}/runs?limit=2`);
    expect(two.body.runs.map((r: { runId: string }) => r.runId)).toEqual([triggered[2], triggered[1]]);
    for (const limit of ['0', '101', 'x']) expect((await t.api.get(`/jobs/${jobId}/runs?limit=${limit}`)).status, limit).toBe(400);
  });

  it('PATCH /jobs/:jobId pauses and resumes; a canceled job is a conflict', async () => {
    const jobId = (await t.api.post('/jobs', body())).body.jobId;
    const paused = await t.api.request('PATCH', `/jobs/${jobId}`, { paused: true });
    expect(paused.status).toBe(200);
    expect(paused.body).toEqual({ jobId, paused: true });
    expect((await t.api.get(`/v1/jobs/${jobId}`)).body.status).toBe('paused');
    expect((await t.api.request('PATCH', `/jobs/${jobId}`, { paused: false })).body).toEqual({ jobId, paused: false });
    expect((await t.api.get(`/v1/jobs/${jobId}`)).body.status).toBe('active');
    const bad = await t.api.request('PATCH', `/jobs/${jobId}`, { paused: 'yes' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].path).toBe('paused');
    expect((await t.api.request('DELETE', `/v1/jobs/${jobId}`)).status).toBe(204);
    const conflict = await t.api.request('PATCH', `/jobs/${jobId}`, { paused: true });
    expect(conflict.status).toBe(409);
    expect(conflict.body.type).toBe('urn:chime:problem:conflict');
    expect((await t.api.post(`/jobs/${jobId}/trigger`)).status).toBe(409);
  });

  it('needs an API key and answers unknown jobs with 404', async () => {
    const anon = apiClient(TEST_APP_URL, null, app.fetch);
    expect((await anon.post('/jobs', body())).status).toBe(401);
    expect((await anon.get('/jobs/00000000-0000-7000-8000-000000000000/runs')).status).toBe(401);
    for (const id of ['00000000-0000-7000-8000-000000000000', 'not-a-uuid']) {
      expect((await t.api.get(`/jobs/${id}/runs`)).status).toBe(404);
      expect((await t.api.post(`/jobs/${id}/trigger`)).status).toBe(404);
      expect((await t.api.request('PATCH', `/jobs/${id}`, { paused: true })).status).toBe(404);
    }
  });
});

describe.each(DATABASE_TARGETS)('a compatibility job delivered by the real process ($kind)', (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let receiver: Receiver;

  beforeAll(async () => {
    db = await freshDatabase(target);
    chime = await startChime(db.env);
    let calls = 0;
    receiver = await startReceiver(() => (++calls === 1 ? { status: 500, body: 'first fails' } : { status: 200 }));
  }, 120_000);
  afterAll(async () => {
    await chime?.stop();
    await receiver?.close();
    await db?.drop();
  });

  it('a trigger is sent with the payload and retried once after a failure (retries: 1)', async () => {
    const t = await createTestTenant(chime.url, 'compat-e2e');
    const created = await t.api.post('/jobs', {
      name: 'e2e',
      cronExpr: '0 0 1 1 *',
      handlerUrl: `${receiver.url}/hook`,
      payload: { hello: 'compat' },
      timeout: 5000,
      retries: 1,
    });
    expect(created.status).toBe(201);
    const { runId } = (await t.api.post(`/jobs/${created.body.jobId}/trigger`)).body;
    const run = await eventually(
      async () => {
        const r = (await t.api.get(`/jobs/${created.body.jobId}/runs`)).body.runs.find((x: { runId: string }) => x.runId === runId);
        return r?.status === 'succeeded' ? r : undefined;
      },
      { timeoutMs: 30_000, what: 'the triggered run to succeed' },
    );
    expect(run).toEqual({ runId, status: 'succeeded', startedAt: expect.any(String), finishedAt: expect.any(String), error: null });
    expect(receiver.received).toHaveLength(2);
    for (const hit of receiver.received) {
      expect(JSON.parse(hit.body)).toEqual({ hello: 'compat' });
      expect(hit.headers['webhook-id']).toBe(runId);
    }
  });
});
