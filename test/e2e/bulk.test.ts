/**
 * Bulk work (API.md "Tenant operations") with the real process and a real receiver on 127.0.0.1, on every database
 * target: 2,500 dead letters made by a receiver that was down are replayed over three calls once it is back, with
 * `remaining` counting down, and each is delivered once; a bulk pause by metadata changes only the calling tenant's
 * matching jobs, and a bulk resume brings them back with their next runs planned.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

const DEAD_LETTERS = 2_500;
const BATCH = 1_000;

/** Every item of a list, walked page by page at 100 per page. */
async function walk<T>(api: Api, path: string, field: string): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | null = null;
  do {
    const r: { status: number; body: any } = await api.get(
      `${path}${path.includes('?') ? '&' : '?'}limit=100${cursor ? `&cursor=${cursor}` : ''}`,
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    out.push(...r.body[field]);
    cursor = r.body.nextCursor;
  } while (cursor !== null);
  return out;
}

describe.each(DATABASE_TARGETS)('bulk work on $kind', (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let receiver: Receiver;
  let tenant: TestTenant;
  /** The receiver answers 500 until healed. */
  let healed = false;

  beforeAll(async () => {
    db = await freshDatabase(target);
    receiver = await startReceiver(() => (healed ? { status: 200 } : { status: 500, body: 'down' }));
    chime = await startChime({ ...db.env, CHIME_RATE_LIMIT_PER_SECOND: '0' });
    tenant = await createTestTenant(chime.url, 'bulk');
  });
  afterAll(async () => {
    await chime?.stop();
    await receiver?.close();
    await db?.drop();
  });

  it(`replays ${DEAD_LETTERS} dead letters over three calls, remaining counting down, each delivered once`, async () => {
    const jobIds: string[] = [];
    for (let i = 0; i < DEAD_LETTERS; i += BATCH) {
      const jobs = Array.from({ length: Math.min(BATCH, DEAD_LETTERS - i) }, () => ({
        schedule: { type: 'delay', delayMs: 0 },
        callback: { url: `${receiver.url}/outage` },
        retry: { strategy: 'none' },
      }));
      const r = await tenant.api.post('/v1/jobs/batch', { jobs });
      expect(r.status).toBe(200);
      const results: { status: number; job: { jobId: string } }[] = r.body.results;
      expect(results.filter((x) => x.status !== 201)).toEqual([]);
      jobIds.push(...results.map((x) => x.job.jobId));
    }
    await receiver.waitFor(DEAD_LETTERS, 120_000);
    const dead = await eventually(
      async () => {
        const letters = await walk<{ runId: string; jobId: string }>(tenant.api, '/v1/dead-letters', 'runs');
        return letters.length === DEAD_LETTERS ? letters : undefined;
      },
      { what: `${DEAD_LETTERS} dead letters`, timeoutMs: 60_000 },
    );
    expect(new Set(dead.map((d) => d.jobId))).toEqual(new Set(jobIds));

    healed = true;
    const before = receiver.received.length;
    const calls = [];
    for (let i = 0; i < 3; i++) calls.push((await tenant.api.post('/v1/dead-letters/replay', {})).body);
    expect(calls.map((c) => [c.replayed, c.remaining])).toEqual([
      [1_000, 1_500],
      [1_000, 500],
      [500, 0],
    ]);
    const replayRuns: string[] = calls.flatMap((c) => c.runIds);
    expect(new Set(replayRuns).size).toBe(DEAD_LETTERS);
    expect((await tenant.api.post('/v1/dead-letters/replay', {})).body).toEqual({ replayed: 0, runIds: [], remaining: 0 });
    expect((await tenant.api.get('/v1/dead-letters')).body.runs).toEqual([]);

    // Each replay is delivered once, one per job; none of the first failures is sent again.
    await receiver.waitFor(before + DEAD_LETTERS, 120_000);
    const delivered = receiver.received.slice(before);
    expect(new Set(delivered.map((r) => r.headers['chime-run-id'])).size).toBe(DEAD_LETTERS);
    expect(new Set(delivered.map((r) => r.headers['chime-run-id']))).toEqual(new Set(replayRuns));
    expect(new Set(delivered.map((r) => r.headers['chime-job-id']))).toEqual(new Set(jobIds));
    const succeeded = await eventually(
      async () => {
        const runs = await walk<{ runId: string; trigger: string }>(tenant.api, '/v1/runs?status=succeeded', 'runs');
        return runs.length === DEAD_LETTERS ? runs : undefined;
      },
      { what: 'every replay recorded succeeded', timeoutMs: 60_000 },
    );
    expect(succeeded.every((r) => r.trigger === 'replay')).toBe(true);
    // The dead letters keep their history: still failed, now dismissed.
    const failed = await walk<{ runId: string; dismissedAt: string | null }>(tenant.api, '/v1/runs?status=failed', 'runs');
    expect(failed.map((r) => r.runId).sort()).toEqual(dead.map((d) => d.runId).sort());
    expect(failed.every((r) => r.dismissedAt !== null)).toBe(true);
    expect(receiver.received.length).toBe(before + DEAD_LETTERS);
  }, 300_000);

  it("pauses by metadata only the calling tenant's matching jobs, and resumes them", async () => {
    const other = await createTestTenant(chime.url, 'bystander');
    const make = async (t: TestTenant, team: string, n: number) => {
      const jobs = Array.from({ length: n }, (_, i) => ({
        name: `${team}-${i}`,
        schedule: { type: 'cron', expression: '0 9 * * *', timezone: 'Europe/Paris' },
        callback: { url: `${receiver.url}/daily` },
        metadata: { team, env: 'prod' },
      }));
      const r = await t.api.post('/v1/jobs/batch', { jobs });
      expect(r.status).toBe(200);
      return r.body.results.map((x: { job: { jobId: string } }) => x.job.jobId) as string[];
    };
    const ops = await make(tenant, 'ops', 12);
    const web = await make(tenant, 'web', 20);
    const othersOps = await make(other, 'ops', 7);

    const pause = await tenant.api.post('/v1/jobs/bulk', { action: 'pause', filter: { metadata: { team: 'ops', env: 'prod' } } });
    expect(pause.status).toBe(200);
    expect(pause.body).toEqual({ matched: 12, changed: 12 });

    const statusOf = async (api: Api, ids: string[]) =>
      Promise.all(
        ids.map(
          async (id) => (await api.get(`/v1/jobs/${id}`)).body as { status: string; pausedReason: string | null; nextRunAt: string | null },
        ),
      );
    for (const j of await statusOf(tenant.api, ops)) expect(j).toMatchObject({ status: 'paused', pausedReason: 'manual', nextRunAt: null });
    for (const j of await statusOf(tenant.api, web)) expect(j).toMatchObject({ status: 'active', pausedReason: null });
    for (const j of await statusOf(other.api, othersOps)) expect(j).toMatchObject({ status: 'active', pausedReason: null });
    // The list filters agree with what changed.
    const pausedListed = await walk<{ jobId: string }>(tenant.api, '/v1/jobs?status=paused&metadata.team=ops', 'jobs');
    expect(pausedListed.map((j) => j.jobId).sort()).toEqual([...ops].sort());

    expect((await tenant.api.post('/v1/jobs/bulk', { action: 'pause', filter: { metadata: { team: 'ops' } } })).body).toEqual({
      matched: 12,
      changed: 0,
    });
    const resume = await tenant.api.post('/v1/jobs/bulk', { action: 'resume', filter: { q: 'ops-', status: 'paused' } });
    expect(resume.body).toEqual({ matched: 12, changed: 12 });
    for (const j of await statusOf(tenant.api, ops)) {
      expect(j).toMatchObject({ status: 'active', pausedReason: null });
      expect(Date.parse(j.nextRunAt!)).toBeGreaterThan(Date.now());
    }

    const empty = await tenant.api.post('/v1/jobs/bulk', { action: 'cancel', filter: {} });
    expect(empty.status).toBe(400);
    expect(empty.body.errors).toEqual([{ path: 'filter', message: expect.stringContaining('at least one') }]);
    for (const j of await statusOf(tenant.api, web)) expect(j.status).toBe('active');
  }, 60_000);
});
