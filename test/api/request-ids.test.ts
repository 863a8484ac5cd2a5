/**
 * Request ids and the per-request record (API.md "Access control and audit"; src/api/requests.ts): every response
 * carries `X-Request-Id` (the client's when it is 1..128 visible ASCII characters, else a new one), every problem body
 * carries the same id as `requestId`, and each answered request yields one record with the route's pattern, the
 * status, the tenant and key ids, and never the key itself. In process, on an in-memory PGlite: the database is not
 * the point here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestRecord } from '../../src/api/requests.ts';
import type { TestTenant } from '../support/api.ts';
import { apiClient, startTestApp, TEST_APP_URL, type TestApp } from '../support/app.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('request ids', () => {
  let app: TestApp;
  let tenant: TestTenant;
  const records: RequestRecord[] = [];

  beforeAll(async () => {
    app = await startTestApp({}, { onRequest: (r) => records.push(r) });
    tenant = await app.tenant('request-ids');
  });
  afterAll(() => app?.close());

  const send = (path: string, init: RequestInit = {}) => app.fetch(`${TEST_APP_URL}${path}`, init);

  it('answers a new id when the client sends none, and the client’s own when it is acceptable', async () => {
    const fresh = await send('/healthz');
    expect(fresh.headers.get('x-request-id')).toMatch(UUID);
    const other = await send('/healthz');
    expect(other.headers.get('x-request-id')).not.toBe(fresh.headers.get('x-request-id'));
    const own = await send('/healthz', { headers: { 'x-request-id': 'trace-42:abc/DEF' } });
    expect(own.headers.get('x-request-id')).toBe('trace-42:abc/DEF');
    const longest = 'x'.repeat(128);
    expect((await send('/healthz', { headers: { 'x-request-id': longest } })).headers.get('x-request-id')).toBe(longest);
  });

  it.each([
    ['too long', 'x'.repeat(129)],
    ['with a space', 'two words'],
    ['with a tab', 'a\tb'],
  ])('replaces a client id %s with a new one', async (_what, id) => {
    const r = await send('/healthz', { headers: { 'x-request-id': id } });
    expect(r.headers.get('x-request-id')).toMatch(UUID);
  });

  it('carries the id in every problem body: 401, 400 naming a field, 404, 405', async () => {
    const anonymous = await send('/v1/jobs', { headers: { 'x-request-id': 'req-401' } });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ status: 401, requestId: 'req-401' });

    const api = apiClient(TEST_APP_URL, tenant.apiKey, app.fetch);
    const invalid = await api.post('/v1/jobs', { schedule: { type: 'delay', delayMs: -1 } }, { 'x-request-id': 'req-400' });
    expect(invalid.status).toBe(400);
    expect(invalid.body.requestId).toBe('req-400');
    expect(invalid.headers.get('x-request-id')).toBe('req-400');

    const missing = await api.get('/v1/no-such-route');
    expect(missing.status).toBe(404);
    expect(missing.body.requestId).toBe(missing.headers.get('x-request-id'));
    expect(missing.body.requestId).toMatch(UUID);

    const wrongMethod = await api.request('PUT', '/v1/runs');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.body.requestId).toBe(wrongMethod.headers.get('x-request-id'));
  });

  it('records each request once: method, route pattern, status, duration, tenant and key, never the key itself', async () => {
    const api = apiClient(TEST_APP_URL, tenant.apiKey, app.fetch);
    const created = await api.post('/v1/jobs', { schedule: { type: 'delay', delayMs: 60_000 }, callback: { url: 'http://127.0.0.1:9/h' } });
    expect(created.status).toBe(201);
    records.length = 0;
    const got = await api.request('GET', `/v1/jobs/${created.body.jobId}`, undefined, { 'x-request-id': 'req-get' });
    expect(got.status).toBe(200);
    await api.get('/v1/nothing-here');
    expect(records).toHaveLength(2);
    const [get, unmatched] = records;
    expect(get).toEqual({
      method: 'GET',
      route: '/v1/jobs/:jobId',
      status: 200,
      durationMs: expect.any(Number),
      requestId: 'req-get',
      tenantId: tenant.tenantId,
      keyId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(get!.durationMs).toBeGreaterThanOrEqual(0);
    expect(unmatched).toMatchObject({ method: 'GET', route: 'unmatched', status: 404 });
    expect(JSON.stringify(records)).not.toContain(tenant.apiKey);
  });
});
