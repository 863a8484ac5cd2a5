/**
 * Job search (`GET /v1/jobs?q=&metadata.<key>=`) and the tenant-wide runs feed (`GET /v1/runs`), over HTTP in process,
 * on each database target: what each filter matches (and what it must not: LIKE wildcards, another tenant's jobs,
 * the hidden jobs that deliver notifications), filters combined, pages walked to the end, and 400 problem+json naming
 * each bad parameter. The plans that serve these lists are checked in test/store/search-plan.test.ts.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.ts';
import { query } from '../../src/store/db.ts';
import type { Api, TestTenant } from '../support/api.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { T0 } from '../support/store.ts';

const HOUR = 3_600_000;
const at = (ms: number) => new Date(ms).toISOString();

/** A job body due once at `T0 + hours` with the given name, key and metadata. */
const jobBody = (o: { name?: string; key?: string; metadata?: Record<string, string>; hours?: number } = {}) => ({
  schedule: { type: 'once', at: at(T0 + (o.hours ?? 1) * HOUR) },
  callback: { url: 'http://127.0.0.1:9/hook' },
  ...(o.name !== undefined ? { name: o.name } : {}),
  ...(o.key !== undefined ? { key: o.key } : {}),
  ...(o.metadata !== undefined ? { metadata: o.metadata } : {}),
});

/** Creates the jobs (one batch) and returns their ids in order. */
async function createJobs(api: Api, bodies: ReturnType<typeof jobBody>[]): Promise<string[]> {
  const r = await api.post('/v1/jobs/batch', { jobs: bodies });
  expect(r.status).toBe(200);
  return r.body.results.map((x: { status: number; job: { jobId: string } }) => {
    expect(x.status).toBe(201);
    return x.job.jobId;
  });
}

