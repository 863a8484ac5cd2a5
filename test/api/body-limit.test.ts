/**
 * Body limits and the body check over real HTTP through @hono/node-server, the adapter `chime serve` uses: a body
 * of declared length is judged by its Content-Length, one sent chunked (no declared length) by counting it as it is
 * read. Both must refuse an oversized body with 413 and store nothing.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type TestTenant } from '../support/api.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

type Sent = { status: number; body: any };

/** Sends `body` with Transfer-Encoding: chunked (no Content-Length), in pieces of `chunk` bytes. */
function postChunked(baseUrl: string, path: string, apiKey: string, body: string, chunk = 16 * 1024): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}`, 'transfer-encoding': 'chunked' },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : null }));
    });
    // The server may answer 413 and close before the whole body is written.
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)));
    for (let i = 0; i < body.length; i += chunk) req.write(body.slice(i, i + chunk));
    req.end();
  });
}

const job = (payload: unknown = { n: 1 }) => ({
  schedule: { type: 'once', at: new Date(Date.now() + 3_600_000).toISOString() },
  callback: { url: 'https://example.com/hook' },
  payload,
});

describe('request body limits over HTTP (@hono/node-server)', () => {
  let app: TestApp;
  let tenant: TestTenant;
  let baseUrl: string;
  const jobCount = async () => (await tenant.api.get('/v1/jobs?limit=100')).body.jobs.length as number;

  beforeAll(async () => {
    app = await startTestApp();
    baseUrl = await app.listen();
    const t = await app.tenant();
    tenant = { ...t, api: apiClient(baseUrl, t.apiKey) };
  });
  afterAll(() => app.close());

  it('takes a body of declared length within the limit, and one sent chunked', async () => {
    const declared = await tenant.api.post('/v1/jobs', job());
    expect(declared.status).toBe(201);
    const chunked = await postChunked(baseUrl, '/v1/jobs', tenant.apiKey, JSON.stringify(job({ blob: 'y'.repeat(40 * 1024) })));
    expect(chunked.status).toBe(201);
    expect(chunked.body.payload.blob).toHaveLength(40 * 1024);
  });

  it('refuses a job body over 320 KiB with 413, whether its length is declared or not, and stores nothing', async () => {
    const before = await jobCount();
    // 320 KiB for the job routes (a 256 KiB `body` and the rest of the job: API.md "Destination control").
    expect((await tenant.api.post('/v1/jobs', job({ blob: 'w'.repeat(300 * 1024) }))).status).toBe(201);
    const big = job({ blob: 'x'.repeat(330 * 1024) });
    const declared = await tenant.api.post('/v1/jobs', big);
    expect(declared.status).toBe(413);
    expect(declared.headers.get('content-type')).toBe('application/problem+json');
    expect(declared.body.detail).toContain('327680 bytes');
    const chunked = await postChunked(baseUrl, '/v1/jobs', tenant.apiKey, JSON.stringify(big));
    expect(chunked.status).toBe(413);
    expect(chunked.body.type).toBe('urn:chime:problem:payload_too_large');
    expect(await jobCount()).toBe(before + 1);
  });

  it('keeps 64 KiB for the routes that are not job routes', async () => {
    const preview = { schedule: { type: 'delay', delayMs: 0 }, pad: 'x'.repeat(70 * 1024) };
    const declared = await tenant.api.post('/v1/schedules/preview', preview);
    expect(declared.status).toBe(413);
    expect(declared.body.detail).toContain('65536 bytes');
    expect((await postChunked(baseUrl, '/v1/schedules/preview', tenant.apiKey, JSON.stringify(preview))).status).toBe(413);
  });

  it('lets the batch route take up to 1 MiB, declared or chunked, and no more', async () => {
    // ~200 KiB: over the 64 KiB of most routes, within the batch route's limit.
    const jobs = Array.from({ length: 20 }, (_, i) => job({ i, blob: 'z'.repeat(10 * 1024) }));
    const declared = await tenant.api.post('/v1/jobs/batch', { jobs });
    expect(declared.status).toBe(200);
    expect(declared.body.results.map((r: { status: number }) => r.status)).toEqual(jobs.map(() => 201));
    const chunked = await postChunked(baseUrl, '/v1/jobs/batch', tenant.apiKey, JSON.stringify({ jobs }));
    expect(chunked.status).toBe(200);

    const before = await jobCount();
    const tooBig = { jobs: Array.from({ length: 110 }, (_, i) => job({ i, blob: 'z'.repeat(10 * 1024) })) };
    const over = await tenant.api.post('/v1/jobs/batch', tooBig);
    expect(over.status).toBe(413);
    expect(over.body.detail).toContain('1048576 bytes');
    expect((await postChunked(baseUrl, '/v1/jobs/batch', tenant.apiKey, JSON.stringify(tooBig))).status).toBe(413);
    expect(await jobCount()).toBe(before);
  });

  it('still checks what PostgreSQL cannot store in a body read straight off the socket', async () => {
    const r = await tenant.api.post('/v1/jobs', job({ bad: 'a\u0000b' }));
    expect(r.status).toBe(400);
    expect(r.body.errors).toEqual([{ path: 'payload.bad', message: 'cannot contain the character U+0000' }]);
  });
});
