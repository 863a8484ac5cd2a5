/**
 * Notification events never carry the values of a job's custom callback headers (issue #28, point 5): those are
 * often the receiver's API keys, and endpoints are often third-party alerting tools. The event's job keeps the header
 * names with each value redacted; the API still shows the values to the tenant itself.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDACTED_HEADER_VALUE } from '../../src/domain/events.ts';
import { query } from '../../src/store/db.ts';
import { recordEvents } from '../../src/store/notifications.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';

const HEADERS = { 'x-api-key': 'sk_live_do-not-leak-1', 'x-team': 'billing-do-not-leak-2' };

describe.each(DATABASE_TARGETS)('event bodies redact callback header values ($kind)', (target) => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({}, { target });
  });
  afterAll(() => app?.close());

  it('a run.failed event has the header names and none of their values', async () => {
    const t = await app.tenant('redaction');
    expect(
      (await t.api.post('/v1/notification-endpoints', { url: 'http://127.0.0.1:9/events', events: ['run.failed', 'job.paused'] })).status,
    ).toBe(201);
    const job = await t.api.post('/v1/jobs', {
      schedule: { type: 'delay', delayMs: 3_600_000 },
      callback: { url: 'http://127.0.0.1:9/hook', headers: HEADERS },
    });
    expect(job.status).toBe(201);
    // The tenant itself still sees its values.
    expect(job.body.callback.headers).toEqual(HEADERS);
    const [run] = (await t.api.get(`/v1/jobs/${job.body.jobId}/runs`)).body.runs;

    // The events as the dispatcher records them (no dispatcher runs in process).
    const seeds = [
      { type: 'run.failed' as const, tenantId: t.tenantId, jobId: job.body.jobId, runId: run.runId },
      { type: 'job.paused' as const, tenantId: t.tenantId, jobId: job.body.jobId, reason: 'gone' },
    ];
    expect(await recordEvents(app.database.db, seeds, Date.now())).toBe(2);
    const rows = await query<{ payload: unknown }>(
      app.database.db,
      sql`select payload from runs where tenant_id = ${t.tenantId} and trigger = 'notification' order by created_at`,
    );
    expect(rows).toHaveLength(2);
    for (const { payload } of rows) {
      const body = (typeof payload === 'string' ? JSON.parse(payload) : payload) as {
        type: string;
        data: { job: { callback: { headers: Record<string, string> } } };
      };
      expect(body.data.job.callback.headers, body.type).toEqual({ 'x-api-key': REDACTED_HEADER_VALUE, 'x-team': REDACTED_HEADER_VALUE });
      const text = JSON.stringify(body);
      for (const value of Object.values(HEADERS)) expect(text, body.type).not.toContain(value);
    }
    expect(rows.map((r) => (r.payload as { type: string }).type).sort()).toEqual(['job.paused', 'run.failed']);
  });
});
