/** Validation of job registration: every bad field named in RFC 9457 problem details, nothing stored. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestTenant } from '../support/api.ts';
import { apiClient, startTestApp, type TestApp } from '../support/app.ts';

const good = () => ({
  schedule: { type: 'delay', delayMs: 60_000 },
  callback: { url: 'http://127.0.0.1:9/hook' },
});

describe('POST /v1/jobs validation', () => {
  let app: TestApp;
  let tenant: TestTenant;
  beforeAll(async () => {
    app = await startTestApp();
    tenant = await app.tenant();
  });
  afterAll(() => app.close());

  const cases: [string, unknown, string[]][] = [
    ['missing schedule and callback', {}, ['schedule', 'callback']],
    ['unknown schedule type', { ...good(), schedule: { type: 'weekly' } }, ['schedule.type']],
    ['once in the past', { ...good(), schedule: { type: 'once', at: '2001-01-01T00:00:00Z' } }, ['schedule.at']],
    ['time without offset', { ...good(), schedule: { type: 'once', at: '2030-01-01 10:00' } }, ['schedule.at']],
    ['negative delay', { ...good(), schedule: { type: 'delay', delayMs: -1 } }, ['schedule.delayMs']],
    ['interval below 1 s', { ...good(), schedule: { type: 'interval', everyMs: 10 } }, ['schedule.everyMs']],
    ['cron that never fires', { ...good(), schedule: { type: 'cron', expression: '0 0 30 2 *' } }, ['schedule.expression']],
    ['cron with seven fields', { ...good(), schedule: { type: 'cron', expression: '0 0 0 * * * *' } }, ['schedule.expression']],
    [
      'unknown time zone',
      { ...good(), schedule: { type: 'cron', expression: '0 0 * * *', timezone: 'Mars/Olympus' } },
      ['schedule.timezone'],
    ],
    [
      'endAt before the first occurrence',
      { ...good(), schedule: { type: 'cron', expression: '0 0 1 1 *', endAt: '2030-01-01T00:00:00Z', startAt: '2030-06-01T00:00:00Z' } },
      ['schedule.endAt'],
    ],
    ['all dates past', { ...good(), schedule: { type: 'dates', dates: ['2001-01-01T00:00:00Z'] } }, ['schedule.dates']],
    ['ftp url', { ...good(), callback: { url: 'ftp://example.com/x' } }, ['callback.url']],
    ['bad method', { ...good(), callback: { url: 'http://127.0.0.1:9/', method: 'TRACE' } }, ['callback.method']],
    [
      'reserved header',
      { ...good(), callback: { url: 'http://127.0.0.1:9/', headers: { 'Webhook-Id': 'x', Host: 'y' } } },
      ['callback.headers.Webhook-Id', 'callback.headers.Host'],
    ],
    ['timeout too long (over 15 min)', { ...good(), callback: { url: 'http://127.0.0.1:9/', timeoutMs: 900_001 } }, ['callback.timeoutMs']],
    [
      'bad success code',
      { ...good(), callback: { url: 'http://127.0.0.1:9/', successStatusCodes: ['6xx', 99] } },
      ['callback.successStatusCodes.0', 'callback.successStatusCodes.1'],
    ],
    ['unknown retry strategy', { ...good(), retry: { strategy: 'random' } }, ['retry.strategy']],
    ['unknown field', { ...good(), shedule: {} }, ['shedule']],
    [
      'too many metadata pairs',
      { ...good(), metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])) },
      ['metadata'],
    ],
  ];

  it.each(cases)('%s → 400 naming %j', async (_name, body, paths) => {
    const r = await tenant.api.post('/v1/jobs', body);
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(r.body).toMatchObject({
      type: 'urn:chime:problem:validation',
      status: 400,
      title: expect.any(String),
      detail: expect.any(String),
    });
    const got = r.body.errors.map((e: { path: string }) => e.path);
    for (const p of paths) expect(got).toContain(p);
    expect((await tenant.api.get('/v1/jobs')).body.jobs).toEqual([]);
  });

  it('answers malformed JSON with 400 problem+json', async () => {
    const r = await tenant.api.request('POST', '/v1/jobs', '{"schedule":', {});
    expect(r.status).toBe(400);
    expect(r.body.type).toBe('urn:chime:problem:malformed_json');
  });

  it('answers a job body over 320 KiB with 413', async () => {
    const r = await tenant.api.post('/v1/jobs', { ...good(), payload: { blob: 'x'.repeat(330 * 1024) } });
    expect(r.status).toBe(413);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
  });

  it('answers unknown routes with 404 and wrong methods with 405, as problems', async () => {
    const nf = await tenant.api.get('/v1/nope');
    expect(nf.status).toBe(404);
    expect(nf.body.type).toBe('urn:chime:problem:not_found');
    const na = await tenant.api.request('PUT', '/v1/jobs');
    expect(na.status).toBe(405);
    expect(na.headers.get('allow')).toContain('POST');
  });

  it('refuses private destinations unless allowed', async () => {
    const guarded = await startTestApp({ allowPrivateDestinations: false });
    try {
      const t = await guarded.tenant();
      for (const url of [
        'http://127.0.0.1/',
        'http://2130706433/',
        'http://[::ffff:127.0.0.1]/',
        'http://169.254.169.254/latest',
        'http://10.1.2.3/',
      ]) {
        const r = await t.api.post('/v1/jobs', { ...good(), callback: { url } });
        expect(r.status, url).toBe(400);
        expect(r.body.errors[0].path).toBe('callback.url');
      }
    } finally {
      await guarded.close();
    }
  });

  it('registers a valid job with defaults filled in and the auth token write-only', async () => {
    const r = await tenant.api.post('/v1/jobs', { ...good(), callback: { url: 'http://127.0.0.1:9/hook', authToken: 'secret' } });
    expect(r.status).toBe(201);
    expect(r.body.callback).toEqual({
      url: 'http://127.0.0.1:9/hook',
      method: 'POST',
      headers: {},
      hasAuthToken: true,
      successStatusCodes: ['2xx'],
      timeoutMs: 10000,
      successBody: null,
      auth: null,
      contentType: null,
      jwtAudience: null,
    });
    expect(r.body).toMatchObject({ onSuccess: null, onFailure: null, body: null, flowControlKey: null });
    expect(JSON.stringify(r.body)).not.toContain('secret');
    expect(r.body.retry).toEqual({
      strategy: 'exponential',
      maxAttempts: 5,
      initialDelayMs: 1000,
      maxDelayMs: 3600000,
      multiplier: 2,
      jitter: true,
    });
    expect(r.body).toMatchObject({ status: 'active', deliveryMode: 'at-least-once', overlapPolicy: 'allow', catchUp: 'one', jitterMs: 0 });
  });

  it('paginates the job list newest first with a cursor', async () => {
    const t = await app.tenant('pager');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await t.api.post('/v1/jobs', good())).body.jobId);
    const p1 = await t.api.get('/v1/jobs?limit=2');
    expect(p1.body.jobs.map((j: { jobId: string }) => j.jobId)).toEqual([ids[4], ids[3]]);
    const p2 = await t.api.get(`/v1/jobs?limit=2&cursor=${p1.body.nextCursor}`);
    expect(p2.body.jobs.map((j: { jobId: string }) => j.jobId)).toEqual([ids[2], ids[1]]);
    const p3 = await t.api.get(`/v1/jobs?limit=2&cursor=${p2.body.nextCursor}`);
    expect(p3.body).toEqual({ jobs: [expect.objectContaining({ jobId: ids[0] })], nextCursor: null });
    expect((await t.api.get('/v1/jobs?limit=101')).status).toBe(400);
    // The status filter: pause one, and each status lists only its own.
    expect((await t.api.request('PATCH', `/v1/jobs/${ids[2]}`, { paused: true })).status).toBe(200);
    const paused = await t.api.get('/v1/jobs?status=paused');
    expect(paused.body.jobs.map((j: { jobId: string }) => j.jobId)).toEqual([ids[2]]);
    expect((await t.api.get('/v1/jobs?status=active')).body.jobs).toHaveLength(4);
    expect((await t.api.get('/v1/jobs?status=sleeping')).status).toBe(400);
  });

  it('batch: answers each job in order and commits the valid ones', async () => {
    const t = await app.tenant('batch');
    const r = await t.api.post('/v1/jobs/batch', {
      jobs: [good(), { ...good(), schedule: { type: 'once', at: '2001-01-01T00:00:00Z' } }, { ...good(), key: 'k1' }],
    });
    expect(r.status).toBe(200);
    expect(r.body.results.map((x: { status: number }) => x.status)).toEqual([201, 400, 201]);
    expect(r.body.results[1].problem.errors[0].path).toBe('schedule.at');
    expect((await t.api.get('/v1/jobs')).body.jobs).toHaveLength(2);
  });

  it('Idempotency-Key: same body → the first job with 200, another body → 409, concurrent repeats make one job', async () => {
    const t = await app.tenant('idem');
    const h = { 'idempotency-key': 'abc-1' };
    const first = await t.api.post('/v1/jobs', good(), h);
    expect(first.status).toBe(201);
    const again = await t.api.post('/v1/jobs', good(), h);
    expect(again.status).toBe(200);
    expect(again.body.jobId).toBe(first.body.jobId);
    const other = await t.api.post('/v1/jobs', { ...good(), name: 'different' }, h);
    expect(other.status).toBe(409);
    const racing = await Promise.all([1, 2, 3].map(() => t.api.post('/v1/jobs', good(), { 'idempotency-key': 'abc-2' })));
    expect(racing.map((r) => r.status).sort()).toEqual([200, 200, 201]);
    expect(new Set(racing.map((r) => r.body.jobId)).size).toBe(1);
    expect((await t.api.get('/v1/jobs')).body.jobs).toHaveLength(2);
  });

  it('needs the admin token to create tenants', async () => {
    const anon = apiClient('http://chime.test', null, app.fetch);
    expect((await anon.post('/v1/tenants', { name: 'x' })).status).toBe(401);
    const wrong = apiClient('http://chime.test', 'not-the-admin-token-xxxxxxxx', app.fetch);
    expect((await wrong.post('/v1/tenants', { name: 'x' })).status).toBe(401);
  });
});

describe('pauseAfterFailures on every job route', () => {
  let app: TestApp;
  let tenant: TestTenant;
  beforeAll(async () => {
    app = await startTestApp();
    tenant = await app.tenant('auto-pause');
  });
  afterAll(() => app.close());

  const field = (r: { body: { errors?: { path: string }[] } }) => r.body.errors?.map((e) => e.path);

  it('is set by POST /v1/jobs, PUT /v1/jobs/by-key/:key, POST /v1/jobs/batch and PATCH; 0 when absent', async () => {
    const created = await tenant.api.post('/v1/jobs', { ...good(), pauseAfterFailures: 5 });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ pauseAfterFailures: 5, consecutiveFailures: 0, pausedReason: null });
    expect((await tenant.api.get(`/v1/jobs/${created.body.jobId}`)).body.pauseAfterFailures).toBe(5);
    expect((await tenant.api.post('/v1/jobs', good())).body.pauseAfterFailures).toBe(0);

    const put = await tenant.api.request('PUT', '/v1/jobs/by-key/nightly', { ...good(), pauseAfterFailures: 1000 });
    expect(put.status).toBe(201);
    expect(put.body.pauseAfterFailures).toBe(1000);
    const replaced = await tenant.api.request('PUT', '/v1/jobs/by-key/nightly', { ...good(), pauseAfterFailures: 2 });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ jobId: put.body.jobId, pauseAfterFailures: 2 });
    // A PUT replaces the whole job: a field left out takes its default.
    expect((await tenant.api.request('PUT', '/v1/jobs/by-key/nightly', good())).body.pauseAfterFailures).toBe(0);

    const batch = await tenant.api.post('/v1/jobs/batch', { jobs: [{ ...good(), pauseAfterFailures: 3 }, good()] });
    expect(batch.status).toBe(200);
    expect(
      batch.body.results.map((x: { status: number; job: { pauseAfterFailures: number } }) => [x.status, x.job.pauseAfterFailures]),
    ).toEqual([
      [201, 3],
      [201, 0],
    ]);

    const patched = await tenant.api.request('PATCH', `/v1/jobs/${created.body.jobId}`, { pauseAfterFailures: 7 });
    expect(patched.status).toBe(200);
    expect(patched.body.pauseAfterFailures).toBe(7);
    // Other changes leave it alone; 0 turns it off.
    expect((await tenant.api.request('PATCH', `/v1/jobs/${created.body.jobId}`, { name: 'renamed' })).body.pauseAfterFailures).toBe(7);
    expect((await tenant.api.request('PATCH', `/v1/jobs/${created.body.jobId}`, { pauseAfterFailures: 0 })).body.pauseAfterFailures).toBe(
      0,
    );
  });

  const outOfRange: [string, unknown][] = [
    ['-1', -1],
    ['1001 (past 0..1000)', 1001],
    ['1.5', 1.5],
    ['a string', '3'],
    ['null', null],
    ['2^31', 2 ** 31],
  ];
  it.each(outOfRange)('%s → 400 naming pauseAfterFailures on each route, nothing changed', async (_what, value) => {
    const t = await app.tenant('range');
    const post = await t.api.post('/v1/jobs', { ...good(), pauseAfterFailures: value });
    expect(post.status).toBe(400);
    expect(post.headers.get('content-type')).toBe('application/problem+json');
    expect(field(post)).toEqual(['pauseAfterFailures']);
    const put = await t.api.request('PUT', '/v1/jobs/by-key/ranged', { ...good(), pauseAfterFailures: value });
    expect(put.status).toBe(400);
    expect(field(put)).toEqual(['pauseAfterFailures']);
    const batch = await t.api.post('/v1/jobs/batch', { jobs: [good(), { ...good(), pauseAfterFailures: value }] });
    expect(batch.body.results.map((x: { status: number }) => x.status)).toEqual([201, 400]);
    expect(batch.body.results[1].problem.errors.map((e: { path: string }) => e.path)).toEqual(['pauseAfterFailures']);
    const jobId = batch.body.results[0].job.jobId;
    const patch = await t.api.request('PATCH', `/v1/jobs/${jobId}`, { pauseAfterFailures: value });
    expect(patch.status).toBe(400);
    expect(field(patch)).toEqual(['pauseAfterFailures']);
    const jobs = (await t.api.get('/v1/jobs')).body.jobs;
    expect(jobs.map((j: { jobId: string; pauseAfterFailures: number }) => [j.jobId, j.pauseAfterFailures])).toEqual([[jobId, 0]]);
  });

  it('the compatibility routes leave it at 0 and do not take it', async () => {
    const compat = await tenant.api.post('/jobs', { name: 'legacy', cronExpr: '0 3 * * *', handlerUrl: 'http://127.0.0.1:9/hook' });
    expect(compat.status).toBe(201);
    expect((await tenant.api.get(`/v1/jobs/${compat.body.jobId}`)).body).toMatchObject({ pauseAfterFailures: 0, consecutiveFailures: 0 });
    const withField = await tenant.api.post('/jobs', {
      name: 'legacy',
      cronExpr: '0 3 * * *',
      handlerUrl: 'http://127.0.0.1:9/hook',
      pauseAfterFailures: 3,
    });
    expect(withField.status).toBe(400);
    expect(field(withField)).toEqual(['pauseAfterFailures']);
    const patch = await tenant.api.request('PATCH', `/jobs/${compat.body.jobId}`, { paused: true, pauseAfterFailures: 3 });
    expect(patch.status).toBe(400);
    expect(field(patch)).toEqual(['pauseAfterFailures']);
    expect((await tenant.api.get(`/v1/jobs/${compat.body.jobId}`)).body).toMatchObject({ status: 'active', pauseAfterFailures: 0 });
  });
});

describe('host names of callback URLs (private destinations refused)', () => {
  let app: TestApp;
  const lookups: string[] = [];
  beforeAll(async () => {
    app = await startTestApp(
      { allowPrivateDestinations: false },
      {
        resolveHost: async (host) => {
          lookups.push(host);
          return host === 'internal.example' ? { ok: false, reason: 'resolves to a private address (10.0.0.1)' } : { ok: true };
        },
      },
    );
  });
  afterAll(() => app.close());

  it('a batch looks each host up once and still answers each job on its own', async () => {
    const t = await app.tenant('hosts');
    const job = (host: string) => ({ schedule: { type: 'delay', delayMs: 60_000 }, callback: { url: `https://${host}/hook` } });
    const hosts = ['a.example', 'internal.example', 'a.example', 'b.example', 'internal.example', 'a.example'];
    lookups.length = 0;
    const r = await t.api.post('/v1/jobs/batch', { jobs: hosts.map(job) });
    expect(r.status).toBe(200);
    expect(r.body.results.map((x: { status: number }) => x.status)).toEqual([201, 400, 201, 201, 400, 201]);
    expect(r.body.results[1].problem.errors).toEqual([{ path: 'callback.url', message: 'resolves to a private address (10.0.0.1)' }]);
    expect(lookups.sort()).toEqual(['a.example', 'b.example', 'internal.example']);
    // A later request looks again: the check is of the host's addresses at registration.
    expect((await t.api.post('/v1/jobs', job('a.example'))).status).toBe(201);
    expect(lookups.filter((h) => h === 'a.example')).toHaveLength(2);
  });
});

describe('every bad field named at once: a schema error and a rule error in one request (issue #28)', () => {
  let app: TestApp;
  let tenant: TestTenant;
  let jobId: string;
  let getJobId: string;
  beforeAll(async () => {
    app = await startTestApp();
    tenant = await app.tenant('every-field');
    jobId = (await tenant.api.post('/v1/jobs', good())).body.jobId;
    getJobId = (await tenant.api.post('/v1/jobs', { ...good(), callback: { url: 'http://127.0.0.1:9/hook', method: 'GET' } })).body.jobId;
  });
  afterAll(() => app.close());

  const PAST_ONCE = { type: 'once', at: '2001-01-01T00:00:00Z' };
  const NEVER_CRON = { type: 'cron', expression: '0 0 30 2 *' };
  const paths = (r: { body: { errors?: { path: string }[] } }) => r.body.errors?.map((e) => e.path).sort();

  const patches: [string, unknown, string[]][] = [
    ['jitterMs out of range and a schedule in the past', { jitterMs: -1, schedule: PAST_ONCE }, ['jitterMs', 'schedule.at']],
    ['an empty name and a cron expression that never fires', { name: '', schedule: NEVER_CRON }, ['name', 'schedule.expression']],
    ['a bad method and an ftp URL', { callback: { method: 'TRACE', url: 'ftp://example.com/x' } }, ['callback.method', 'callback.url']],
    [
      'a bad timeout and a reserved header',
      { callback: { timeoutMs: 1, headers: { Host: 'x' } } },
      ['callback.headers.Host', 'callback.timeoutMs'],
    ],
    [
      'a bad retry strategy, a metadata value and a refused URL',
      { retry: { strategy: 'random' }, metadata: { a: 1 }, callback: { url: 'ftp://x' } },
      ['callback.url', 'metadata.a', 'retry.strategy'],
    ],
  ];
  it.each(patches)('PATCH /v1/jobs/:jobId with %s → 400 naming both, nothing changed', async (_what, body, expected) => {
    const before = (await tenant.api.get(`/v1/jobs/${jobId}`)).body;
    const r = await tenant.api.request('PATCH', `/v1/jobs/${jobId}`, body);
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(paths(r)).toEqual(expected);
    expect((await tenant.api.get(`/v1/jobs/${jobId}`)).body).toEqual(before);
  });

  it("PATCH: a payload for the job's GET callback is named with the schema's errors", async () => {
    const r = await tenant.api.request('PATCH', `/v1/jobs/${getJobId}`, { callback: { timeoutMs: 1 }, payload: { a: 1 } });
    expect(r.status).toBe(400);
    expect(paths(r)).toEqual(['callback.timeoutMs', 'payload']);
  });

  it("PATCH callback: the fields given replace the job's, the others are kept (no defaults filled in)", async () => {
    const made = await tenant.api.post('/v1/jobs', {
      ...good(),
      callback: { url: 'http://127.0.0.1:9/get', method: 'GET', headers: { 'X-Team': 'ops' }, successStatusCodes: [204] },
    });
    const r = await tenant.api.request('PATCH', `/v1/jobs/${made.body.jobId}`, { callback: { timeoutMs: 2000 } });
    expect(r.status).toBe(200);
    expect(r.body.callback).toEqual({
      url: 'http://127.0.0.1:9/get',
      method: 'GET',
      headers: { 'X-Team': 'ops' },
      hasAuthToken: false,
      successStatusCodes: [204],
      timeoutMs: 2000,
      successBody: null,
      auth: null,
      contentType: null,
      jwtAudience: null,
    });
    await tenant.api.request('DELETE', `/v1/jobs/${made.body.jobId}`);
  });

  it('PATCH of no job with two bad fields: still a 400 naming both', async () => {
    const r = await tenant.api.request('PATCH', '/v1/jobs/00000000-0000-7000-8000-000000000000', { jitterMs: -1, schedule: PAST_ONCE });
    expect(r.status).toBe(400);
    expect(paths(r)).toEqual(['jitterMs', 'schedule.at']);
  });

  it('POST /v1/jobs, PUT by key and a job of a batch: a field out of range and a schedule in the past, both named', async () => {
    const body = { ...good(), schedule: PAST_ONCE, jitterMs: -1 };
    expect(paths(await tenant.api.post('/v1/jobs', body))).toEqual(['jitterMs', 'schedule.at']);
    expect(paths(await tenant.api.request('PUT', '/v1/jobs/by-key/both', body))).toEqual(['jitterMs', 'schedule.at']);
    const batch = await tenant.api.post('/v1/jobs/batch', { jobs: [body] });
    expect(batch.body.results[0].problem.errors.map((e: { path: string }) => e.path).sort()).toEqual(['jitterMs', 'schedule.at']);
  });

  it('POST /v1/jobs: a bad Idempotency-Key header and bad body fields, all named', async () => {
    const r = await tenant.api.post('/v1/jobs', { ...good(), schedule: NEVER_CRON, jitterMs: -1 }, { 'idempotency-key': 'k'.repeat(300) });
    expect(r.status).toBe(400);
    expect(paths(r)).toEqual(['idempotency-key', 'jitterMs', 'schedule.expression']);
  });

  it("PUT /v1/jobs/by-key/:key: a bad path key and bad body fields; a body key not the path's and a past schedule", async () => {
    const badKey = await tenant.api.request('PUT', `/v1/jobs/by-key/${'k'.repeat(201)}`, { ...good(), jitterMs: -1 });
    expect(badKey.status).toBe(400);
    expect(paths(badKey)).toEqual(['jitterMs', 'key']);
    const mismatch = await tenant.api.request('PUT', '/v1/jobs/by-key/mine', { ...good(), key: 'other', schedule: PAST_ONCE });
    expect(paths(mismatch)).toEqual(['key', 'schedule.at']);
    const mismatchAndSchema = await tenant.api.request('PUT', '/v1/jobs/by-key/mine', {
      ...good(),
      key: 'other',
      schedule: PAST_ONCE,
      jitterMs: -1,
    });
    expect(paths(mismatchAndSchema)).toEqual(['jitterMs', 'key', 'schedule.at']);
  });

  it('POST /v1/schedules/preview: a bad count and a schedule that never fires, both named', async () => {
    const r = await tenant.api.post('/v1/schedules/preview', { schedule: NEVER_CRON, count: 0 });
    expect(r.status).toBe(400);
    expect(paths(r)).toEqual(['count', 'schedule.expression']);
  });

  it('POST /jobs (compatibility): a bad timeout and a cron expression that never fires, both named as sent', async () => {
    const r = await tenant.api.post('/jobs', { name: 'c', cronExpr: '0 0 30 2 *', handlerUrl: 'ftp://x', timeout: 1 });
    expect(r.status).toBe(400);
    expect(paths(r)).toEqual(['cronExpr', 'handlerUrl', 'timeout']);
  });

  it('none of these made a job', async () => {
    const active = await tenant.api.get('/v1/jobs?status=active');
    expect(active.body.jobs.map((j: { jobId: string }) => j.jobId).sort()).toEqual([jobId, getJobId].sort());
  });
});
