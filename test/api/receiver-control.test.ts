/**
 * The API side of receiver control and result routing (API.md "Receiver control and result routing"): `onSuccess`,
 * `onFailure` and `callback.successBody` are stored, shown, changed and removed by PATCH; their URLs pass the same
 * destination checks as callback URLs (also on PATCH); a malformed JSON Pointer is refused; `timeoutMs` takes 15 min.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestTenant } from '../support/api.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

describe('onSuccess, onFailure and successBody on the job routes', () => {
  let app: TestApp;
  let t: TestTenant;
  beforeAll(async () => {
    app = await startTestApp(
      { allowPrivateDestinations: false },
      {
        resolveHost: async (host) =>
          host === 'internal.example' ? { ok: false, reason: 'resolves to a private address (10.0.0.1)' } : { ok: true },
      },
    );
    t = await app.tenant('routes');
  });
  afterAll(() => app.close());

  const body = (extra: Record<string, unknown> = {}, callback: Record<string, unknown> = {}) => ({
    schedule: { type: 'delay', delayMs: 60_000 },
    callback: { url: 'https://hooks.example/cb', ...callback },
    ...extra,
  });
  const paths = (r: { body: { errors?: { path: string }[] } }) => (r.body.errors ?? []).map((e) => e.path).sort();

  it('stores and shows them; PATCH changes and removes them', async () => {
    const made = await t.api.post(
      '/v1/jobs',
      body(
        { onSuccess: { url: 'https://results.example/ok' } },
        { successBody: { jsonPointer: '/a~1b', equals: { n: 1 } }, timeoutMs: 900_000 },
      ),
    );
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body).toMatchObject({
      onSuccess: { url: 'https://results.example/ok' },
      onFailure: null,
      callback: { successBody: { jsonPointer: '/a~1b', equals: { n: 1 } }, timeoutMs: 900_000 },
    });
    const id = made.body.jobId;
    const patched = await t.api.request('PATCH', `/v1/jobs/${id}`, {
      onSuccess: null,
      onFailure: { url: 'https://results.example/failed' },
      callback: { successBody: null },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({
      onSuccess: null,
      onFailure: { url: 'https://results.example/failed' },
      callback: { successBody: null },
    });
    expect((await t.api.get(`/v1/jobs/${id}`)).body).toMatchObject({
      onSuccess: null,
      onFailure: { url: 'https://results.example/failed' },
    });
    // A PATCH that leaves them out keeps them.
    expect((await t.api.request('PATCH', `/v1/jobs/${id}`, { name: 'renamed' })).body.onFailure).toEqual({
      url: 'https://results.example/failed',
    });
  });

  it('refuses result URLs the destination guard refuses, on create and on PATCH, each named', async () => {
    const r = await t.api.post(
      '/v1/jobs',
      body({ onSuccess: { url: 'https://internal.example/x' }, onFailure: { url: 'http://169.254.169.254/latest' } }),
    );
    expect(r.status).toBe(400);
    expect(paths(r)).toEqual(['onFailure.url', 'onSuccess.url']);
    const made = await t.api.post('/v1/jobs', body());
    const p = await t.api.request('PATCH', `/v1/jobs/${made.body.jobId}`, { onFailure: { url: 'https://internal.example/x' } });
    expect(p.status).toBe(400);
    expect(paths(p)).toEqual(['onFailure.url']);
  });

  it('refuses a malformed successBody and an unknown field of it', async () => {
    for (const successBody of [
      { jsonPointer: 'status', equals: 1 },
      { jsonPointer: '/a~2', equals: 1 },
      { contains: '' },
      { contains: 'x', extra: 1 },
      { jsonPointer: '/a' },
    ]) {
      const r = await t.api.post('/v1/jobs', body({}, { successBody }));
      expect(r.status, JSON.stringify(successBody)).toBe(400);
      expect(paths(r)[0], JSON.stringify(successBody)).toMatch(/^callback\.successBody/);
    }
  });
});