/** Every item of a list, page by page (`limit` per page), checking each page's size and the cursor's end. */
async function walk(api: Api, path: string, field: 'jobs' | 'runs', limit: number): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | null = null;
  const sep = path.includes('?') ? '&' : '?';
  for (let pages = 0; pages < 100; pages++) {
    const r: { status: number; body: any } = await api.get(`${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const items: { jobId: string; runId?: string }[] = r.body[field];
    out.push(...items.map((x) => (field === 'jobs' ? x.jobId : x.runId!)));
    cursor = r.body.nextCursor;
    if (cursor === null) return out;
    expect(items).toHaveLength(limit);
  }
  throw new Error('more than 100 pages');
}

/** The ids, newest first (UUID v7 order, which is PostgreSQL's uuid order on lower-case hex). */
const newestFirst = (ids: string[]) => [...ids].sort().reverse();

/** The job ids of `GET /v1/jobs<query>` (one page of up to 100). */
async function listed(api: Api, query: string): Promise<string[]> {
  const r = await api.get(`/v1/jobs${query}${query.includes('?') ? '&' : '?'}limit=100`);
  expect(r.status, `${query}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body.jobs.map((j: { jobId: string }) => j.jobId);
}

/** Expects a 400 problem+json whose errors name exactly `paths`. */
async function expectBadParams(api: Api, path: string, paths: string[]): Promise<void> {
  const r = await api.get(path);
  expect(r.status, path).toBe(400);
  expect(r.headers.get('content-type'), path).toBe('application/problem+json');
  expect(r.body, path).toMatchObject({ type: 'urn:chime:problem:validation', status: 400 });
  expect(r.body.errors.map((e: { path: string }) => e.path).sort(), path).toEqual([...paths].sort());
}

/** Adds a hidden notification job (`kind = 'notification'`) copied from `templateJobId`, named `name`, and a delivery run of it. */
async function addNotificationJob(app: TestApp, templateJobId: string, name: string): Promise<{ jobId: string; runId: string }> {
  const [job] = await query<{ id: string }>(
    app.database.db,
    sql`insert into jobs (shard, id, tenant_id, key, name, status, kind, schedule, callback, retry, delivery_mode, overlap_policy,
          catch_up, jitter_ms, metadata, created_at, updated_at)
        select shard, gen_random_uuid(), tenant_id, null, ${name}, 'active', 'notification', schedule, callback, retry, delivery_mode,
          overlap_policy, catch_up, jitter_ms, metadata, created_at, updated_at
        from jobs where id = ${templateJobId} returning id`,
  );
  const [run] = await query<{ id: string }>(
    app.database.db,
    sql`insert into runs (shard, id, tenant_id, job_id, scheduled_for, trigger, status, created_at)
        select shard, gen_random_uuid(), tenant_id, id, ${at(T0 + 2 * HOUR)}::timestamptz, 'notification', 'failed', now()
        from jobs where id = ${job!.id} returning id`,
  );
  return { jobId: job!.id, runId: run!.id };
}

describe.each(DATABASE_TARGETS)('job search and the runs feed ($kind)', (target) => {
  let app: TestApp;
  let a: TestTenant;
  let b: TestTenant;
  /** A's jobs by a short name. */
  const jobs: Record<string, string> = {};

  beforeAll(async () => {
    app = await startTestApp({}, { target, clock: new ManualClock(T0) });
    a = await app.tenant('a');
    b = await app.tenant('b');
    const specs: [string, ReturnType<typeof jobBody>][] = [
      ['nightlyReport', jobBody({ name: 'Nightly-Report', metadata: { team: 'ops', env: 'prod' } })],
      ['reportKey', jobBody({ key: 'REPORT-eu', metadata: { team: 'ops', env: 'staging' } })],
      ['backup', jobBody({ name: 'nightly-backup', key: 'backup-1', metadata: { team: 'data', env: 'prod' } })],
      ['percent', jobBody({ name: '100%-done', metadata: { team: 'ops' } })],
      ['percentLookalike', jobBody({ name: '1000-done' })],
      ['underscore', jobBody({ name: 'a_b', metadata: { env: 'prod' } })],
      ['underscoreLookalike', jobBody({ name: 'axb' })],
      ['backslash', jobBody({ name: 'back\\slash' })],
      ['backslashLookalike', jobBody({ name: 'backslash' })],
      ['split', jobBody({ name: 'foo', key: 'bar' })],
      ['accents', jobBody({ name: 'Été-ÉTÉ', metadata: { région: 'Île-de-France' } })],
      ['unnamed', jobBody({ metadata: { team: 'ops', env: 'prod' } })],
    ];
    const ids = await createJobs(
      a.api,
      specs.map(([, body]) => body),
    );
    specs.forEach(([short], i) => {
      jobs[short] = ids[i]!;
    });
    // B has jobs with the same names, keys and metadata: none may ever show in A's lists.
    await createJobs(
      b.api,
      specs.map(([, body]) => body),
    );
  });
  afterAll(() => app?.close());

  describe('GET /v1/jobs?q=', () => {
    it('matches a substring of the name or of the key, case-insensitively', async () => {
      expect(await listed(a.api, '?q=report')).toEqual(newestFirst([jobs.nightlyReport!, jobs.reportKey!]));
      expect(await listed(a.api, '?q=REPORT')).toEqual(newestFirst([jobs.nightlyReport!, jobs.reportKey!]));
      expect(await listed(a.api, '?q=rEpOrT-E')).toEqual([jobs.reportKey]);
      expect(await listed(a.api, '?q=NIGHTLY')).toEqual(newestFirst([jobs.nightlyReport!, jobs.backup!]));
      expect(await listed(a.api, '?q=backup-1')).toEqual([jobs.backup]); // the key only
      expect(await listed(a.api, '?q=n')).toContain(jobs.nightlyReport);
      expect(await listed(a.api, '?q=nothing-like-this')).toEqual([]);
    });

    it('matches within the name or within the key, never across the two', async () => {
      expect(await listed(a.api, '?q=foo')).toEqual([jobs.split]);
      expect(await listed(a.api, '?q=bar')).toEqual([jobs.split]);
      expect(await listed(a.api, '?q=foobar')).toEqual([]);
      expect(await listed(a.api, '?q=foo%20bar')).toEqual([]);
    });

    it('takes %, _ and \\ literally', async () => {
      expect(await listed(a.api, `?q=${encodeURIComponent('100%')}`)).toEqual([jobs.percent]);
      expect(await listed(a.api, `?q=${encodeURIComponent('%')}`)).toEqual([jobs.percent]);
      expect(await listed(a.api, '?q=a_b')).toEqual([jobs.underscore]);
      expect(await listed(a.api, '?q=_')).toEqual([jobs.underscore]);
      expect(await listed(a.api, `?q=${encodeURIComponent('k\\s')}`)).toEqual([jobs.backslash]);
      expect(await listed(a.api, `?q=${encodeURIComponent('\\')}`)).toEqual([jobs.backslash]);
    });

    it('matches non-ASCII text as written', async () => {
      expect(await listed(a.api, `?q=${encodeURIComponent('ÉTÉ')}`)).toEqual([jobs.accents]);
      expect(await listed(a.api, `?q=${encodeURIComponent('Été')}`)).toEqual([jobs.accents]);
    });

    it("never lists the tenant's hidden notification jobs", async () => {
      await addNotificationJob(app, jobs.nightlyReport!, 'report-notifications');
      expect(await listed(a.api, '?q=report')).toEqual(newestFirst([jobs.nightlyReport!, jobs.reportKey!]));
      expect(await listed(a.api, '?q=notifications')).toEqual([]);
      expect((await listed(a.api, '')).length).toBe(Object.keys(jobs).length);
    });
  });

  describe('GET /v1/jobs?metadata.<key>=<value>', () => {
    it('one pair', async () => {
      expect(await listed(a.api, '?metadata.team=ops')).toEqual(
        newestFirst([jobs.nightlyReport!, jobs.reportKey!, jobs.percent!, jobs.unnamed!]),
      );
      expect(await listed(a.api, '?metadata.env=prod')).toEqual(
        newestFirst([jobs.nightlyReport!, jobs.backup!, jobs.underscore!, jobs.unnamed!]),
      );
      expect(await listed(a.api, '?metadata.team=OPS')).toEqual([]); // values match exactly
      expect(await listed(a.api, '?metadata.owner=ops')).toEqual([]);
      expect(await listed(a.api, `?metadata.${encodeURIComponent('région')}=${encodeURIComponent('Île-de-France')}`)).toEqual([
        jobs.accents,
      ]);
    });

    it('two pairs: both must match', async () => {
      expect(await listed(a.api, '?metadata.team=ops&metadata.env=prod')).toEqual(newestFirst([jobs.nightlyReport!, jobs.unnamed!]));
      expect(await listed(a.api, '?metadata.env=staging&metadata.team=ops')).toEqual([jobs.reportKey]);
      expect(await listed(a.api, '?metadata.team=data&metadata.env=staging')).toEqual([]);
    });

    it('with q and status: every filter must match', async () => {
      const paused = await a.api.request('PATCH', `/v1/jobs/${jobs.unnamed}`, { paused: true });
      expect(paused.status).toBe(200);
      try {
        expect(await listed(a.api, '?metadata.team=ops&metadata.env=prod&status=paused')).toEqual([jobs.unnamed]);
        expect(await listed(a.api, '?metadata.team=ops&metadata.env=prod&status=active')).toEqual([jobs.nightlyReport]);
        expect(await listed(a.api, '?q=nightly&metadata.env=prod&status=active')).toEqual(newestFirst([jobs.nightlyReport!, jobs.backup!]));
        expect(await listed(a.api, '?q=nightly&metadata.team=ops&status=active')).toEqual([jobs.nightlyReport]);
        expect(await listed(a.api, '?q=nightly&metadata.team=ops&status=paused')).toEqual([]);
      } finally {
        expect((await a.api.request('PATCH', `/v1/jobs/${jobs.unnamed}`, { paused: false })).status).toBe(200);
      }
    });
  });

  it('pages through the matches of a filter, newest first, to the end', async () => {
    const tenant = await app.tenant('pager');
    const bodies = Array.from({ length: 17 }, (_, i) =>
      jobBody({ name: i % 3 === 0 ? `other-${i}` : `Paged-Job-${i}`, metadata: { batch: i % 2 === 0 ? 'even' : 'odd' } }),
    );
    const ids = await createJobs(tenant.api, bodies);
    const matching = (pred: (i: number) => boolean) => newestFirst(ids.filter((_, i) => pred(i)));
    const named = (i: number) => i % 3 !== 0;
    const even = (i: number) => i % 2 === 0;
    expect(await walk(tenant.api, '/v1/jobs?q=paged', 'jobs', 3)).toEqual(matching(named));
    expect(await walk(tenant.api, '/v1/jobs?metadata.batch=even', 'jobs', 4)).toEqual(matching(even));
    expect(await walk(tenant.api, '/v1/jobs?q=PAGED-job&metadata.batch=even&status=active', 'jobs', 2)).toEqual(
      matching((i) => named(i) && even(i)),
    );
    expect(await walk(tenant.api, '/v1/jobs?q=paged', 'jobs', 100)).toEqual(matching(named));
    // The other tenants' jobs named alike (none here) and theirs in A are never in this tenant's pages.
    expect(await walk(tenant.api, '/v1/jobs', 'jobs', 5)).toEqual(newestFirst(ids));
  });

  it("never shows another tenant's matching jobs", async () => {
    const bIds = new Set(await walk(b.api, '/v1/jobs', 'jobs', 100));
    expect(bIds.size).toBe(Object.keys(jobs).length);
    for (const query of [
      '?q=report',
      '?q=nightly',
      '?metadata.team=ops',
      '?metadata.team=ops&metadata.env=prod',
      '?q=a_b&metadata.env=prod',
      '',
    ]) {
      const fromA = await listed(a.api, query);
      expect(fromA.length, query).toBeGreaterThan(0);
      for (const id of fromA) expect(bIds.has(id), query).toBe(false);
      const fromB = await listed(b.api, query);
      expect(fromB.length, query).toBe(fromA.length);
      for (const id of fromB) expect(bIds.has(id), query).toBe(true);
    }
  });

  it('answers 400 problem+json naming each bad parameter', async () => {
    await expectBadParams(a.api, '/v1/jobs?q=', ['q']);
    await expectBadParams(a.api, `/v1/jobs?q=${'x'.repeat(201)}`, ['q']);
    await expectBadParams(a.api, '/v1/jobs?q=a%00b', ['q']);
    await expectBadParams(a.api, '/v1/jobs?metadata.=ops', ['metadata.']);
    await expectBadParams(a.api, '/v1/jobs?metadata=ops', ['metadata']);
    await expectBadParams(a.api, `/v1/jobs?metadata.team=${'v'.repeat(513)}`, ['metadata.team']);
    await expectBadParams(a.api, `/v1/jobs?metadata.${'k'.repeat(65)}=v`, [`metadata.${'k'.repeat(65)}`]);
    await expectBadParams(a.api, '/v1/jobs?metadata.team=a&metadata.team=b', ['metadata.team']);
    await expectBadParams(a.api, '/v1/jobs?metadata.team=a%00', ['metadata.team']);
    const many = Array.from({ length: 21 }, (_, i) => `metadata.k${i}=v`).join('&');
    await expectBadParams(a.api, `/v1/jobs?${many}`, ['metadata']);
    // Twenty pairs are fine (and match nothing here).
    expect(await listed(a.api, `?${Array.from({ length: 20 }, (_, i) => `metadata.k${i}=v`).join('&')}`)).toEqual([]);
    expect(await listed(a.api, `?metadata.team=${'v'.repeat(512)}`)).toEqual([]);
    // Every bad parameter of one request is named in its one answer.
    await expectBadParams(a.api, '/v1/jobs?q=&metadata.=x&status=nope&limit=0', ['q', 'metadata.', 'status', 'limit']);
  });

  describe('GET /v1/runs', () => {
    let feed: TestTenant;
    /** The feed tenant's runs: `byJob[j]` are job j's runs, in creation order; `failed` the ones made failed. */
    let byJob: string[][];
    let failed: string[];
    let jobIds: string[];
    let all: string[];

    beforeAll(async () => {
      feed = await app.tenant('feed');
      // Three jobs due at T0 + 1 h, + 2 h, + 3 h: each has its first run scheduled then; one manual run each (now, T0).
      jobIds = await createJobs(feed.api, [
        jobBody({ name: 'one', hours: 1 }),
        jobBody({ name: 'two', hours: 2 }),
        jobBody({ name: 'three', hours: 3 }),
      ]);
      byJob = [];
      for (const jobId of jobIds) {
        const r = await feed.api.get(`/v1/jobs/${jobId}/runs`);
        const manual = await feed.api.post(`/v1/jobs/${jobId}/trigger`);
        expect(manual.status).toBe(202);
        byJob.push([r.body.runs[0].runId, manual.body.runId]);
      }
      failed = [byJob[0]![0]!, byJob[2]![1]!];
      for (const id of failed)
        await app.database.db.execute(sql`update runs set status = 'failed', finished_at = now(), next_attempt_at = null where id = ${id}`);
      // A notification delivery of this tenant (a hidden job's run): never in the feed.
      await addNotificationJob(app, jobIds[0]!, 'feed-notifications');
      all = byJob.flat();
    });

    it("lists every run of the tenant's jobs, newest first, and no notification delivery", async () => {
      const r = await feed.api.get('/v1/runs');
      expect(r.status).toBe(200);
      expect(r.body.nextCursor).toBeNull();
      expect(r.body.runs.map((x: { runId: string }) => x.runId)).toEqual(newestFirst(all));
      expect(r.body.runs.every((x: { trigger: string }) => x.trigger !== 'notification')).toBe(true);
      expect(r.body.runs[0]).toMatchObject({
        runId: expect.any(String),
        jobId: expect.any(String),
        scheduledFor: expect.any(String),
        status: expect.any(String),
      });
    });

    it('filters by status', async () => {
      expect(await walk(feed.api, '/v1/runs?status=failed', 'runs', 50)).toEqual(newestFirst(failed));
      expect(await walk(feed.api, '/v1/runs?status=scheduled', 'runs', 50)).toEqual(newestFirst(all.filter((id) => !failed.includes(id))));
      expect(await walk(feed.api, '/v1/runs?status=succeeded', 'runs', 50)).toEqual([]);
    });

    it("filters by job; another tenant's job or no job at all yields no runs", async () => {
      expect(await walk(feed.api, `/v1/runs?jobId=${jobIds[1]}`, 'runs', 50)).toEqual(newestFirst(byJob[1]!));
      expect(await walk(feed.api, `/v1/runs?jobId=${jobIds[2]}&status=failed`, 'runs', 50)).toEqual([byJob[2]![1]]);
      expect(await walk(feed.api, `/v1/runs?jobId=${jobs.nightlyReport}`, 'runs', 50)).toEqual([]);
      expect(await walk(feed.api, '/v1/runs?jobId=00000000-0000-7000-8000-000000000000', 'runs', 50)).toEqual([]);
    });

    it('bounds scheduledFor by since (inclusive) and until (exclusive)', async () => {
      const manual = byJob.map((r) => r[1]!); // scheduled for T0 (now)
      const scheduled = byJob.map((r) => r[0]!); // T0 + 1 h, + 2 h, + 3 h
      expect(await walk(feed.api, `/v1/runs?since=${at(T0 + HOUR)}`, 'runs', 50)).toEqual(newestFirst(scheduled));
      expect(await walk(feed.api, `/v1/runs?since=${at(T0 + HOUR + 1)}`, 'runs', 50)).toEqual(newestFirst(scheduled.slice(1)));
      expect(await walk(feed.api, `/v1/runs?until=${at(T0 + HOUR)}`, 'runs', 50)).toEqual(newestFirst(manual));
      expect(await walk(feed.api, `/v1/runs?until=${at(T0 + HOUR + 1)}`, 'runs', 50)).toEqual(newestFirst([...manual, scheduled[0]!]));
      expect(await walk(feed.api, `/v1/runs?since=${at(T0 + HOUR)}&until=${at(T0 + 3 * HOUR)}`, 'runs', 50)).toEqual(
        newestFirst(scheduled.slice(0, 2)),
      );
      // Any RFC 3339 offset: T0 + 2 h written in +02:00.
      const plus2 = encodeURIComponent(new Date(T0 + 2 * HOUR).toISOString().replace('T02:00:00.000Z', 'T04:00:00+02:00'));
      expect(await walk(feed.api, `/v1/runs?since=${plus2}&status=scheduled`, 'runs', 50)).toEqual(newestFirst(scheduled.slice(1)));
    });

    it('pages to the end, also with filters', async () => {
      expect(await walk(feed.api, '/v1/runs', 'runs', 1)).toEqual(newestFirst(all));
      expect(await walk(feed.api, '/v1/runs', 'runs', 4)).toEqual(newestFirst(all));
      expect(await walk(feed.api, '/v1/runs?status=scheduled', 'runs', 3)).toEqual(newestFirst(all.filter((id) => !failed.includes(id))));
      expect(await walk(feed.api, `/v1/runs?since=${at(T0)}&until=${at(T0 + 2 * HOUR)}`, 'runs', 2)).toEqual(
        newestFirst([...byJob.map((r) => r[1]!), byJob[0]![0]!]),
      );
    });

    it("never shows another tenant's runs", async () => {
      const mine = new Set(all);
      const theirs = await walk(a.api, '/v1/runs', 'runs', 100);
      expect(theirs.length).toBeGreaterThan(0);
      for (const id of theirs) expect(mine.has(id)).toBe(false);
      expect(await walk(feed.api, '/v1/runs', 'runs', 100)).toEqual(newestFirst(all));
    });

    it('answers 400 problem+json naming each bad parameter', async () => {
      await expectBadParams(feed.api, '/v1/runs?jobId=nope', ['jobId']);
      await expectBadParams(feed.api, '/v1/runs?jobId=', ['jobId']);
      await expectBadParams(feed.api, '/v1/runs?status=done', ['status']);
      await expectBadParams(feed.api, '/v1/runs?since=yesterday', ['since']);
      await expectBadParams(feed.api, '/v1/runs?until=2030-01-01', ['until']);
      await expectBadParams(feed.api, '/v1/runs?limit=101', ['limit']);
      await expectBadParams(feed.api, '/v1/runs?cursor=abc', ['cursor']);
      await expectBadParams(feed.api, '/v1/runs?jobId=x&since=y&status=z', ['jobId', 'since', 'status']);
    });
  });
});
