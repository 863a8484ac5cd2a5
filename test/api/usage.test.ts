/**
 * `GET /v1/usage`, over HTTP in process, on each database target, with a ManualClock: runs and attempts written by
 * SQL at known instants over several UTC days (edges of days included), so the exact daily counts, the fire lag
 * percentiles and the open-job counts are known. What must not count: runs outside the span, canceled runs, a
 * notification's deliveries and hidden job, another tenant's runs and jobs. Then the span's bounds (`days` 1, 14 by
 * default, 90) and the 400 problem+json naming `days` for values out of 1..90.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.ts';
import { query } from '../../src/store/db.ts';
import type { TestTenant } from '../support/api.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** "Now" of the tests: 2030-01-10T15:00:00.000Z. */
const NOW = Date.UTC(2030, 0, 10, 15);
const utc = (s: string) => Date.parse(`${s}Z`);
const at = (ms: number) => new Date(ms).toISOString();

const jobBody = (name: string) => ({ name, schedule: { type: 'delay', delayMs: 30 * DAY }, callback: { url: 'http://127.0.0.1:9/hook' } });

type RunSpec = {
  tenantId: string;
  jobId: string;
  status: string;
  trigger?: string;
  scheduledFor?: number;
  startedAt?: number;
  finishedAt?: number;
  /** Start instants of its attempts, numbered 1, 2, … */
  attempts?: number[];
};

/** Inserts a run (trigger `manual` unless given: no unique occurrence to collide with) and its attempts. */
async function addRun(app: TestApp, r: RunSpec): Promise<string> {
  const scheduledFor = r.scheduledFor ?? r.startedAt ?? r.finishedAt ?? NOW;
  const [run] = await query<{ id: string }>(
    app.database.db,
    sql`insert into runs (shard, id, tenant_id, job_id, scheduled_for, trigger, status, started_at, finished_at, created_at)
        values (chime_shard_of(${r.tenantId}::uuid), gen_random_uuid(), ${r.tenantId}, ${r.jobId}, ${at(scheduledFor)}::timestamptz, ${r.trigger ?? 'manual'}, ${r.status},
          ${r.startedAt === undefined ? null : at(r.startedAt)}::timestamptz, ${r.finishedAt === undefined ? null : at(r.finishedAt)}::timestamptz,
          ${at(scheduledFor)}::timestamptz)
        returning id`,
  );
  for (const [i, startedAt] of (r.attempts ?? []).entries()) {
    await app.database.db.execute(
      sql`insert into attempts (shard, run_id, attempt, started_at) values (chime_shard_of(${r.tenantId}::uuid), ${run!.id}, ${i + 1}, ${at(startedAt)}::timestamptz)`,
    );
  }
  return run!.id;
}

type Day = { date: string; succeeded: number; failed: number; expired: number; skipped: number; attempts: number };

/** The `days` days ending with the UTC day of `nowMs`, oldest first: zeros, except the counts given by date. */
function expectedDaily(nowMs: number, days: number, counts: Record<string, Partial<Omit<Day, 'date'>>>): Day[] {
  const today = Math.floor(nowMs / DAY) * DAY;
  return Array.from({ length: days }, (_, i) => {
    const date = at(today - (days - 1 - i) * DAY).slice(0, 10);
    return { date, succeeded: 0, failed: 0, expired: 0, skipped: 0, attempts: 0, ...counts[date] };
  });
}

/** What A's runs and attempts add up to per day, within the 14 days up to NOW. */
const A_COUNTS: Record<string, Partial<Omit<Day, 'date'>>> = {
  '2030-01-10': { succeeded: 2, failed: 1, attempts: 3 },
  '2030-01-09': { succeeded: 1, expired: 1, attempts: 1 },
  '2030-01-07': { succeeded: 1, skipped: 2, attempts: 2 },
  '2029-12-28': { succeeded: 1 },
};

