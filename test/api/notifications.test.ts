/**
 * The rules of notification endpoints (API.md "Notification endpoints"), in process on each database target: at most
 * 10 per tenant (the 11th is a 409 problem), URLs pass the destination checks of callback URLs (a private or metadata
 * address is a 400 naming `url` unless private destinations are allowed), and deleting an endpoint cancels its waiting
 * deliveries, and only its own.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_NOTIFICATION_ENDPOINTS } from '../../src/domain/events.ts';
import { query } from '../../src/store/db.ts';
import { recordEvents } from '../../src/store/notifications.ts';
import { startTestApp, type TestApp, tenantSnapshot } from '../support/app.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';

const endpoint = (path: string, events = ['run.failed']) => ({ url: `http://127.0.0.1:9/${path}`, events });

describe.each(DATABASE_TARGETS)('notification endpoint rules ($kind)', (target) => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({}, { target });
  });
  afterAll(() => app?.close());

  it(`the ${MAX_NOTIFICATION_ENDPOINTS + 1}th endpoint of a tenant → 409 problem+json, nothing stored; other tenants unaffected`, async () => {
    expect(MAX_NOTIFICATION_ENDPOINTS).toBe(10);
    const t = await app.tenant('full');
    for (let i = 0; i < MAX_NOTIFICATION_ENDPOINTS; i++)
      expect((await t.api.post('/v1/notification-endpoints', endpoint(`e${i}`))).status).toBe(201);
    const before = await tenantSnapshot(app.database, t.tenantId);
    const r = await t.api.post('/v1/notification-endpoints', endpoint('one-too-many'));
    expect(r.status).toBe(409);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(r.body).toMatchObject({
      type: 'urn:chime:problem:conflict',
      status: 409,
      title: expect.any(String),
      detail: expect.stringContaining('10'),
    });
    expect(await tenantSnapshot(app.database, t.tenantId)).toBe(before);
    expect((await t.api.get('/v1/notification-endpoints')).body.endpoints).toHaveLength(MAX_NOTIFICATION_ENDPOINTS);
    // The limit is per tenant; and a deleted endpoint frees its place.
    expect((await (await app.tenant('other')).api.post('/v1/notification-endpoints', endpoint('other'))).status).toBe(201);
    const [first] = (await t.api.get('/v1/notification-endpoints')).body.endpoints;
    expect((await t.api.request('DELETE', `/v1/notification-endpoints/${first.endpointId}`)).status).toBe(204);
    expect((await t.api.post('/v1/notification-endpoints', endpoint('room-again'))).status).toBe(201);
  });

  it('a private, loopback or metadata URL → 400 naming url when private destinations are not allowed', async () => {
    const guarded = await startTestApp({ allowPrivateDestinations: false }, { target });
    try {
      const t = await guarded.tenant('guarded');
      for (const url of [
        'http://169.254.169.254/latest/meta-data',
        'http://[fd00:ec2::254]/',
        'http://127.0.0.1:8080/events',
        'http://10.1.2.3/',
        'http://[::ffff:192.168.0.1]/',
        'http://2130706433/',
      ]) {
        const r = await t.api.post('/v1/notification-endpoints', { url, events: ['run.failed'] });
        expect(r.status, url).toBe(400);
        expect(r.headers.get('content-type'), url).toBe('application/problem+json');
        expect(r.body, url).toMatchObject({ type: 'urn:chime:problem:validation', status: 400 });
        expect(r.body.errors, url).toEqual([{ path: 'url', message: expect.any(String) }]);
      }
      expect((await t.api.get('/v1/notification-endpoints')).body.endpoints).toEqual([]);
      expect(
        (await t.api.post('/v1/notification-endpoints', { url: 'https://ops.example.com/chime', events: ['run.failed'] })).status,
      ).toBe(201);
    } finally {
      await guarded.close();
    }
  });

  it("deleting an endpoint cancels its waiting deliveries, not another endpoint's", async () => {
    const t = await app.tenant('deleting');
    const doomed = (await t.api.post('/v1/notification-endpoints', endpoint('doomed', ['job.paused']))).body.endpointId as string;
    const kept = (await t.api.post('/v1/notification-endpoints', endpoint('kept', ['job.paused']))).body.endpointId as string;
    const job = await t.api.post('/v1/jobs', {
      schedule: { type: 'delay', delayMs: 3_600_000 },
      callback: { url: 'http://127.0.0.1:9/hook' },
    });
    expect(job.status).toBe(201);
    // An event as the dispatcher records it (no dispatcher runs in process): one waiting delivery per endpoint.
    expect(
      await recordEvents(
        app.database.db,
        [{ type: 'job.paused', tenantId: t.tenantId, jobId: job.body.jobId, reason: 'gone' }],
        Date.now(),
      ),
    ).toBe(2);
    const waiting = async (endpointId: string) => (await t.api.get(`/v1/notification-endpoints/${endpointId}/deliveries`)).body.deliveries;
    const [delivery] = await waiting(doomed);
    expect(delivery).toMatchObject({ type: 'job.paused', status: 'scheduled' });
    expect(await waiting(kept)).toMatchObject([{ type: 'job.paused', status: 'scheduled' }]);

    expect((await t.api.request('DELETE', `/v1/notification-endpoints/${doomed}`)).status).toBe(204);
    // Gone from the API; its delivery ended canceled (read by SQL: no route shows a deleted endpoint's history).
    expect((await t.api.get(`/v1/notification-endpoints/${doomed}/deliveries`)).status).toBe(404);
    expect((await t.api.request('DELETE', `/v1/notification-endpoints/${doomed}`)).status).toBe(404);
    const [row] = await query<{ status: string; next_attempt_at: unknown; finished_at: unknown }>(
      app.database.db,
      sql`select status, next_attempt_at, finished_at from runs where id = ${delivery.deliveryId}`,
    );
    expect(row).toMatchObject({ status: 'canceled', next_attempt_at: null, finished_at: expect.anything() });
    expect(await waiting(kept)).toMatchObject([{ type: 'job.paused', status: 'scheduled' }]);
  });
});
