/**
 * Instants PostgreSQL cannot store (issue #28, point 2): every field that takes an instant, in a body or a query
 * string, refuses one outside years 0001..9999 once its offset is applied with `400` problem+json naming the field,
 * changes nothing and never answers 5xx (each was a 500 before); the edges themselves are taken. A schedule's
 * occurrences end at LATEST_OCCURRENCE_MS (a day before the end of 9999, room for the largest jitter), so neither a
 * registration nor a claim writes a run PostgreSQL cannot store. In process, on each database target.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.ts';
import { LATEST_OCCURRENCE_MS, MAX_INSTANT_MS, MIN_INSTANT_MS } from '../../src/domain/schedule.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import type { Api, TestTenant } from '../support/api.ts';
import { startTestApp, type TestApp, tenantSnapshot } from '../support/app.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';

/** Past the end of 9999 or before year 1 once the offset is applied; each is well-formed RFC 3339. */
const UNSTORABLE = [
  '0000-01-01T00:00:00Z',
  '0000-12-31T23:59:59.999Z',
  '0001-01-01T00:00:00+01:00',
  '0001-01-01T23:58:59.999+23:59',
  '9999-12-31T23:59:59-23:59',
  '9999-12-31T23:00:00-01:00',
  '9999-12-31T23:59:59.999-00:01',
];
/** The first and last instants taken, written with and without offsets. */
const EARLIEST = ['0001-01-01T00:00:00Z', '0001-01-01T23:59:00+23:59', '0001-01-01T00:00:00-23:59'];
const LATEST = ['9999-12-31T23:59:59.999Z', '9999-12-31T00:00:59.999-23:59', '9999-12-31T23:59:59+23:59'];
const RANGE_MESSAGE = `must be within ${new Date(MIN_INSTANT_MS).toISOString()}..${new Date(MAX_INSTANT_MS).toISOString()}`;

const URL_OK = 'http://127.0.0.1:9/hook';
const job = (schedule: unknown, more: object = {}) => ({ schedule, callback: { url: URL_OK }, ...more });

/** Every schedule field that takes an instant: the schedule with `t` there, and the field's path in the schedule. */
const SCHEDULE_FIELDS: [path: string, schedule: (t: string) => unknown][] = [
  ['at', (t) => ({ type: 'once', at: t })],
  ['startAt', (t) => ({ type: 'interval', everyMs: 60_000, startAt: t })],
  ['endAt', (t) => ({ type: 'interval', everyMs: 60_000, endAt: t })],
  ['dates.1', (t) => ({ type: 'dates', dates: ['2031-01-01T00:00:00Z', t] })],
  ['startAt', (t) => ({ type: 'cron', expression: '0 0 * * *', startAt: t })],
  ['endAt', (t) => ({ type: 'cron', expression: '0 0 * * *', endAt: t })],
];

