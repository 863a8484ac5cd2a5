/**
 * What the running service says about its requests (issue #32, points 3 and 4): one access-log line per request at
 * `info` (method, route pattern, status, duration, tenant, key id, request id; never the key or a body), probes and
 * scrapes at `debug` only, and in `/metrics` the build (`chime_build_info{version,commit}`) and the requests by route
 * pattern with their latency. The real process on the embedded database.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pkg from '../../package.json' with { type: 'json' };
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';

const METRICS_TOKEN = 'metrics-token-0123456789';

/** The service's JSON log lines whose message is `msg`. */
function logLines(output: string, msg: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.msg === msg);
}

describe('access log and build info', () => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let tenant: TestTenant;

  beforeAll(async () => {
    db = await freshDatabase({ kind: 'pglite' });
    chime = await startChime({ ...db.env, CHIME_METRICS_TOKEN: METRICS_TOKEN, CHIME_COMMIT: '' });
    tenant = await createTestTenant(chime.url, 'access-log');
  });
  afterAll(async () => {
    await chime?.stop();
    await db?.drop();
  });

  it('logs one line per request with the route pattern and ids, never the key; probes only at debug', async () => {
    const created = await tenant.api.post(
      '/v1/jobs',
      { schedule: { type: 'delay', delayMs: 3_600_000 }, callback: { url: 'http://127.0.0.1:9/hook' }, payload: { secret: 'body-value' } },
      { 'x-request-id': 'create-1' },
    );
    expect(created.status).toBe(201);
    const missing = await tenant.api.request('GET', '/v1/jobs/00000000-0000-4000-8000-000000000000', undefined, {
      'x-request-id': 'get-404',
    });
    expect(missing.status).toBe(404);
    expect(missing.body.requestId).toBe('get-404');
    await fetch(`${chime.url}/readyz`, { headers: { 'x-request-id': 'probe-1' } });

    const lines = await eventually(
      () => {
        const found = logLines(chime.output(), 'request');
        return found.some((l) => l.requestId === 'get-404') ? found : undefined;
      },
      { what: 'the access-log lines' },
    );
    const create = lines.filter((l) => l.requestId === 'create-1');
    expect(create).toHaveLength(1);
    expect(create[0]).toMatchObject({
      level: 30,
      method: 'POST',
      route: '/v1/jobs',
      status: 201,
      tenantId: tenant.tenantId,
      keyId: expect.any(String),
      durationMs: expect.any(Number),
    });
    expect(lines.find((l) => l.requestId === 'get-404')).toMatchObject({ route: '/v1/jobs/:jobId', status: 404 });
    // The readiness probe is logged at debug, which the default level (info) does not write.
    expect(lines.some((l) => l.requestId === 'probe-1')).toBe(false);
    expect(chime.output()).not.toContain(tenant.apiKey);
    expect(chime.output()).not.toContain('body-value');
  });

  it('/metrics has the build and the requests by route pattern, with their latency', async () => {
    const r = await fetch(`${chime.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(r.status).toBe(200);
    const text = await r.text();
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    expect(text).toContain(`chime_build_info{version="${pkg.version}",commit="${commit}"} 1`);
    expect(text).toMatch(/^chime_http_requests_total\{method="POST",route="\/v1\/jobs",status="201"\} [1-9]\d*$/m);
    expect(text).toMatch(/^chime_http_requests_total\{method="GET",route="\/v1\/jobs\/:jobId",status="404"\} 1$/m);
    expect(text).toMatch(/^chime_http_request_duration_seconds_count\{method="POST",route="\/v1\/jobs"\} [1-9]\d*$/m);
    // A path no route matches is counted under one label, so a scanner cannot grow the label set.
    await fetch(`${chime.url}/wp-admin/${Math.random()}`);
    const after = await (await fetch(`${chime.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    expect(after).toMatch(/^chime_http_requests_total\{method="GET",route="unmatched",status="404"\} [1-9]\d*$/m);
    expect(after).not.toContain('wp-admin');
  });
});
