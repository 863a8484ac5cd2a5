/**
 * Notifications and automatic pauses (API.md "Notification endpoints", "Tenant operations"; docs/design.md invariant 11),
 * with the real process and real receivers on 127.0.0.1, on every database target: a dead letter reaches the
 * tenant's notification endpoint as `run.failed`, signed with the tenant's secret (checked with the
 * `standardwebhooks` package); a 410 pauses the job (`gone`) and says so; `pauseAfterFailures` pauses after that
 * many failed runs in a row, not before; an endpoint that answers 500 is retried with its history kept while the
 * tenant's callbacks keep flowing; and a dispatcher SIGKILLed between a dead letter and its notification still
 * delivers the notification once restarted.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { startChime, type ChimeProcess } from '../support/chime-process.ts';
import { DATABASE_TARGETS, freshDatabase, type FreshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { startReceiver, type Received, type Receiver, type Reply } from '../support/receiver.ts';

const NO_RETRY = { strategy: 'none' } as const;
type Event = { type: string; eventId: string; occurredAt: string; data: { job: { jobId: string; status: string; pausedReason: string | null }; run?: { runId: string; status: string }; reason?: string } };

describe.each(DATABASE_TARGETS)('notifications on $kind', (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let callbacks: Receiver;
  let notifications: Receiver;
  let tenant: TestTenant;
  /** How the notification receiver answers each path (default 200). */
  const notificationReplies = new Map<string, (r: Received) => Reply>();
  const env = () => ({ ...db.env, CHIME_LEASE_MARGIN_MS: '500', CHIME_REAP_INTERVAL_MS: '300' });

  beforeAll(async () => {
    db = await freshDatabase(target);
    callbacks = await startReceiver((r) => {
      if (r.path.startsWith('/fail')) return { status: 500, body: 'down' };
      if (r.path === '/gone') return { status: 410, body: 'gone' };
      return { status: 200 };
    });
    notifications = await startReceiver((r) => notificationReplies.get(r.path)?.(r) ?? { status: 200 });
    chime = await startChime(env());
    tenant = await createTestTenant(chime.url, 'notified');
  });
  afterAll(async () => {
    await chime?.stop();
    await callbacks?.close();
    await notifications?.close();
    await db?.drop();
  });

  const endpoint = async (path: string, events: string[]) => {
    const r = await tenant.api.post('/v1/notification-endpoints', { url: `${notifications.url}${path}`, events, description: path });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body as { endpointId: string };
  };
  const job = async (path: string, extra: Record<string, unknown> = {}) => {
    const r = await tenant.api.post('/v1/jobs', { schedule: { type: 'delay', delayMs: 0 }, callback: { url: `${callbacks.url}${path}` }, retry: NO_RETRY, ...extra });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body as { jobId: string };
  };
  const events = (path: string): Event[] => notifications.received.filter((r) => r.path === path).map((r) => JSON.parse(r.body));

  it('a dead letter reaches the endpoint as run.failed within 2 s, signed with the tenant secret', async () => {
    await endpoint('/failed', ['run.failed']);
    const j = await job('/fail-once');
    const failedAt = await eventually(async () => {
      const runs = (await tenant.api.get(`/v1/jobs/${j.jobId}/runs`)).body.runs;
      return runs[0]?.status === 'failed' ? Date.parse(runs[0].finishedAt) : undefined;
    }, { what: 'the run to dead-letter' });
    const got = await eventually(() => notifications.received.find((r) => r.path === '/failed'), { what: 'the run.failed notification', timeoutMs: 5_000 });
    // From the dead letter's finishedAt (the dispatcher's clock: the same machine) to the notification's arrival.
    expect(got.at - failedAt, 'notified within 2 s of the dead letter').toBeLessThan(2_000);
    expect(got.at).toBeGreaterThanOrEqual(failedAt);
    // Verifiable as any Standard Webhooks receiver would; webhook-id is the event id.
    const verified = new Webhook(tenant.signingSecret).verify(got.body, got.headers as Record<string, string>) as Event;
    expect(verified.type).toBe('run.failed');
    expect(got.headers['webhook-id']).toBe(verified.eventId);
    expect(got.headers['chime-signature']).toMatch(/^ey/);
    expect(verified.data.job.jobId).toBe(j.jobId);
    expect(verified.data.run).toMatchObject({ status: 'failed' });
    const deadLetters = (await tenant.api.get('/v1/dead-letters')).body.runs.map((r: { runId: string }) => r.runId);
    expect(deadLetters).toContain(verified.data.run!.runId);
    // Deliveries are not the tenant's runs: the dead letters hold only the job's run.
    expect(deadLetters).toHaveLength(1);
  });

  it('a 410 pauses the job with reason gone, and job.paused says so', async () => {
    await endpoint('/paused', ['job.paused']);
    const j = await job('/gone', { schedule: { type: 'interval', everyMs: 60_000 } });
    const e = await eventually(() => events('/paused').find((x) => x.data.job.jobId === j.jobId), { what: 'job.paused' });
    expect(e.data.job).toMatchObject({ status: 'paused', pausedReason: 'gone' });
    expect(e.data.reason).toBe('gone');
    expect((await tenant.api.get(`/v1/jobs/${j.jobId}`)).body).toMatchObject({ status: 'paused', pausedReason: 'gone' });
  });

  it('pauseAfterFailures: 2 pauses after the second failed run in a row, not the first; resume resets the count', async () => {
    const j = await job('/fail-twice', { schedule: { type: 'interval', everyMs: 1_000 }, pauseAfterFailures: 2 });
    const first = await eventually(async () => {
      const r = (await tenant.api.get(`/v1/jobs/${j.jobId}`)).body;
      return r.consecutiveFailures >= 1 ? r : undefined;
    }, { what: 'the first failure counted' });
    expect(first).toMatchObject({ consecutiveFailures: 1, status: 'active', pausedReason: null });
    const paused = await eventually(async () => {
      const r = (await tenant.api.get(`/v1/jobs/${j.jobId}`)).body;
      return r.status === 'paused' ? r : undefined;
    }, { what: 'the job to pause' });
    expect(paused).toMatchObject({ pausedReason: 'consecutive_failures', consecutiveFailures: 2, pauseAfterFailures: 2 });
    const failedRuns = (await tenant.api.get(`/v1/jobs/${j.jobId}/runs?status=failed`)).body.runs;
    expect(failedRuns).toHaveLength(2);
    const e = await eventually(() => events('/paused').find((x) => x.data.job.jobId === j.jobId), { what: 'job.paused' });
    expect(e.data.reason).toBe('consecutive_failures');
    const resumed = await tenant.api.request('PATCH', `/v1/jobs/${j.jobId}`, { paused: false });
    expect(resumed.body).toMatchObject({ status: 'active', pausedReason: null, consecutiveFailures: 0 });
    expect((await tenant.api.request('PATCH', `/v1/jobs/${j.jobId}`, { paused: true })).body).toMatchObject({ status: 'paused', pausedReason: 'manual' });
  });

  it('an endpoint answering 500 is retried, its history shows it, and callbacks keep flowing meanwhile', async () => {
    let answered = 0;
    notificationReplies.set('/flaky', () => (++answered <= 1 ? { status: 500, body: 'busy' } : { status: 200 }));
    const flaky = await endpoint('/flaky', ['run.failed']);
    await job('/fail-flaky');
    // While the endpoint fails, the tenant's other callbacks are delivered.
    const oks = await Promise.all([1, 2, 3].map(() => job('/ok')));
    await eventually(async () => {
      const statuses = await Promise.all(oks.map(async (o) => (await tenant.api.get(`/v1/jobs/${o.jobId}/runs`)).body.runs[0]?.status));
      return statuses.every((s) => s === 'succeeded');
    }, { what: 'the other callbacks to succeed' });
    const deliveries = await eventually(async () => {
      const d = (await tenant.api.get(`/v1/notification-endpoints/${flaky.endpointId}/deliveries`)).body.deliveries;
      return d.length === 1 && d[0].status === 'succeeded' ? d : undefined;
    }, { what: 'the delivery to succeed on a retry', timeoutMs: 20_000 });
    expect(deliveries[0]).toMatchObject({ type: 'run.failed', attempts: 2, responseStatus: 200 });
    const tries = notifications.received.filter((r) => r.path === '/flaky');
    expect(tries).toHaveLength(2);
    expect(tries[0]!.headers['webhook-id']).toBe(tries[1]!.headers['webhook-id']);
    expect(tries[0]!.headers['webhook-id']).toBe(deliveries[0].eventId);
    // A delivery is the endpoint's, not one of the tenant's runs: not read, not replayed as a run.
    expect((await tenant.api.get(`/v1/runs/${deliveries[0].deliveryId}`)).status).toBe(404);
    expect((await tenant.api.post(`/v1/runs/${deliveries[0].deliveryId}/replay`)).status).toBe(404);
  }, 30_000);

  it('a dispatcher SIGKILLed between a dead letter and its notification delivers it after the restart', async () => {
    let calls = 0;
    // The first delivery hangs: the dead letter is committed, its notification is in flight when the process dies.
    notificationReplies.set('/crash', () => (++calls === 1 ? { status: 200, hang: true } : { status: 200 }));
    await endpoint('/crash', ['run.failed']);
    const j = await job('/fail-crash');
    const first = await eventually(() => notifications.received.find((r) => r.path === '/crash'), { what: 'the notification in flight' });
    expect(await chime.stop('SIGKILL')).toBeNull();
    chime = await startChime({ ...env(), PORT: String(chime.port) });
    const again = await eventually(
      () => notifications.received.filter((r) => r.path === '/crash')[1],
      { what: 'the notification re-sent after the restart', timeoutMs: 30_000 },
    );
    expect(again.headers['webhook-id']).toBe(first.headers['webhook-id']);
    const e = JSON.parse(again.body) as Event;
    expect(e).toMatchObject({ type: 'run.failed', data: { job: { jobId: j.jobId }, run: { status: 'failed' } } });
  }, 60_000);
});
