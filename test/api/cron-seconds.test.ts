/**
 * Cron with seconds at the API (API.md "Richer schedules"): a 6-field expression, seconds first, is accepted wherever
 * cron is, previewed to the second, and stored; 7 fields are a 400 naming `schedule.expression`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestTenant } from '../support/api.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

describe('cron with seconds at the API', () => {
  let app: TestApp;
  let tenant: TestTenant;
  beforeAll(async () => {
    app = await startTestApp();
    tenant = await app.tenant();
  });
  afterAll(() => app?.close());

  it('previews and registers a 6-field expression; refuses 7 fields naming the expression', async () => {
    const schedule = { type: 'cron', expression: '*/15 * * * * *', timezone: 'Europe/Berlin' };
    const preview = await tenant.api.post('/v1/schedules/preview', { schedule, count: 4 });
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    const times: number[] = preview.body.occurrences.map((o: string) => Date.parse(o));
    expect(times.every((t) => t % 15_000 === 0)).toBe(true);
    expect(times.slice(1).map((t, i) => t - times[i]!)).toEqual([15_000, 15_000, 15_000]);

    const job = await tenant.api.post('/v1/jobs', { schedule, callback: { url: 'http://127.0.0.1:9/tick' } });
    expect(job.status, JSON.stringify(job.body)).toBe(201);
    expect(job.body.schedule.expression).toBe('*/15 * * * * *');
    expect(Date.parse(job.body.nextRunAt) % 15_000).toBe(0);

    const seven = await tenant.api.post('/v1/jobs', {
      schedule: { type: 'cron', expression: '0 */15 * * * * *' },
      callback: { url: 'http://127.0.0.1:9/tick' },
    });
    expect(seven.status).toBe(400);
    expect(seven.body.errors.map((e: { path: string }) => e.path)).toEqual(['schedule.expression']);
  });
});
