/** The OpenAPI document covers every route of the app, and /docs serves the interactive reference. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';

// Routes that are operational or documentation, not part of the OpenAPI surface.
const UNDOCUMENTED = new Set([
  '/healthz',
  '/readyz',
  '/metrics',
  '/.well-known/jwks.json',
  '/openapi.json',
  '/docs',
  '/console',
  '/console/*',
]);

describe('OpenAPI', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('documents every /v1 route with its method', async () => {
    const doc = (await (await app.fetch('http://chime.test/openapi.json')).json()) as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.openapi).toBe('3.1.0');
    const documented = new Set<string>();
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(ops)) documented.add(`${method.toUpperCase()} ${path}`);
    }
    const expected = [
      'POST /v1/tenants',
      'GET /v1/admin/tenants',
      'PATCH /v1/admin/tenants/{tenantId}',
      'DELETE /v1/admin/tenants/{tenantId}',
      'GET /v1/tenant',
      'POST /v1/api-keys',
      'GET /v1/api-keys',
      'DELETE /v1/api-keys/{keyId}',
      'POST /v1/signing-secrets/rotate',
      'POST /v1/jobs',
      'GET /v1/jobs',
      'GET /v1/jobs/{jobId}',
      'PATCH /v1/jobs/{jobId}',
      'DELETE /v1/jobs/{jobId}',
      'POST /v1/jobs/{jobId}/trigger',
      'GET /v1/jobs/{jobId}/runs',
      'PUT /v1/jobs/by-key/{key}',
      'POST /v1/jobs/batch',
      'POST /v1/schedules/preview',
      'GET /v1/runs/{runId}',
      'POST /v1/runs/{runId}/replay',
      'GET /v1/dead-letters',
      'POST /jobs',
      'GET /jobs/{jobId}/runs',
      'POST /jobs/{jobId}/trigger',
      'PATCH /jobs/{jobId}',
    ];
    for (const e of expected) expect(documented, e).toContain(e);
    // And nothing routed is missing from the document.
    const routed = app.routes
      .filter((r) => r.method !== 'ALL' && !UNDOCUMENTED.has(r.path))
      .map((r) => `${r.method} ${r.path.replace(/:([^/]+)/g, '{$1}')}`);
    expect(routed.length).toBeGreaterThanOrEqual(expected.length);
    for (const r of routed) expect(documented, r).toContain(r);
    expect(doc.components.schemas).toHaveProperty('Job');
    expect(doc.components.schemas).toHaveProperty('Problem');
  });

  it('serves the interactive reference at /docs', async () => {
    const r = await app.fetch('http://chime.test/docs');
    expect(r.status).toBe(200);
    // Swagger UI from this origin, started on this origin's document by a script of its own (no inline script).
    const scripts = [...(await r.text()).matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]!);
    expect(scripts.some((s) => /\/console\/assets\/swagger-ui-\w+\.js$/.test(s))).toBe(true);
    const init = await Promise.all(scripts.map(async (s) => (await app.fetch(`http://chime.test${s}`)).text()));
    expect(init.some((text) => text.includes('"/openapi.json"') || text.includes("'/openapi.json'"))).toBe(true);
  });
});
