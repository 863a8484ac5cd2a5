/**
 * Richer schedules at the API (API.md "Richer schedules"): calendars (create, replace, list, read, delete refused while a
 * job uses one), the preview under a calendar (occurrences where they fire, and the moves and skips), jobs with a
 * union, a calendar, `maxRuns` and `jitterMode` (their view, `nextRunAt` with the calendar's move), and every bad input
 * answered 400 naming its field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestTenant } from '../support/api.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

const HOOK = 'http://127.0.0.1:9/hook';
const paths = (body: { errors?: { path: string }[] }) => (body.errors ?? []).map((e) => e.path).sort();

describe('richer schedules at the API', () => {
  let app: TestApp;
  let tenant: TestTenant;
  beforeAll(async () => {
    app = await startTestApp();
    tenant = await app.tenant();
  });
  afterAll(() => app?.close());

  it('creates, replaces, lists, reads and deletes calendars; deletion is refused while a job uses one', async () => {
    const created = await tenant.api.request('PUT', '/v1/calendars/de-holidays', {
      name: 'Germany',
      timezone: 'Europe/Berlin',
      holidays: ['2099-12-26', '2099-12-25', '2099-12-25'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      key: 'de-holidays',
      name: 'Germany',
      weekendDays: [0, 6],
      holidays: ['2099-12-25', '2099-12-26'],
      jobs: 0,
    });
    const replaced = await tenant.api.request('PUT', '/v1/calendars/de-holidays', {
      timezone: 'Europe/Berlin',
      weekendDays: [5],
      holidays: [],
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ name: null, weekendDays: [5], holidays: [] });
    expect((await tenant.api.get('/v1/calendars')).body.calendars.map((c: { key: string }) => c.key)).toEqual(['de-holidays']);

    const job = await tenant.api.post('/v1/jobs', {
      schedule: { type: 'cron', expression: '0 9 * * *', timezone: 'Europe/Berlin' },
      calendar: { key: 'de-holidays', roll: 'next' },
      callback: { url: HOOK },
    });
    expect(job.status, JSON.stringify(job.body)).toBe(201);
    expect(job.body.calendar).toEqual({ key: 'de-holidays', roll: 'next' });
    expect((await tenant.api.get('/v1/calendars/de-holidays')).body.jobs).toBe(1);
    // A page of calendars counts each one's jobs (one grouped count): another calendar, unused, shows 0.
    expect((await tenant.api.request('PUT', '/v1/calendars/at-holidays', { timezone: 'Europe/Vienna', holidays: [] })).status).toBe(201);
    const page = (await tenant.api.get('/v1/calendars')).body.calendars.map((c: { key: string; jobs: number }) => [c.key, c.jobs]);
    expect(page).toEqual([
      ['at-holidays', 0],
      ['de-holidays', 1],
    ]);
    expect((await tenant.api.request('DELETE', '/v1/calendars/at-holidays')).status).toBe(204);
    const refused = await tenant.api.request('DELETE', '/v1/calendars/de-holidays');
    expect(refused.status).toBe(409);
    expect((await tenant.api.request('DELETE', `/v1/jobs/${job.body.jobId}`)).status).toBe(204);
    expect((await tenant.api.request('DELETE', '/v1/calendars/de-holidays')).status).toBe(204);
    expect((await tenant.api.get('/v1/calendars/de-holidays')).status).toBe(404);
  });

  it('refuses bad calendars naming each field', async () => {
    const bad = await tenant.api.request('PUT', '/v1/calendars/x', {
      timezone: 'Mars/Olympus',
      weekendDays: [0, 0, 9],
      holidays: ['2026-02-30', '26-12-25'],
    });
    expect(bad.status).toBe(400);
    expect(paths(bad.body)).toEqual(['holidays.0', 'holidays.1', 'timezone', 'weekendDays', 'weekendDays.2'].sort());
    expect((await tenant.api.request('PUT', '/v1/calendars/bad key', { timezone: 'UTC', holidays: [] })).status).toBe(400);
    const tooMany = Array.from({ length: 1001 }, (_, i) => new Date(Date.UTC(2030, 0, 1) + i * 86_400_000).toISOString().slice(0, 10));
    expect(paths((await tenant.api.request('PUT', '/v1/calendars/x', { timezone: 'UTC', holidays: tooMany })).body)).toEqual(['holidays']);
  });

  it('previews under a calendar: where the occurrences fire, and which the calendar moved or skipped', async () => {
    // Every day at 09:00 UTC for the first week of 2099 (Thursday 1 January); weekend Saturday and Sunday; 2 Jan a holiday.
    await tenant.api.request('PUT', '/v1/calendars/utc', { timezone: 'UTC', holidays: ['2099-01-02'] });
    const schedule = { type: 'cron', expression: '0 9 * * *', startAt: '2099-01-01T00:00:00Z' };
    const next = await tenant.api.post('/v1/schedules/preview', { schedule, calendar: { key: 'utc', roll: 'next' }, count: 3 });
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    expect(next.body.occurrences).toEqual(['2099-01-01T09:00:00.000Z', '2099-01-05T09:00:00.000Z', '2099-01-06T09:00:00.000Z']);
    expect(next.body.calendar).toEqual([
      { occurrence: '2099-01-02T09:00:00.000Z', firesAt: '2099-01-05T09:00:00.000Z' },
      { occurrence: '2099-01-03T09:00:00.000Z', firesAt: '2099-01-05T09:00:00.000Z' },
      { occurrence: '2099-01-04T09:00:00.000Z', firesAt: '2099-01-05T09:00:00.000Z' },
    ]);
    const skip = await tenant.api.post('/v1/schedules/preview', { schedule, calendar: { key: 'utc', roll: 'skip' }, count: 2 });
    expect(skip.body.occurrences).toEqual(['2099-01-01T09:00:00.000Z', '2099-01-05T09:00:00.000Z']);
    expect(skip.body.calendar.map((m: { firesAt: string | null }) => m.firesAt)).toEqual([null, null, null]);
    const missing = await tenant.api.post('/v1/schedules/preview', { schedule, calendar: { key: 'nope', roll: 'skip' } });
    expect(missing.status).toBe(400);
    expect(paths(missing.body)).toEqual(['calendar.key']);
  });

  it('registers a union with a calendar, maxRuns and a jitter mode; nextRunAt is where it fires', async () => {
    await tenant.api.request('PUT', '/v1/calendars/new-year', { timezone: 'UTC', holidays: ['2099-01-01'] });
    const job = await tenant.api.post('/v1/jobs', {
      schedule: {
        type: 'union',
        schedules: [
          { type: 'once', at: '2099-01-01T10:00:00Z' },
          { type: 'dates', dates: ['2099-01-01T10:00:00Z', '2099-01-07T08:00:00Z'] },
        ],
      },
      calendar: { key: 'new-year', roll: 'previous' },
      maxRuns: 2,
      jitterMode: 'random',
      jitterMs: 1000,
      callback: { url: HOOK },
    });
    expect(job.status, JSON.stringify(job.body)).toBe(201);
    expect(job.body).toMatchObject({ maxRuns: 2, scheduledRuns: 0, jitterMode: 'random', calendar: { key: 'new-year', roll: 'previous' } });
    // New Year 2099 is a Thursday and a holiday: `previous` fires on Wednesday 31 December 2098, within the jitter.
    const next = Date.parse(job.body.nextRunAt);
    expect(next).toBeGreaterThanOrEqual(Date.parse('2098-12-31T10:00:00Z'));
    expect(next).toBeLessThan(Date.parse('2098-12-31T10:00:01Z'));
    const patched = await tenant.api.request('PATCH', `/v1/jobs/${job.body.jobId}`, {
      calendar: null,
      maxRuns: null,
      jitterMode: 'stable',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ calendar: null, maxRuns: null, jitterMode: 'stable' });
    expect(Date.parse(patched.body.nextRunAt)).toBeGreaterThanOrEqual(Date.parse('2099-01-01T10:00:00Z'));
  });

  it('refuses bad fields naming each', async () => {
    const bad = await tenant.api.post('/v1/jobs', {
      schedule: {
        type: 'union',
        schedules: [
          { type: 'cron', expression: '0 9 * * *' },
          { type: 'once', at: '2000-01-01T00:00:00Z' },
        ],
      },
      calendar: { key: 'nope', roll: 'sideways' },
      maxRuns: 0,
      jitterMode: 'chaotic',
      callback: { url: HOOK },
    });
    expect(bad.status).toBe(400);
    expect(paths(bad.body)).toEqual(['calendar.roll', 'jitterMode', 'maxRuns', 'schedule.schedules.1.at'].sort());
    const one = await tenant.api.post('/v1/jobs', {
      schedule: { type: 'union', schedules: [{ type: 'once', at: '2099-01-01T00:00:00Z' }] },
      callback: { url: HOOK },
    });
    expect(paths(one.body)).toEqual(['schedule.schedules']);
    const nested = await tenant.api.post('/v1/jobs', {
      schedule: {
        type: 'union',
        schedules: [
          { type: 'delay', delayMs: 1000 },
          { type: 'once', at: '2099-01-01T00:00:00Z' },
        ],
      },
      callback: { url: HOOK },
    });
    expect(nested.status).toBe(400);
    expect(paths(nested.body)[0]).toMatch(/^schedule\.schedules\.0/);
    const missing = await tenant.api.post('/v1/jobs', {
      schedule: { type: 'cron', expression: '0 9 * * *' },
      calendar: { key: 'nope', roll: 'skip' },
      callback: { url: HOOK },
    });
    expect(missing.status).toBe(400);
    expect(paths(missing.body)).toEqual(['calendar.key']);
    // Tuesdays 03:05 in Berlin are Mondays in New York: a calendar there whose weekend has Monday skips every one.
    await tenant.api.request('PUT', '/v1/calendars/ny', { timezone: 'America/New_York', weekendDays: [1, 3, 5], holidays: [] });
    const never = await tenant.api.post('/v1/jobs', {
      schedule: { type: 'cron', expression: '5 3 * * 2', timezone: 'Europe/Berlin' },
      calendar: { key: 'ny', roll: 'skip' },
      callback: { url: HOOK },
    });
    expect(never.status).toBe(400);
    expect(paths(never.body)).toEqual(['calendar']);
  });
});
