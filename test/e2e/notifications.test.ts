/**
 * Notifications and automatic pauses (API.md "Notification endpoints", "Tenant operations"; docs/design.md invariant 11),
 * with the real process and real receivers on 127.0.0.1, on every database target: a dead letter reaches the
 * tenant's notification endpoint as `run.failed`, signed with the tenant's secret (checked with the
 * `standardwebhooks` package); a 410 pauses the job (`gone`) and says so; `pauseAfterFailures` pauses after that
 * many failed runs in a row, not before; an endpoint that answers 500 is retried with its history kept while the
 * tenant's callbacks keep flowing, also while one hangs or keeps failing; a run past its relevancy window is
 * `run.expired` (and no failure toward `pauseAfterFailures`); a job with no occurrence left is `job.completed`, whether
 * its last run succeeded or a resume found none left; and a dispatcher SIGKILLed between a dead letter and its
 * notification still delivers the notification once restarted.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Received, type Receiver, type Reply, startReceiver } from '../support/receiver.ts';

const NO_RETRY = { strategy: 'none' } as const;
type Event = {
  type: string;
  eventId: string;
  occurredAt: string;
  data: { job: { jobId: string; status: string; pausedReason: string | null }; run?: { runId: string; status: string }; reason?: string };
};

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

  const endpoint = async (path: string, events: string[], t: TestTenant = tenant) => {
    const r = await t.api.post('/v1/notification-endpoints', { url: `${notifications.url}${path}`, events, description: path });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body as { endpointId: string };
  };
  const job = async (path: string, extra: Record<string, unknown> = {}, t: TestTenant = tenant) => {
    const r = await t.api.post('/v1/jobs', {
      schedule: { type: 'delay', delayMs: 0 },
      callback: { url: `${callbacks.url}${path}` },
      retry: NO_RETRY,
      ...extra,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body as { jobId: string };
  };
  /** The status of each job's first run, once every one of them is final (undefined before). */
  const finalStatuses = async (jobIds: string[], t: TestTenant = tenant) => {
    const statuses = await Promise.all(
      jobIds.map(async (id) => (await t.api.get(`/v1/jobs/${id}/runs`)).body.runs.at(-1)?.status as string | undefined),
    );
    return statuses.every((s) => s && !['scheduled', 'running', 'retrying'].includes(s)) ? statuses : undefined;
  };
  const events = (path: string): Event[] => notifications.received.filter((r) => r.path === path).map((r) => JSON.parse(r.body));

  it('a dead letter reaches the endpoint as run.failed within 2 s, signed with the tenant secret', async () => {
    const failedEndpoint = await endpoint('/failed', ['run.failed']);
    const j = await job('/fail-once');
    const failedAt = await eventually(
      async () => {
        const runs = (await tenant.api.get(`/v1/jobs/${j.jobId}/runs`)).body.runs;
        return runs[0]?.status === 'failed' ? Date.parse(runs[0].finishedAt) : undefined;
      },
      { what: 'the run to dead-letter' },
    );
    const got = await eventually(() => notifications.received.find((r) => r.path === '/failed'), {
      what: 'the run.failed notification',
      timeoutMs: 5_000,
    });
    // From the dead letter's finishedAt (the dispatcher's clock: the same machine) to the notification's arrival.
    expect(got.at - failedAt, 'notified within 2 s of the dead letter').toBeLessThan(2_000);
    expect(got.at).toBeGreaterThanOrEqual(failedAt);
    // Verifiable as any Standard Webhooks receiver would; webhook-id is the event id.
    const verified = new Webhook(tenant.signingSecret).verify(got.body, got.headers as Record<string, string>) as Event;
    expect(verified.type).toBe('run.failed');
    expect(got.headers['webhook-id']).toBe(verified.eventId);
    expect(got.headers['chime-signature']).toMatch(/^ey/);
    // The delivery is a run of the endpoint's hidden job, which is nobody's business: no Chime-Job-Id (nor its due
    // time) names it; Chime-Run-Id is the delivery's id, as its history shows it.
    expect(got.headers['chime-job-id']).toBeUndefined();
    expect(got.headers['chime-scheduled-for']).toBeUndefined();
    expect(got.headers['chime-attempt']).toBe('1');
    const [delivery] = (await tenant.api.get(`/v1/notification-endpoints/${failedEndpoint.endpointId}/deliveries`)).body.deliveries;
    expect(got.headers['chime-run-id']).toBe(delivery.deliveryId);
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
    const first = await eventually(
      async () => {
        const r = (await tenant.api.get(`/v1/jobs/${j.jobId}`)).body;
        return r.consecutiveFailures >= 1 ? r : undefined;
      },
      { what: 'the first failure counted' },
    );
    expect(first).toMatchObject({ consecutiveFailures: 1, status: 'active', pausedReason: null });
    const paused = await eventually(
      async () => {
        const r = (await tenant.api.get(`/v1/jobs/${j.jobId}`)).body;
        return r.status === 'paused' ? r : undefined;
      },
      { what: 'the job to pause' },
    );
    expect(paused).toMatchObject({ pausedReason: 'consecutive_failures', consecutiveFailures: 2, pauseAfterFailures: 2 });
    const failedRuns = (await tenant.api.get(`/v1/jobs/${j.jobId}/runs?status=failed`)).body.runs;
    expect(failedRuns).toHaveLength(2);
    const e = await eventually(() => events('/paused').find((x) => x.data.job.jobId === j.jobId), { what: 'job.paused' });
    expect(e.data.reason).toBe('consecutive_failures');
    const resumed = await tenant.api.request('PATCH', `/v1/jobs/${j.jobId}`, { paused: false });
    expect(resumed.body).toMatchObject({ status: 'active', pausedReason: null, consecutiveFailures: 0 });
    expect((await tenant.api.request('PATCH', `/v1/jobs/${j.jobId}`, { paused: true })).body).toMatchObject({
      status: 'paused',
      pausedReason: 'manual',
    });
  });

  it('an endpoint answering 500 is retried, its history shows it, and callbacks keep flowing meanwhile', async () => {
    let answered = 0;
    notificationReplies.set('/flaky', () => (++answered <= 1 ? { status: 500, body: 'busy' } : { status: 200 }));
    const flaky = await endpoint('/flaky', ['run.failed']);
    await job('/fail-flaky');
    // While the endpoint fails, the tenant's other callbacks are delivered.
    const oks = await Promise.all([1, 2, 3].map(() => job('/ok')));
    await eventually(
      async () => {
        const statuses = await Promise.all(oks.map(async (o) => (await tenant.api.get(`/v1/jobs/${o.jobId}/runs`)).body.runs[0]?.status));
        return statuses.every((s) => s === 'succeeded');
      },
      { what: 'the other callbacks to succeed' },
    );
    const deliveries = await eventually(
      async () => {
        const d = (await tenant.api.get(`/v1/notification-endpoints/${flaky.endpointId}/deliveries`)).body.deliveries;
        return d.length === 1 && d[0].status === 'succeeded' ? d : undefined;
      },
      { what: 'the delivery to succeed on a retry', timeoutMs: 20_000 },
    );
    expect(deliveries[0]).toMatchObject({ type: 'run.failed', attempts: 2, responseStatus: 200 });
    const tries = notifications.received.filter((r) => r.path === '/flaky');
    expect(tries).toHaveLength(2);
    expect(tries[0]!.headers['webhook-id']).toBe(tries[1]!.headers['webhook-id']);
    expect(tries[0]!.headers['webhook-id']).toBe(deliveries[0].eventId);
    // A delivery is the endpoint's, not one of the tenant's runs: not read, not replayed as a run.
    expect((await tenant.api.get(`/v1/runs/${deliveries[0].deliveryId}`)).status).toBe(404);
    expect((await tenant.api.post(`/v1/runs/${deliveries[0].deliveryId}/replay`)).status).toBe(404);
  }, 30_000);

  it('an endpoint that hangs, then keeps answering 500, never delays callbacks of the same tenant; its history shows the retries', async () => {
    const own = await createTestTenant(chime.url, 'endpoint-down');
    let answered = 0;
    // The first delivery hangs until the dispatcher's 10 s timeout; every later one is refused.
    notificationReplies.set('/down', () => (++answered === 1 ? { status: 200, hang: true } : { status: 500, body: 'still down' }));
    const down = await endpoint('/down', ['run.failed'], own);
    const deliveries = async () => (await own.api.get(`/v1/notification-endpoints/${down.endpointId}/deliveries`)).body.deliveries;
    await job('/fail-down', {}, own);
    await eventually(() => notifications.received.find((r) => r.path === '/down'), { what: 'the delivery in flight' });

    // While the delivery hangs, the tenant's callbacks go out and succeed.
    const whileHanging = await Promise.all([1, 2, 3].map(() => job('/ok-while-hanging', {}, own)));
    expect(
      await eventually(
        () =>
          finalStatuses(
            whileHanging.map((o) => o.jobId),
            own,
          ),
        { what: 'the callbacks during the hang' },
      ),
    ).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(await deliveries()).toMatchObject([{ type: 'run.failed', status: 'running', attempts: 1 }]);

    // The hang times out; the retry is answered 500: the delivery waits for its next try, and says why.
    const retrying = await eventually(
      async () => {
        const [d] = await deliveries();
        return d.status === 'retrying' && d.attempts >= 2 ? d : undefined;
      },
      { what: 'the delivery retried and failed again', timeoutMs: 30_000 },
    );
    expect(retrying).toMatchObject({ responseStatus: 500, finishedAt: null, nextAttemptAt: expect.any(String) });
    expect(notifications.received.filter((r) => r.path === '/down').length).toBeGreaterThanOrEqual(2);

    // Still retrying, and callbacks still flow.
    const whileRetrying = await Promise.all([1, 2, 3].map(() => job('/ok-while-retrying', {}, own)));
    expect(
      await eventually(
        () =>
          finalStatuses(
            whileRetrying.map((o) => o.jobId),
            own,
          ),
        { what: 'the callbacks during the retries' },
      ),
    ).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect((await deliveries())[0]).toMatchObject({ status: 'retrying' });
    // Done: the endpoint goes, and its waiting delivery with it.
    expect((await own.api.request('DELETE', `/v1/notification-endpoints/${down.endpointId}`)).status).toBe(204);
  }, 60_000);

  it('a run past its relevancy window reaches the endpoint as run.expired; expiries are not failures in a row', async () => {
    await endpoint('/expired', ['run.expired']);
    // Each run fails once and its retry (3 s later) would be past the 1 s window: it ends expired, never failed.
    const j = await job('/fail-expiring', {
      schedule: { type: 'interval', everyMs: 1_000 },
      retry: { strategy: 'fixed', maxAttempts: 5, initialDelayMs: 3_000, jitter: false },
      relevancyWindowMs: 1_000,
      pauseAfterFailures: 1,
    });
    const expired = await eventually(
      () => {
        const mine = events('/expired').filter((e) => e.data.job.jobId === j.jobId);
        return mine.length >= 2 ? mine : undefined;
      },
      { what: 'two run.expired events', timeoutMs: 20_000 },
    );
    const runs = (await tenant.api.get(`/v1/jobs/${j.jobId}/runs?status=expired`)).body.runs.map((r: { runId: string }) => r.runId);
    for (const e of expired) {
      expect(e).toMatchObject({ type: 'run.expired', data: { run: { status: 'expired' } } });
      expect(runs).toContain(e.data.run!.runId);
    }
    // With pauseAfterFailures: 1, one counted expiry would have paused the job.
    expect((await tenant.api.get(`/v1/jobs/${j.jobId}`)).body).toMatchObject({
      status: 'active',
      consecutiveFailures: 0,
      pausedReason: null,
    });
    expect((await tenant.api.get(`/v1/jobs/${j.jobId}/runs?status=failed`)).body.runs).toEqual([]);
    expect((await tenant.api.request('PATCH', `/v1/jobs/${j.jobId}`, { paused: true })).status).toBe(200);
  }, 30_000);

  it('a once job whose run succeeds is job.completed', async () => {
    await endpoint('/completed', ['job.completed']);
    const j = await job('/ok-once', { schedule: { type: 'once', at: new Date(Date.now() + 500).toISOString() } });
    const e = await eventually(() => events('/completed').find((x) => x.data.job.jobId === j.jobId), { what: 'job.completed' });
    expect(e).toMatchObject({ type: 'job.completed', data: { job: { jobId: j.jobId, status: 'completed' } } });
    expect(e.data.run).toBeUndefined();
    expect(await eventually(() => finalStatuses([j.jobId]), { what: 'the run' })).toEqual(['succeeded']);
    expect((await tenant.api.get(`/v1/jobs/${j.jobId}`)).body).toMatchObject({ status: 'completed', nextRunAt: null });
  });

  it('a resume that finds no occurrence left completes the job, and job.completed says so', async () => {
    // Subscribed by the test above; this job's only date passes while it is paused.
    const at = Date.now() + 3_000;
    const j = await job('/ok-never', { schedule: { type: 'dates', dates: [new Date(at).toISOString()] } });
    expect((await tenant.api.request('PATCH', `/v1/jobs/${j.jobId}`, { paused: true })).body).toMatchObject({ status: 'paused' });
    await eventually(() => Date.now() > at, { what: 'the only date to pass', timeoutMs: 10_000, intervalMs: 100 });
    const resumed = await tenant.api.request('PATCH', `/v1/jobs/${j.jobId}`, { paused: false });
    expect(resumed.body).toMatchObject({ status: 'completed', nextRunAt: null, pausedReason: null });
    const e = await eventually(() => events('/completed').find((x) => x.data.job.jobId === j.jobId), {
      what: 'job.completed after the resume',
    });
    expect(e.data.job).toMatchObject({ status: 'completed', pausedReason: null });
    // Once: a later change of a completed job is no new event (nothing to re-plan into).
    expect((await tenant.api.request('PATCH', `/v1/jobs/${j.jobId}`, { jitterMs: 10 })).body.status).toBe('completed');
    expect(callbacks.received.filter((r) => r.path === '/ok-never')).toEqual([]);
    const sent = await eventually(
      async () => {
        const d = (await tenant.api.get('/v1/notification-endpoints')).body.endpoints.find((x: { url: string }) =>
          x.url.endsWith('/completed'),
        );
        const list = (await tenant.api.get(`/v1/notification-endpoints/${d.endpointId}/deliveries?limit=100`)).body.deliveries as {
          status: string;
        }[];
        return list.every((x) => x.status === 'succeeded') ? list : undefined;
      },
      { what: 'the deliveries to finish' },
    );
    expect(events('/completed').filter((x) => x.data.job.jobId === j.jobId)).toHaveLength(1);
    expect(sent.length).toBe(events('/completed').length);
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
    const again = await eventually(() => notifications.received.filter((r) => r.path === '/crash')[1], {
      what: 'the notification re-sent after the restart',
      timeoutMs: 30_000,
    });
    expect(again.headers['webhook-id']).toBe(first.headers['webhook-id']);
    const e = JSON.parse(again.body) as Event;
    expect(e).toMatchObject({ type: 'run.failed', data: { job: { jobId: j.jobId }, run: { status: 'failed' } } });
  }, 60_000);
});