describe.each(DATABASE_TARGETS)('instants PostgreSQL cannot store ($kind)', (target) => {
  let app: TestApp;
  let tenant: TestTenant;
  let jobId: string;
  const unexpected: unknown[] = [];

  beforeAll(async () => {
    app = await startTestApp({}, { target, onUnexpectedError: (err) => unexpected.push(err) });
    tenant = await app.tenant('instants');
    const created = await tenant.api.post('/v1/jobs', job({ type: 'delay', delayMs: 3_600_000 }));
    expect(created.status).toBe(201);
    jobId = created.body.jobId;
  });
  afterAll(() => app?.close());

  /** Sends the request and expects a 400 validation problem naming exactly `paths`, with nothing stored. */
  async function refused(api: Api, method: string, path: string, body: unknown, paths: string[]) {
    const before = await tenantSnapshot(app.database, tenant.tenantId);
    const r = await api.request(method, path, body);
    const what = `${method} ${path} ${JSON.stringify(body)} → ${r.status} ${JSON.stringify(r.body)}; unexpected: ${unexpected.map(String).join(' | ')}`;
    expect(r.status, what).toBe(400);
    expect(r.headers.get('content-type'), what).toBe('application/problem+json');
    expect(r.body, what).toMatchObject({ type: 'urn:chime:problem:validation', status: 400 });
    expect(
      r.body.errors.map((e: { path: string }) => e.path),
      what,
    ).toEqual(paths);
    expect(await tenantSnapshot(app.database, tenant.tenantId), what).toBe(before);
    return r.body.errors as { path: string; message: string }[];
  }

  it.each(UNSTORABLE)('GET /v1/runs?since=%s and ?until= → 400 naming the parameter, with the allowed range', async (t) => {
    for (const param of ['since', 'until']) {
      const [error] = await refused(tenant.api, 'GET', `/v1/runs?${param}=${encodeURIComponent(t)}`, undefined, [param]);
      expect(error!.message).toContain(RANGE_MESSAGE);
    }
  });

  it.each(UNSTORABLE)('POST /v1/dead-letters/replay with since or until %s → 400 naming it', async (t) => {
    await refused(tenant.api, 'POST', '/v1/dead-letters/replay', { since: t }, ['since']);
    await refused(tenant.api, 'POST', '/v1/dead-letters/replay', { until: t }, ['until']);
    await refused(tenant.api, 'POST', '/v1/dead-letters/replay', { since: t, until: t }, ['since', 'until']);
  });

  it.each(UNSTORABLE)('every schedule field, on every route that takes a schedule, refuses %s by name', async (t) => {
    for (const [field, schedule] of SCHEDULE_FIELDS) {
      const path = `schedule.${field}`;
      const [error] = await refused(tenant.api, 'POST', '/v1/jobs', job(schedule(t)), [path]);
      expect(error!.message).toContain(RANGE_MESSAGE);
      await refused(tenant.api, 'PUT', '/v1/jobs/by-key/edge', job(schedule(t)), [path]);
      await refused(tenant.api, 'PATCH', `/v1/jobs/${jobId}`, { schedule: schedule(t) }, [path]);
      await refused(tenant.api, 'POST', '/v1/schedules/preview', { schedule: schedule(t) }, [path]);
      const batch = await tenant.api.post('/v1/jobs/batch', { jobs: [job(schedule(t))] });
      expect(batch.status).toBe(200);
      expect(batch.body.results).toEqual([
        { status: 400, problem: expect.objectContaining({ errors: [{ path, message: expect.stringContaining(RANGE_MESSAGE) }] }) },
      ]);
    }
  });

  it('takes the first and the last storable instants where the past and the far future make sense', async () => {
    for (const t of [...EARLIEST, ...LATEST]) {
      for (const param of ['since', 'until'])
        expect((await tenant.api.get(`/v1/runs?${param}=${encodeURIComponent(t)}`)).status, `${param}=${t}`).toBe(200);
      expect((await tenant.api.post('/v1/dead-letters/replay', { since: t, until: t })).status, t).toBe(202);
    }
    for (const t of EARLIEST) {
      const cron = await tenant.api.post('/v1/jobs', job({ type: 'cron', expression: '0 0 * * *', startAt: t }));
      expect(cron.status, t).toBe(201);
      expect(cron.body.schedule.startAt).toBe(new Date(Date.parse(t)).toISOString());
    }
    for (const t of LATEST) {
      const interval = await tenant.api.post('/v1/jobs', job({ type: 'interval', everyMs: 60_000, endAt: t }));
      expect(interval.status, t).toBe(201);
      const key = await tenant.api.post('/v1/api-keys', { name: 'long-lived', expiresAt: t });
      expect(key.status, t).toBe(201);
      expect(key.body.expiresAt).toBe(new Date(Date.parse(t)).toISOString());
    }
  });

  it('a schedule whose first occurrence falls after the latest Chime schedules → 400 naming the field that put it there', async () => {
    const latest = new Date(LATEST_OCCURRENCE_MS).toISOString(); // 9999-12-30T23:59:59.999Z
    const cases: [unknown, string][] = [
      [{ type: 'once', at: '9999-12-31T00:00:00Z' }, 'schedule.at'],
      [{ type: 'once', at: '9999-12-31T23:59:59Z' }, 'schedule.at'],
      [{ type: 'interval', everyMs: 60_000, startAt: '9999-12-31T23:59:59Z' }, 'schedule.startAt'],
      [{ type: 'cron', expression: '0 0 * * *', startAt: '9999-12-31T23:59:59Z' }, 'schedule.startAt'],
      [{ type: 'cron', expression: '0 12 * * *', startAt: '9999-12-30T12:00:01Z' }, 'schedule.startAt'],
      [{ type: 'dates', dates: ['2031-01-01T00:00:00Z', '9999-12-31T12:00:00Z'] }, 'schedule.dates.1'],
    ];
    for (const [schedule, path] of cases) {
      // With the largest jitter too: the run would be due a day after its occurrence (this was a 500).
      const [error] = await refused(tenant.api, 'POST', '/v1/jobs', job(schedule, { jitterMs: 86_400_000 }), [path]);
      expect(error!.message).toContain(latest);
      await refused(tenant.api, 'POST', '/v1/schedules/preview', { schedule }, [path]);
    }
  });

  it('an occurrence at the latest Chime schedules is stored and read back, the largest jitter included', async () => {
    const at = new Date(LATEST_OCCURRENCE_MS).toISOString();
    const created = await tenant.api.post('/v1/jobs', job({ type: 'once', at }, { jitterMs: 86_400_000 }));
    expect(created.status).toBe(201);
    // nextRunAt is when it fires: the occurrence plus its jitter offset, still storable.
    expect(Date.parse(created.body.nextRunAt)).toBeGreaterThanOrEqual(LATEST_OCCURRENCE_MS);
    expect(Date.parse(created.body.nextRunAt)).toBeLessThanOrEqual(MAX_INSTANT_MS);
    const runs = await tenant.api.get(`/v1/jobs/${created.body.jobId}/runs`);
    expect(runs.status).toBe(200);
    expect(runs.body.runs).toEqual([expect.objectContaining({ scheduledFor: at, status: 'scheduled' })]);
    expect(Date.parse(runs.body.runs[0].nextAttemptAt)).toBeLessThanOrEqual(MAX_INSTANT_MS);
    // A preview stops there too.
    const preview = await tenant.api.post('/v1/schedules/preview', {
      schedule: { type: 'interval', everyMs: 3_600_000, startAt: '9999-12-30T20:00:00Z' },
      count: 50,
    });
    expect(preview.status).toBe(200);
    expect(preview.body.occurrences).toEqual([
      '9999-12-30T20:00:00.000Z',
      '9999-12-30T21:00:00.000Z',
      '9999-12-30T22:00:00.000Z',
      '9999-12-30T23:00:00.000Z',
    ]);
  });

  it('reported no unexpected errors', () => {
    expect(unexpected.map(String)).toEqual([]);
  });
});