describe.each(DATABASE_TARGETS)('GET /v1/usage ($kind)', (target) => {
  const clock = new ManualClock(NOW);
  let app: TestApp;
  let a: TestTenant;
  let b: TestTenant;
  let empty: TestTenant;

  beforeAll(async () => {
    app = await startTestApp({}, { target, clock });
    a = await app.tenant('a');
    b = await app.tenant('b');
    empty = await app.tenant('empty');

    // A's jobs: two active, one paused, one canceled; and a notification endpoint's hidden job (not A's job).
    const ids: string[] = [];
    for (const name of ['one', 'two', 'paused', 'canceled']) {
      const r = await a.api.post('/v1/jobs', jobBody(name));
      expect(r.status).toBe(201);
      ids.push(r.body.jobId);
    }
    expect((await a.api.request('PATCH', `/v1/jobs/${ids[2]}`, { paused: true })).status).toBe(200);
    expect((await a.api.request('DELETE', `/v1/jobs/${ids[3]}`)).status).toBe(204);
    const jobId = ids[0]!;
    const [hidden] = await query<{ id: string }>(
      app.database.db,
      sql`insert into jobs (shard, id, tenant_id, name, status, kind, schedule, callback, retry, delivery_mode, overlap_policy, catch_up,
            jitter_ms, metadata, created_at, updated_at)
          select shard, gen_random_uuid(), tenant_id, 'hidden', 'active', 'notification', schedule, callback, retry, delivery_mode,
            overlap_policy, catch_up, jitter_ms, metadata, created_at, updated_at
          from jobs where id = ${jobId} returning id`,
    );
    // B: three active jobs; a run finished today that started an hour ago with a huge lag, one started early.
    const bJob = (await b.api.post('/v1/jobs', jobBody('b'))).body.jobId;
    for (const name of ['b2', 'b3']) expect((await b.api.post('/v1/jobs', jobBody(name))).status).toBe(201);

    const A = { tenantId: a.tenantId, jobId };
    // Today (2030-01-10). Fire lags of the runs started in the 24 h up to NOW: 100, 200, 300, 0 (started early), 5000.
    await addRun(app, {
      ...A,
      status: 'succeeded',
      scheduledFor: utc('2030-01-10T00:59:59.800'),
      startedAt: utc('2030-01-10T00:59:59.900'),
      finishedAt: utc('2030-01-10T01:00:00'),
      attempts: [utc('2030-01-10T00:59:59.900')],
    });
    await addRun(app, {
      ...A,
      status: 'failed',
      scheduledFor: utc('2030-01-09T21:59:59.800'),
      startedAt: utc('2030-01-09T22:00:00'),
      finishedAt: utc('2030-01-10T14:00:00'),
      attempts: [utc('2030-01-09T22:00:00'), utc('2030-01-10T13:00:00'), utc('2030-01-10T14:00:00')],
    });
    await addRun(app, { ...A, status: 'running', scheduledFor: NOW - HOUR, startedAt: NOW - HOUR + 300 });
    await addRun(app, {
      ...A,
      status: 'succeeded',
      scheduledFor: NOW - 2 * HOUR,
      startedAt: NOW - 2 * HOUR - 50,
      finishedAt: NOW - 2 * HOUR + 1000,
    });
    await addRun(app, { ...A, status: 'retrying', scheduledFor: NOW - 3 * HOUR, startedAt: NOW - 3 * HOUR + 5000 });
    await addRun(app, { ...A, status: 'canceled', finishedAt: NOW - HOUR }); // canceled: not an outcome counted
    await addRun(app, { ...A, status: 'succeeded', finishedAt: NOW + HOUR }); // after now: outside the span
    // Yesterday, at both edges of the day; started more than 24 h before NOW with a huge lag.
    await addRun(app, {
      ...A,
      status: 'succeeded',
      scheduledFor: utc('2030-01-08T10:00:00'),
      startedAt: utc('2030-01-09T10:00:00'),
      finishedAt: utc('2030-01-09T23:59:59.999'),
    });
    await addRun(app, { ...A, status: 'expired', finishedAt: utc('2030-01-09T00:00:00') });
    // 2030-01-07: two skipped and a succeeded run with two attempts; 2030-01-08 has nothing.
    await addRun(app, { ...A, status: 'skipped', finishedAt: utc('2030-01-07T08:00:00') });
    await addRun(app, { ...A, status: 'skipped', finishedAt: utc('2030-01-07T09:00:00') });
    await addRun(app, {
      ...A,
      status: 'succeeded',
      finishedAt: utc('2030-01-07T12:00:00'),
      attempts: [utc('2030-01-07T11:00:00'), utc('2030-01-07T11:30:00')],
    });
    // The first instant of the oldest of 14 days counts; the last instant before it does not (nor its attempt).
    await addRun(app, { ...A, status: 'succeeded', finishedAt: utc('2029-12-28T00:00:00') });
    await addRun(app, { ...A, status: 'failed', finishedAt: utc('2029-12-27T23:59:59.999'), attempts: [utc('2029-12-27T23:00:00')] });
    // A notification's delivery (A's tenant id, hidden job): counts nowhere, not in the fire lag either.
    await addRun(app, {
      tenantId: a.tenantId,
      jobId: hidden!.id,
      trigger: 'notification',
      status: 'failed',
      scheduledFor: NOW - 10 * DAY,
      startedAt: NOW - HOUR,
      finishedAt: NOW - HOUR + 10,
      attempts: [NOW - HOUR, NOW - HOUR + 5],
    });
    // B's runs: count for B only.
    await addRun(app, {
      tenantId: b.tenantId,
      jobId: bJob,
      status: 'succeeded',
      scheduledFor: NOW - 5 * DAY,
      startedAt: NOW - HOUR,
      finishedAt: NOW - HOUR + 10,
      attempts: [NOW - HOUR],
    });
    await addRun(app, {
      tenantId: b.tenantId,
      jobId: bJob,
      status: 'failed',
      finishedAt: utc('2030-01-07T12:00:00'),
      attempts: [utc('2030-01-07T12:00:00')],
    });
    await addRun(app, {
      tenantId: b.tenantId,
      jobId: bJob,
      status: 'running',
      scheduledFor: NOW - HOUR / 2,
      startedAt: NOW - HOUR / 2 - 1000,
    }); // 1 s early: lag 0
  });
  afterAll(() => app?.close());

  it("answers the tenant's runs per UTC day, oldest first, every day present, 14 days by default", async () => {
    const r = await a.api.get('/v1/usage');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      from: '2029-12-28T00:00:00.000Z',
      to: '2030-01-10T15:00:00.000Z',
      daily: expectedDaily(NOW, 14, A_COUNTS),
      fireLagMs: { p50: 200, p99: 4812 }, // lags 0, 100, 200, 300, 5000: p99 = 300 + 0.96 × 4700
      jobs: { active: 2, paused: 1 },
    });
    expect(r.body.daily[0].date).toBe('2029-12-28');
    expect(r.body.daily[13].date).toBe('2030-01-10');
    expect((await a.api.get('/v1/usage?days=14')).body).toEqual(r.body);
  });

  it('shows another tenant only its own runs and jobs', async () => {
    const r = await b.api.get('/v1/usage');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      from: '2029-12-28T00:00:00.000Z',
      to: '2030-01-10T15:00:00.000Z',
      daily: expectedDaily(NOW, 14, { '2030-01-10': { succeeded: 1, attempts: 1 }, '2030-01-07': { failed: 1, attempts: 1 } }),
      fireLagMs: { p50: 214_200_000, p99: 424_116_000 }, // lags 0 and 5 d - 1 h = 428,400,000 ms
      jobs: { active: 3, paused: 0 },
    });
  });

  it('answers zeros, and no fire lag, for a tenant without runs or jobs', async () => {
    const r = await empty.api.get('/v1/usage?days=3');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      from: '2030-01-08T00:00:00.000Z',
      to: '2030-01-10T15:00:00.000Z',
      daily: ['2030-01-08', '2030-01-09', '2030-01-10'].map((date) => ({
        date,
        succeeded: 0,
        failed: 0,
        expired: 0,
        skipped: 0,
        attempts: 0,
      })),
      fireLagMs: null,
      jobs: { active: 0, paused: 0 },
    });
  });

  it('days=1 is today so far; days=90 reaches 89 days back', async () => {
    const one = await a.api.get('/v1/usage?days=1');
    expect(one.status).toBe(200);
    expect(one.body.from).toBe('2030-01-10T00:00:00.000Z');
    expect(one.body.to).toBe('2030-01-10T15:00:00.000Z');
    expect(one.body.daily).toEqual([{ date: '2030-01-10', succeeded: 2, failed: 1, expired: 0, skipped: 0, attempts: 3 }]);

    const ninety = await a.api.get('/v1/usage?days=90');
    expect(ninety.status).toBe(200);
    expect(ninety.body.from).toBe(at(Date.UTC(2030, 0, 10) - 89 * DAY));
    expect(ninety.body.daily).toHaveLength(90);
    expect(ninety.body.daily[0].date).toBe(ninety.body.from.slice(0, 10));
    expect(ninety.body.daily).toEqual(expectedDaily(NOW, 90, { ...A_COUNTS, '2029-12-27': { failed: 1, attempts: 1 } }));
  });

  it('follows the clock: a day later, the run finished after the old "now" counts, and no run started in the last 24 h', async () => {
    clock.set(NOW + 2 * DAY);
    try {
      const r = await a.api.get('/v1/usage?days=3');
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        from: '2030-01-10T00:00:00.000Z',
        to: '2030-01-12T15:00:00.000Z',
        daily: expectedDaily(NOW + 2 * DAY, 3, { '2030-01-10': { succeeded: 3, failed: 1, attempts: 3 } }),
        fireLagMs: null,
        jobs: { active: 2, paused: 1 },
      });
    } finally {
      clock.set(NOW);
    }
  });

  it('refuses days out of 1..90, or not an integer, with a 400 problem naming days', async () => {
    for (const days of ['0', '91', 'abc', '1.5', '-1', '']) {
      const r = await a.api.get(`/v1/usage?days=${days}`);
      expect(r.status, days).toBe(400);
      expect(r.headers.get('content-type'), days).toBe('application/problem+json');
      expect(r.body, days).toMatchObject({ type: 'urn:chime:problem:validation', status: 400 });
      expect(
        r.body.errors.map((e: { path: string }) => e.path),
        days,
      ).toEqual(['days']);
    }
  });

  it('answers 401 without an API key', async () => {
    const r = await app.fetch('http://chime.test/v1/usage');
    expect(r.status).toBe(401);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
  });
});
