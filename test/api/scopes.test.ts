/**
 * Scoped API keys (API.md "Access control and audit"; src/api/route-scopes.ts): one table says which scope each tenant
 * route needs, and it covers every route (walked from the OpenAPI document and from the app's routes); a key lacking a
 * route's scope gets `403` `insufficient_scope` naming it; a key grants at most its own scopes; key views carry
 * `scopes`, `*` by default and for keys made before scopes existed. On each database target (the scopes column).
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANY_KEY, ROUTE_SCOPES } from '../../src/api/route-scopes.ts';
import { ALL_SCOPES, SCOPES, type Scope } from '../../src/domain/scopes.ts';
import type { TestTenant } from '../support/api.ts';
import { apiClient, startTestApp, TEST_APP_URL, type TestApp } from '../support/app.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';

/** Routes outside the API-key check: operations, the JWKS, the console and docs, and tenant sign-up. */
const UNSCOPED = new Set([
  'GET /healthz',
  'GET /readyz',
  'GET /metrics',
  'GET /.well-known/jwks.json',
  'GET /openapi.json',
  'POST /v1/tenants',
  // An async job's receiver: the attempt's completion token, never an API key (src/api/routes/completion.ts).
  'POST /v1/runs/:runId/completion',
  'POST /v1/runs/:runId/heartbeat',
  // Operating tenants: the admin token, never an API key (src/api/routes/admin-tenants.ts).
  'GET /v1/admin/tenants',
  'PATCH /v1/admin/tenants/:tenantId',
  'DELETE /v1/admin/tenants/:tenantId',
  'GET /console',
  'GET /console/*',
  'GET /docs',
  'GET /docs/*',
]);

