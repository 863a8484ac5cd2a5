/**
 * What every write route holds to (API.md "Jobs"): a body in another media type is `415`; unknown fields in any body,
 * including the bodies of routes that take none, are `400` naming each field; `Idempotency-Key` on triggers and
 * replays answers the first run; and `GET /v1/jobs/by-key/:key` reads a job by its key. On each database target.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../src/store/db.ts';
import type { TestTenant } from '../support/api.ts';
import { apiClient, startTestApp, TEST_APP_URL, type TestApp, tenantSnapshot } from '../support/app.ts';
import { ADMIN_TOKEN } from '../support/chime-process.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';

const jobBody = (extra: Record<string, unknown> = {}) => ({
  schedule: { type: 'delay', delayMs: 3_600_000 },
  callback: { url: 'http://127.0.0.1:9/hook' },
  ...extra,
});

describe.each(DATABASE_TARGETS)('request rules ($kind)', (target) => {
  let app: TestApp;
  let tenant: TestTenant;
  let jobId: string;
  let runId: string;
  let keyId: string;

  beforeAll(async () => {
    app = await startTestApp({}, { target });
    tenant = await app.tenant('rules');
    const job = await tenant.api.post('/v1/jobs', jobBody({ key: 'report-eu' }));
    expect(job.status).toBe(201);
    jobId = job.body.jobId;
    runId = (await tenant.api.post(`/v1/jobs/${jobId}/trigger`)).body.runId;
    keyId = (await tenant.api.post('/v1/api-keys', { name: 'spare' })).body.keyId;
  });
  afterAll(() => app?.close());

  const runsOfJob = async () => (await tenant.api.get(`/v1/jobs/${jobId}/runs?limit=100`)).body.runs.map((r: { runId: string }) => r.runId);

  /** Every route that reads a body, with a body it would accept. */
  const writeRoutes = (): [string, string, unknown][] => [
    ['POST', '/v1/jobs', jobBody()],
    ['POST', '/v1/jobs/batch', { jobs: [jobBody()] }],
    ['PUT', '/v1/jobs/by-key/k415', jobBody()],
    ['PATCH', `/v1/jobs/${jobId}`, { name: 'x' }],
    ['POST', '/v1/schedules/preview', { schedule: { type: 'delay', delayMs: 1000 } }],
    ['POST', '/v1/api-keys', { name: 'k' }],
    ['POST', '/v1/signing-secrets/rotate', {}],
    ['POST', `/v1/jobs/${jobId}/trigger`, {}],
    ['POST', `/v1/runs/${runId}/replay`, {}],
    ['POST', '/v1/jobs/bulk', { action: 'pause', filter: { jobIds: [jobId] } }],
    ['POST', '/v1/dead-letters/replay', { jobId }],
    ['POST', '/v1/notification-endpoints', { url: 'http://127.0.0.1:9/events', events: ['run.failed'] }],
    ['POST', '/jobs', { name: 'c', cronExpr: '0 0 * * *', handlerUrl: 'http://127.0.0.1:9/' }],
    ['PATCH', `/jobs/${jobId}`, { paused: false }],
    ['POST', `/jobs/${jobId}/trigger`, {}],
  ];

  it('answers 415 to a body in another media type, or with none named, on every write route, and changes nothing', async () => {
    const before = await tenantSnapshot(app.database, tenant.tenantId);
    for (const [method, path, body] of writeRoutes()) {
      for (const headers of [
        { 'content-type': 'text/plain' },
        { 'content-type': 'application/x-www-form-urlencoded' },
        { 'content-type': '' },
      ]) {
        const r = await tenant.api.request(method, path, JSON.stringify(body), headers);
        const what = `${method} ${path} as ${headers['content-type'] || 'no content type'}`;
        expect(r.status, what).toBe(415);
        expect(r.headers.get('content-type'), what).toBe('application/problem+json');
        expect(r.body.type, what).toBe('urn:chime:problem:unsupported_media_type');
      }
    }
    const admin = apiClient(TEST_APP_URL, ADMIN_TOKEN, app.fetch);
    expect((await admin.request('POST', '/v1/tenants', 'name=x', { 'content-type': 'application/x-www-form-urlencoded' })).status).toBe(
      415,
    );
    expect(await tenantSnapshot(app.database, tenant.tenantId)).toBe(before);
  });

  it('names every unknown field of every body, also of routes that take none, and changes nothing', async () => {
    const before = await tenantSnapshot(app.database, tenant.tenantId);
    for (const [method, path, body] of writeRoutes()) {
      const r = await tenant.api.request(method, path, { ...(body as object), surplus: 1, 'other one': true });
      const what = `${method} ${path}`;
      expect(r.status, what).toBe(400);
      expect(r.body.errors, what).toEqual(
        expect.arrayContaining([
          { path: 'surplus', message: 'unknown field' },
          { path: 'other one', message: 'unknown field' },
        ]),
      );
    }
    const nested = await tenant.api.post('/v1/jobs', jobBody({ callback: { url: 'http://127.0.0.1:9/', tiemoutMs: 5 } }));
    expect(nested.body.errors).toEqual([{ path: 'callback.tiemoutMs', message: 'unknown field' }]);
    const rotate = await tenant.api.post('/v1/signing-secrets/rotate', { secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' });
    expect(rotate.status).toBe(400);
    expect(rotate.body.errors).toEqual([{ path: 'secret', message: 'unknown field' }]);
    for (const raw of ['[]', '"x"', '7']) {
      const r = await tenant.api.request('POST', `/v1/jobs/${jobId}/trigger`, raw);
      expect(r.status, raw).toBe(400);
      expect(r.body.errors, raw).toEqual([{ path: '(body)', message: expect.any(String) }]);
    }
    expect((await tenant.api.request('POST', `/v1/jobs/${jobId}/trigger`, '{"a":')).body.type).toBe('urn:chime:problem:malformed_json');
    for (const path of [`/v1/api-keys/${keyId}`, `/v1/jobs/${jobId}`, `/v1/dead-letters/${runId}`, `/v1/notification-endpoints/${runId}`]) {
      const r = await tenant.api.request('DELETE', path, { force: true });
      expect(r.status, path).toBe(400);
      expect(r.body.errors, path).toEqual([{ path: 'force', message: 'unknown field' }]);
    }
    expect(await tenantSnapshot(app.database, tenant.tenantId)).toBe(before);
  });

  it('accepts an absent, empty or {} body where none is taken', async () => {
    const made = [
      await tenant.api.request('POST', `/v1/jobs/${jobId}/trigger`),
      await tenant.api.request('POST', `/v1/jobs/${jobId}/trigger`, ''),
      await tenant.api.post(`/v1/jobs/${jobId}/trigger`, {}),
      await tenant.api.request('POST', `/v1/jobs/${jobId}/trigger`, undefined, { 'content-type': 'text/plain' }),
    ];
    expect(made.map((r) => r.status)).toEqual([202, 202, 202, 202]);
  });

  it('honours Idempotency-Key on trigger, replay and the compatibility trigger: a repeat answers the first run', async () => {
    for (const [path, key] of [
      [`/v1/jobs/${jobId}/trigger`, 't-1'],
      [`/v1/runs/${runId}/replay`, 'r-1'],
      [`/jobs/${jobId}/trigger`, 'c-1'],
    ] as const) {
      const runsBefore = await runsOfJob();
      const first = await tenant.api.post(path, {}, { 'idempotency-key': key });
      expect(first.status, path).toBe(202);
      const again = await Promise.all([1, 2, 3].map(() => tenant.api.post(path, {}, { 'idempotency-key': key })));
      expect(
        again.map((r) => [r.status, r.body.runId]),
        path,
      ).toEqual([1, 2, 3].map(() => [202, first.body.runId]));
      const runsAfter = await runsOfJob();
      expect(runsAfter.length, path).toBe(runsBefore.length + 1);
      expect(runsAfter, path).toContain(first.body.runId);
    }
    // The same key for another request (another job's trigger, a job registration) is a conflict and makes nothing.
    const other = (await tenant.api.post('/v1/jobs', jobBody())).body.jobId;
    const runsBefore = await runsOfJob();
    const otherRuns = async () => (await tenant.api.get(`/v1/jobs/${other}/runs`)).body.runs.map((r: { runId: string }) => r.runId);
    const otherBefore = await otherRuns();
    const conflict = await tenant.api.post(`/v1/jobs/${other}/trigger`, {}, { 'idempotency-key': 't-1' });
    expect(conflict.status).toBe(409);
    expect((await tenant.api.post('/v1/jobs', jobBody(), { 'idempotency-key': 'r-1' })).status).toBe(409);
    expect(await otherRuns()).toEqual(otherBefore);
    expect(await runsOfJob()).toEqual(runsBefore);
    // A key refused with the job's 404 stays free for its real use.
    expect((await tenant.api.post('/v1/jobs/00000000-0000-7000-8000-000000000000/trigger', {}, { 'idempotency-key': 'free' })).status).toBe(
      404,
    );
    expect((await tenant.api.post(`/v1/jobs/${other}/trigger`, {}, { 'idempotency-key': 'free' })).status).toBe(202);
    const [keys] = await query<{ n: number }>(
      app.database.db,
      sql`select count(*)::int as n from idempotency_keys where tenant_id = ${tenant.tenantId} and run_id is not null`,
    );
    expect(keys!.n).toBe(4);
  });

  it('reads a job by its key; an unknown key is 404, a malformed one 400', async () => {
    const r = await tenant.api.get('/v1/jobs/by-key/report-eu');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ jobId, key: 'report-eu' });
    const missing = await tenant.api.get('/v1/jobs/by-key/nope');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('application/problem+json');
    expect((await tenant.api.get('/v1/jobs/by-key/bad%20key')).status).toBe(400);
  });
});