describe.each(DATABASE_TARGETS)('POST /v1/api-keys: expiresAt ($kind)', (target) => {
  let app: TestApp;
  let tenant: TestTenant;
  const unexpected: unknown[] = [];

  beforeAll(async () => {
    app = await startTestApp({}, { target, onUnexpectedError: (err) => unexpected.push(err) });
    tenant = await app.tenant('keys');
  });
  afterAll(() => app?.close());

  it.each(UNSTORABLE)('%s → 400 naming expiresAt, no key made', async (t) => {
    const r = await tenant.api.post('/v1/api-keys', { name: 'edge', expiresAt: t });
    expect(r.status, `${JSON.stringify(r.body)}; unexpected: ${unexpected.map(String).join(' | ')}`).toBe(400);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(r.body.errors.map((e: { path: string }) => e.path)).toEqual(['expiresAt']);
    expect((await tenant.api.get('/v1/api-keys')).body.apiKeys).toHaveLength(1); // the tenant's first key only
  });
});

describe.each(DATABASE_TARGETS)('a claim near the end of 9999 ($kind)', (target) => {
  const clock = new ManualClock(Date.parse('9999-12-29T00:00:00Z'));
  let app: TestApp;
  let tenant: TestTenant;
  const unexpected: unknown[] = [];

  beforeAll(async () => {
    app = await startTestApp({}, { target, clock, onUnexpectedError: (err) => unexpected.push(err) });
    tenant = await app.tenant('year-9999');
  });
  afterAll(() => app?.close());

  it('completes the job when its next occurrence would fall past the latest Chime schedules, instead of failing the claim', async () => {
    // Every two days from 9999-12-30: the next occurrence (10000-01-01) cannot be stored; its insert failed the claim.
    const every2Days = await tenant.api.post(
      '/v1/jobs',
      job({ type: 'interval', everyMs: 2 * 86_400_000, startAt: '9999-12-30T00:00:00Z' }),
    );
    expect(every2Days.status).toBe(201);
    // Hourly from 23:00: the next occurrence (9999-12-31T00:00) is storable, but its run could be due past the end.
    const hourly = await tenant.api.post(
      '/v1/jobs',
      job({ type: 'interval', everyMs: 3_600_000, startAt: '9999-12-30T23:00:00Z' }, { jitterMs: 86_400_000 }),
    );
    expect(hourly.status).toBe(201);
    // Claimed when due (nextRunAt: the hourly one's occurrence plus its jitter offset), one after the other.
    for (const [jobId, nowMs] of [
      [every2Days.body.jobId, Date.parse('9999-12-30T00:00:00Z')],
      [hourly.body.jobId, Date.parse(hourly.body.nextRunAt)],
    ] as const) {
      clock.set(nowMs);
      const claimed = await claimRuns(app.database.db, { owner: 'A', limit: 10, nowMs, leaseMarginMs: 30_000 });
      expect(claimed.map((c) => c.jobId)).toContain(jobId);
      const read = await tenant.api.get(`/v1/jobs/${jobId}`);
      expect(read.body).toMatchObject({ status: 'completed', nextRunAt: null });
    }
    expect(unexpected.map(String)).toEqual([]);
  });
});
