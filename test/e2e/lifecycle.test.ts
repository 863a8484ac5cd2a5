/**
 * The job lifecycle over real HTTP against the real process: pause/resume, trigger, cancel, upsert by key,
 * schedule preview, and catch-up after dispatcher downtime.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { type FreshDatabase, freshDatabase, WITH_CITUS } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

type Run = { runId: string; status: string; scheduledFor: string; trigger: string };

describe.each(WITH_CITUS)('job lifecycle on $kind', (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let receiver: Receiver;
  let tenant: TestTenant;
  const hits = (path: string) => receiver.received.filter((r) => r.path === path);
  const runsOf = async (jobId: string): Promise<Run[]> => (await tenant.api.get(`/v1/jobs/${jobId}/runs?limit=100`)).body.runs;

  beforeAll(async () => {
    db = await freshDatabase(target);
    chime = await startChime(db.env);
    receiver = await startReceiver();
    tenant = await createTestTenant(chime.url, 'acme');
  });
  afterAll(async () => {
    await chime?.stop();
    await receiver?.close();
    await db?.drop();
  });

  it('pauses (no new runs), triggers while paused, resumes from the next occurrence, and cancels', async () => {
    const job = (
      await tenant.api.post('/v1/jobs', { schedule: { type: 'interval', everyMs: 1000 }, callback: { url: `${receiver.url}/interval` } })
    ).body;
    await eventually(() => hits('/interval').length >= 2, { what: 'two interval callbacks' });

    const paused = await tenant.api.request('PATCH', `/v1/jobs/${job.jobId}`, { paused: true });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ status: 'paused', nextRunAt: null });
    // No run is waiting any more: every run is final or was in flight when the pause came.
    const afterPause = await runsOf(job.jobId);
    expect(afterPause.filter((r) => r.status === 'scheduled')).toEqual([]);
    const countAtPause = hits('/interval').length;

    const trig = await tenant.api.post(`/v1/jobs/${job.jobId}/trigger`);
    expect(trig.status).toBe(202);
    await eventually(async () => (await runsOf(job.jobId)).find((r) => r.runId === trig.body.runId && r.status === 'succeeded'), {
      what: 'the manual run',
    });
    const manual = hits('/interval').filter((h) => h.headers['webhook-id'] === trig.body.runId);
    expect(manual).toHaveLength(1);
    // The pause held: only the manual run (and at most one in flight at pause time) arrived.
    expect(hits('/interval').length).toBeLessThanOrEqual(countAtPause + 2);

    const resumed = await tenant.api.request('PATCH', `/v1/jobs/${job.jobId}`, { paused: false });
    expect(resumed.body.status).toBe('active');
    expect(Date.parse(resumed.body.nextRunAt)).toBeGreaterThan(Date.parse(resumed.body.updatedAt) - 1);
    const countAtResume = hits('/interval').length;
    await eventually(() => hits('/interval').length >= countAtResume + 2, { what: 'callbacks after resume' });

    expect((await tenant.api.request('DELETE', `/v1/jobs/${job.jobId}`)).status).toBe(204);
    const canceled = await tenant.api.get(`/v1/jobs/${job.jobId}`);
    expect(canceled.body.status).toBe('canceled');
    const runs = await runsOf(job.jobId);
    expect(runs.some((r) => r.status === 'scheduled' || r.status === 'retrying')).toBe(false);
    expect(runs.some((r) => r.status === 'succeeded')).toBe(true); // history kept
    expect((await tenant.api.post(`/v1/jobs/${job.jobId}/trigger`)).status).toBe(409);
  });

  it('upserts by key: the same job registered twice is one job', async () => {
    const body = { schedule: { type: 'delay', delayMs: 3_600_000 }, callback: { url: `${receiver.url}/keyed` } };
    const first = await tenant.api.request('PUT', '/v1/jobs/by-key/report-eu', body);
    expect(first.status).toBe(201);
    const second = await tenant.api.request('PUT', '/v1/jobs/by-key/report-eu', {
      ...body,
      name: 'renamed',
      schedule: { type: 'delay', delayMs: 7_200_000 },
    });
    expect(second.status).toBe(200);
    expect(second.body.jobId).toBe(first.body.jobId);
    expect(second.body.name).toBe('renamed');
    const runs = await runsOf(first.body.jobId);
    expect(runs.filter((r) => r.status === 'scheduled')).toHaveLength(1);
    expect(runs.find((r) => r.status === 'scheduled')!.scheduledFor).toBe(second.body.nextRunAt);
    const clash = await tenant.api.post('/v1/jobs', { ...body, key: 'report-eu' });
    expect(clash.status).toBe(409);
    const list = await tenant.api.get('/v1/jobs');
    expect(list.body.jobs.filter((j: { key: string }) => j.key === 'report-eu')).toHaveLength(1);
  });

  it('previews a cron schedule in a time zone', async () => {
    const r = await tenant.api.post('/v1/schedules/preview', {
      schedule: { type: 'cron', expression: '0 9 * * 1', timezone: 'Europe/Berlin', startAt: '2027-01-01T00:00:00Z' },
      count: 3,
    });
    expect(r.status).toBe(200);
    expect(r.body.occurrences).toEqual(['2027-01-04T08:00:00.000Z', '2027-01-11T08:00:00.000Z', '2027-01-18T08:00:00.000Z']);
    const bad = await tenant.api.post('/v1/schedules/preview', { schedule: { type: 'cron', expression: '0 0 30 2 *' } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].path).toBe('schedule.expression');
  });
});

describe.each(WITH_CITUS)('catch-up after downtime on $kind', (target) => {
  it('creates the runs each catchUp policy asks for', async () => {
    const db = await freshDatabase(target);
    const receiver = await startReceiver();
    let chime = await startChime(db.env);
    try {
      const tenant = await createTestTenant(chime.url, 'acme');
      const jobs: Record<string, string> = {};
      const startAt = new Date(Date.now() + 2000).toISOString();
      for (const catchUp of ['all', 'one', 'none']) {
        const r = await tenant.api.post('/v1/jobs', {
          schedule: { type: 'interval', everyMs: 1000, startAt },
          callback: { url: `${receiver.url}/${catchUp}` },
          catchUp,
        });
        expect(r.status).toBe(201);
        jobs[catchUp] = r.body.jobId;
      }
      // The service goes down before the first occurrence; four occurrences (startAt + 0..3 s) pass meanwhile.
      expect(await chime.stop()).toBe(0);
      expect(Date.now()).toBeLessThan(Date.parse(startAt));
      await eventually(() => Date.now() > Date.parse(startAt) + 3500, { timeoutMs: 10_000, what: 'the downtime' });
      const restartAt = Date.now();
      chime = await startChime({ ...db.env, PORT: String(chime.port) });
      const missed = async (id: string) => {
        const runs: Run[] = (await tenant.api.get(`/v1/jobs/${id}/runs?limit=100`)).body.runs;
        return runs.filter((r) => Date.parse(r.scheduledFor) < restartAt - 100);
      };
      await eventually(async () => (await missed(jobs.all!)).filter((r) => r.status === 'succeeded').length >= 4, { what: 'catchUp all' });
      await eventually(async () => (await missed(jobs.none!)).some((r) => r.status === 'skipped'), { what: 'catchUp none' });
      await eventually(async () => (await missed(jobs.one!)).some((r) => r.status === 'succeeded'), { what: 'catchUp one' });
      // After the catch-up, each job is back on its schedule with one waiting occurrence in the future.
      await eventually(
        async () => {
          const runs: Run[] = (await tenant.api.get(`/v1/jobs/${jobs.one}/runs?limit=100`)).body.runs;
          return runs.some((r) => r.status === 'scheduled' && Date.parse(r.scheduledFor) > restartAt);
        },
        { what: 'the schedule to resume' },
      );
      expect((await missed(jobs.one!)).filter((r) => r.status === 'succeeded')).toHaveLength(1);
      expect((await missed(jobs.none!)).filter((r) => r.status === 'succeeded')).toHaveLength(0);
      expect((await missed(jobs.all!)).filter((r) => r.status === 'succeeded').length).toBe(4);
    } finally {
      await chime.stop();
      await receiver.close();
      await db.drop();
    }
  }, 90_000);
});
