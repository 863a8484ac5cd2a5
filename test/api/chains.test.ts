/**
 * Chains at the API (API.md "Richer schedules", job field `then`), on every database target: a link must name a
 * callback job of the same tenant that is not canceled (400 at `then.<i>.jobId`, by POST, PUT by key, PATCH and each
 * item of a batch); a chain that would come back to a job already in it is refused when it is set (400 at `then`,
 * naming the cycle) by PATCH and by PUT replacing a job, a link to itself included; `then` is shown in the Job view,
 * and a PATCH to null removes it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiResponse, TestTenant } from '../support/api.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';

const job = (o: Record<string, unknown> = {}) => ({
  schedule: { type: 'delay', delayMs: 3_600_000 },
  callback: { url: 'http://127.0.0.1:9/hook' },
  ...o,
});
const errorsOf = (r: ApiResponse) => (r.body.errors ?? []) as { path: string; message: string }[];

describe.each(DATABASE_TARGETS)('chains at the API on $kind', (target) => {
  let app: TestApp;
  let tenant: TestTenant;
  let other: TestTenant;
  beforeAll(async () => {
    app = await startTestApp({}, { target });
    tenant = await app.tenant('chains');
    other = await app.tenant('other');
  });
  afterAll(() => app?.close());

  const create = async (o: Record<string, unknown> = {}, t = tenant) => {
    const r = await t.api.post('/v1/jobs', job(o));
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body as { jobId: string; name: string | null; then: unknown };
  };
  const patch = (jobId: string, body: unknown) => tenant.api.request('PATCH', `/v1/jobs/${jobId}`, body);

  it('shows then in the Job view, changes it by PATCH and removes it with null', async () => {
    const b = await create({ name: 'b' });
    const c = await create({ name: 'c' });
    const a = await create({ name: 'a', then: [{ jobId: b.jobId, on: 'succeeded' }] });
    expect(a.then).toEqual([{ jobId: b.jobId, on: 'succeeded' }]);
    expect((await tenant.api.get(`/v1/jobs/${a.jobId}`)).body.then).toEqual([{ jobId: b.jobId, on: 'succeeded' }]);
    const changed = await patch(a.jobId, {
      then: [
        { jobId: b.jobId, on: 'failed' },
        { jobId: c.jobId, on: 'finished' },
      ],
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body.then).toEqual([
      { jobId: b.jobId, on: 'failed' },
      { jobId: c.jobId, on: 'finished' },
    ]);
    const removed = await patch(a.jobId, { then: null });
    expect(removed.body.then).toBeNull();
    expect((await create()).then).toBeNull();
  });

  it("refuses a link to no job, another tenant's job or a canceled job, naming the link (POST, PUT, PATCH, batch)", async () => {
    const mine = await create({ name: 'mine' });
    const theirs = await create({ name: 'theirs' }, other);
    const gone = await create({ name: 'gone' });
    expect((await tenant.api.request('DELETE', `/v1/jobs/${gone.jobId}`)).status).toBe(204);
    const missing = '0190a6f0-0000-7000-8000-000000000000';
    const then = [
      { jobId: mine.jobId, on: 'succeeded' },
      { jobId: missing, on: 'succeeded' },
      { jobId: theirs.jobId, on: 'failed' },
      { jobId: gone.jobId, on: 'finished' },
    ];
    const expectRefused = (r: ApiResponse) => {
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(errorsOf(r)).toEqual([
        { path: 'then.1.jobId', message: `no job ${missing}` },
        { path: 'then.2.jobId', message: `no job ${theirs.jobId}` },
        { path: 'then.3.jobId', message: `job ${gone.jobId} is canceled` },
      ]);
    };
    expectRefused(await tenant.api.post('/v1/jobs', job({ then })));
    expectRefused(await tenant.api.request('PUT', '/v1/jobs/by-key/new-one', job({ then })));
    expectRefused(await patch(mine.jobId, { then }));
    const batch = await tenant.api.post('/v1/jobs/batch', { jobs: [job({ then }), job({ then: [then[0]] })] });
    expect(batch.status).toBe(200);
    expect(batch.body.results[0].status).toBe(400);
    expect(batch.body.results[0].problem.errors.map((e: { path: string }) => e.path)).toEqual([
      'then.1.jobId',
      'then.2.jobId',
      'then.3.jobId',
    ]);
    expect(batch.body.results[1].status).toBe(201);
    expect(batch.body.results[1].job.then).toEqual([then[0]]);
    // Nothing was made of the refused ones: the key is still free.
    expect((await tenant.api.get('/v1/jobs/by-key/new-one')).status).toBe(404);
  });

  it('refuses a PATCH that closes a cycle, naming it: a → b then b → a, and a link to itself', async () => {
    const a = await create({ name: 'extract' });
    const b = await create({ name: 'load' });
    expect((await patch(a.jobId, { then: [{ jobId: b.jobId, on: 'succeeded' }] })).status).toBe(200);
    const back = await patch(b.jobId, { then: [{ jobId: a.jobId, on: 'finished' }] });
    expect(back.status, JSON.stringify(back.body)).toBe(400);
    expect(errorsOf(back)).toEqual([{ path: 'then', message: 'the chain comes back to a job already in it: load → extract → load' }]);
    expect((await tenant.api.get(`/v1/jobs/${b.jobId}`)).body.then).toBeNull();

    const self = await patch(a.jobId, { then: [{ jobId: a.jobId, on: 'failed' }] });
    expect(self.status).toBe(400);
    expect(errorsOf(self)).toEqual([{ path: 'then', message: 'the chain comes back to a job already in it: extract → extract' }]);
    // The refused change changed nothing.
    expect((await tenant.api.get(`/v1/jobs/${a.jobId}`)).body.then).toEqual([{ jobId: b.jobId, on: 'succeeded' }]);
  });

  it('refuses a longer cycle, by ids for jobs without a name, and accepts a diamond', async () => {
    const a = await create();
    const b = await create({ then: [] });
    const c = await create({ then: [{ jobId: a.jobId, on: 'succeeded' }] });
    expect((await patch(b.jobId, { then: [{ jobId: c.jobId, on: 'succeeded' }] })).status).toBe(200);
    const closing = await patch(a.jobId, { then: [{ jobId: b.jobId, on: 'finished' }] });
    expect(closing.status).toBe(400);
    expect(errorsOf(closing)[0]!.message).toBe(
      `the chain comes back to a job already in it: ${a.jobId} → ${b.jobId} → ${c.jobId} → ${a.jobId}`,
    );

    // a → d, a → e, d → f, e → f: two paths to f, no cycle.
    const f = await create();
    const d = await create({ then: [{ jobId: f.jobId, on: 'succeeded' }] });
    const e = await create({ then: [{ jobId: f.jobId, on: 'failed' }] });
    const diamond = await patch(a.jobId, {
      then: [
        { jobId: d.jobId, on: 'succeeded' },
        { jobId: e.jobId, on: 'succeeded' },
      ],
    });
    expect(diamond.status, JSON.stringify(diamond.body)).toBe(200);
  });

  it('refuses a PUT by key that would make the job it replaces come back to itself; creates and replaces otherwise', async () => {
    const first = await tenant.api.request('PUT', '/v1/jobs/by-key/nightly', job({ name: 'nightly' }));
    expect(first.status).toBe(201);
    const report = await create({ name: 'report', then: [{ jobId: first.body.jobId, on: 'succeeded' }] });
    const cyclic = await tenant.api.request(
      'PUT',
      '/v1/jobs/by-key/nightly',
      job({ name: 'nightly', then: [{ jobId: report.jobId, on: 'succeeded' }] }),
    );
    expect(cyclic.status, JSON.stringify(cyclic.body)).toBe(400);
    expect(errorsOf(cyclic)).toEqual([
      { path: 'then', message: 'the chain comes back to a job already in it: nightly → report → nightly' },
    ]);
    const self = await tenant.api.request('PUT', '/v1/jobs/by-key/nightly', job({ then: [{ jobId: first.body.jobId, on: 'succeeded' }] }));
    expect(self.status).toBe(400);
    expect(errorsOf(self)[0]!.path).toBe('then');

    // Once report no longer links back, the same replacement is accepted.
    expect((await patch(report.jobId, { then: null })).status).toBe(200);
    const replaced = await tenant.api.request(
      'PUT',
      '/v1/jobs/by-key/nightly',
      job({ name: 'nightly', then: [{ jobId: report.jobId, on: 'succeeded' }] }),
    );
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    expect(replaced.body.then).toEqual([{ jobId: report.jobId, on: 'succeeded' }]);
    // A chain to a paused job is allowed (its triggered run still goes, as a manual trigger's does).
    expect((await patch(report.jobId, { paused: true })).status).toBe(200);
    expect((await create({ then: [{ jobId: report.jobId, on: 'finished' }] })).then).toEqual([{ jobId: report.jobId, on: 'finished' }]);
  });
});