describe.each(DATABASE_TARGETS)('scoped API keys ($kind)', (target) => {
  let app: TestApp;
  let tenant: TestTenant;
  const unexpected: unknown[] = [];

  beforeAll(async () => {
    app = await startTestApp({}, { target, onUnexpectedError: (err) => unexpected.push(err) });
    tenant = await app.tenant('scopes');
  });
  afterAll(() => app?.close());

  /** A key of the test tenant with `scopes`, made by the tenant's full key. */
  async function keyWith(scopes: string[]) {
    const r = await tenant.api.post('/v1/api-keys', { name: scopes.join(' '), scopes });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return { ...r.body, api: apiClient(TEST_APP_URL, r.body.key, app.fetch) };
  }

  it('has a scope for every route the OpenAPI document and the app serve under an API key', async () => {
    const doc = (await (await app.fetch(`${TEST_APP_URL}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ':$1')}`),
    );
    const served = app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${r.path}`);
    const needing = [...new Set([...documented, ...served])].filter((route) => !UNSCOPED.has(route));
    expect(needing.length).toBeGreaterThan(30);
    expect(needing.filter((route) => ROUTE_SCOPES[route] === undefined)).toEqual([]);
    // And no entry names a route that does not exist (a renamed route would leave its scope behind).
    expect(Object.keys(ROUTE_SCOPES).filter((route) => !served.includes(route))).toEqual([]);
    for (const scope of Object.values(ROUTE_SCOPES)) expect([ANY_KEY, ...SCOPES]).toContain(scope);
  });

  it('answers 403 insufficient_scope naming the missing scope, and serves what the key holds', async () => {
    const reader = await keyWith(['jobs:read']);
    const created = await tenant.api.post('/v1/jobs', {
      schedule: { type: 'delay', delayMs: 3_600_000 },
      callback: { url: 'http://127.0.0.1:9/h' },
    });
    expect(created.status).toBe(201);

    expect((await reader.api.get('/v1/jobs')).status).toBe(200);
    expect((await reader.api.get(`/v1/jobs/${created.body.jobId}`)).status).toBe(200);
    expect((await reader.api.get('/v1/tenant')).status).toBe(200);

    const refused: [string, string, Scope][] = [
      ['POST', '/v1/jobs', 'jobs:write'],
      ['DELETE', `/v1/jobs/${created.body.jobId}`, 'jobs:write'],
      ['POST', '/jobs', 'jobs:write'],
      ['GET', '/v1/runs', 'runs:read'],
      ['POST', '/v1/dead-letters/replay', 'runs:write'],
      ['GET', '/v1/api-keys', 'keys:manage'],
      ['POST', '/v1/signing-secrets/rotate', 'keys:manage'],
      ['GET', '/v1/usage', 'usage:read'],
      ['GET', '/v1/notification-endpoints', 'notifications:manage'],
    ];
    for (const [method, path, scope] of refused) {
      const r = await reader.api.request(method, path, method === 'GET' || method === 'DELETE' ? undefined : {});
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
      expect(r.body).toMatchObject({ type: 'urn:chime:problem:insufficient_scope', status: 403 });
      expect(r.body.detail).toContain(scope);
    }
    // Refused before anything changed: the job is still there.
    expect((await tenant.api.get(`/v1/jobs/${created.body.jobId}`)).body.status).toBe('active');
    // A path no route has is still a 404, not a 403.
    expect((await reader.api.get('/v1/nowhere')).status).toBe(404);
    expect(unexpected).toEqual([]);
  });

  it('lets a key grant at most its own scopes, and shows scopes in every key view', async () => {
    const manager = await keyWith(['keys:manage', 'jobs:read']);
    expect(manager.scopes).toEqual(['jobs:read', 'keys:manage']);

    const wider = await manager.api.post('/v1/api-keys', { name: 'wider', scopes: ['jobs:read', 'jobs:write'] });
    expect(wider.status).toBe(403);
    expect(wider.body).toMatchObject({ type: 'urn:chime:problem:insufficient_scope' });
    expect(wider.body.detail).toContain('jobs:write');
    const all = await manager.api.post('/v1/api-keys', { name: 'all', scopes: [ALL_SCOPES] });
    expect(all.status).toBe(403);
    expect(all.body.detail).toContain('*');

    const narrower = await manager.api.post('/v1/api-keys', { name: 'narrower', scopes: ['jobs:read'] });
    expect(narrower.status).toBe(201);
    expect(narrower.body.scopes).toEqual(['jobs:read']);
    // Without scopes, a key gets its maker's.
    const same = await manager.api.post('/v1/api-keys', { name: 'same' });
    expect(same.body.scopes).toEqual(['jobs:read', 'keys:manage']);

    const listed = (await manager.api.get('/v1/api-keys')).body.apiKeys as { name: string; scopes: string[] }[];
    expect(listed.find((k) => k.name === 'narrower')?.scopes).toEqual(['jobs:read']);
    const me = await manager.api.get('/v1/tenant');
    expect(me.body.apiKey).toEqual({ keyId: manager.keyId, prefix: manager.prefix, scopes: ['jobs:read', 'keys:manage'] });
  });

  it('gives a tenant’s first key, and a key made without scopes, every scope (*)', async () => {
    const me = await tenant.api.get('/v1/tenant');
    expect(me.body.apiKey.scopes).toEqual(['*']);
    const r = await tenant.api.post('/v1/api-keys', { name: 'default' });
    expect(r.body.scopes).toEqual(['*']);
    // A key row as it was before scopes existed reads as '*' (the column's default), and can do everything.
    await app.database.db.execute(sql`update api_keys set scopes = default where id = ${r.body.keyId}`);
    const old = apiClient(TEST_APP_URL, r.body.key, app.fetch);
    expect((await old.get('/v1/api-keys')).status).toBe(200);
  });

  it('refuses an unknown scope or an empty list with a 400 naming the field', async () => {
    const unknown = await tenant.api.post('/v1/api-keys', { name: 'x', scopes: ['jobs:read', 'jobs:delete'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors).toEqual([{ path: 'scopes.1', message: expect.any(String) }]);
    const empty = await tenant.api.post('/v1/api-keys', { name: 'x', scopes: [] });
    expect(empty.status).toBe(400);
    expect(empty.body.errors[0].path).toBe('scopes');
  });
});
