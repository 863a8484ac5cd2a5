/**
 * Backfill at the API (API.md "Richer schedules", `POST /v1/jobs/:jobId/backfill`; src/store/backfill.ts), on every
 * database target, with a manual clock (no dispatcher: the runs stay as the backfill made them):
 * - a run (trigger `backfill`, `scheduledFor` the occurrence) per occurrence in [from, to), oldest first, due now; a
 *   second identical call creates nothing; the audit log has the change;
 * - `limit` bounds a call and `remaining` counts what is left, across calls, oldest first;
 * - a calendar's `next` roll is backfilled at the moved instants (over a holiday too), its `skip` drops are not;
 * - an occurrence with a `schedule` run is not backfilled, unless that run was canceled (a pause) without a request;
 * - a job whose runs may not overlap (`skip`) gets its runs buffered, the oldest released at once;
 * - bad input names its field (`from`, `to`, `limit`, a range of too many occurrences at `to`); another tenant's or an
 *   unknown job is 404, a canceled job 409.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_BACKFILL_OCCURRENCES } from '../../src/domain/backfill.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import type { ApiResponse, TestTenant } from '../support/api.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';

const HOUR_MS = 3_600_000;
/** The test's now: Sunday 2030-01-20 00:00 UTC. */
const NOW = Date.UTC(2030, 0, 20);
const iso = (t: number) => new Date(t).toISOString();
const errorsOf = (r: ApiResponse) => (r.body.errors ?? []) as { path: string; message: string }[];

type RunView = { runId: string; trigger: string; scheduledFor: string; status: string; nextAttemptAt: string | null };

describe.each(DATABASE_TARGETS)('backfill at the API on $kind', (target) => {
  const clock = new ManualClock(NOW);
  let app: TestApp;
  let tenant: TestTenant;
  let other: TestTenant;
  beforeAll(async () => {
    app = await startTestApp({}, { target, clock });
    tenant = await app.tenant('backfill');
    other = await app.tenant('other');
  });
  afterAll(() => app?.close());
  beforeEach(() => clock.set(NOW));

  const create = async (o: Record<string, unknown>, t = tenant) => {
    const r = await t.api.post('/v1/jobs', { callback: { url: 'http://127.0.0.1:9/hook' }, ...o });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.jobId as string;
  };
  const hourly = (o: Record<string, unknown> = {}) => create({ schedule: { type: 'cron', expression: '0 * * * *' }, ...o });
  const backfill = (jobId: string, body: Record<string, unknown>, t = tenant) => t.api.post(`/v1/jobs/${jobId}/backfill`, body);
  const ok = async (jobId: string, body: Record<string, unknown>) => {
    const r = await backfill(jobId, body);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    return r.body as { created: number; runIds: string[]; remaining: number };
  };
  const runsOf = async (jobId: string, trigger?: string): Promise<RunView[]> => {
    const r = await tenant.api.get(`/v1/jobs/${jobId}/runs?limit=100`);
    expect(r.status).toBe(200);
    return (r.body.runs as RunView[]).filter((x) => trigger === undefined || x.trigger === trigger);
  };
  /** The backfill runs of `jobId`, oldest occurrence first, as epoch ms. */
  const backfilledAt = async (jobId: string) =>
    (await runsOf(jobId, 'backfill')).map((r) => Date.parse(r.scheduledFor)).sort((a, b) => a - b);

  it('makes a run per occurrence in [from, to), oldest first and due now; a second call makes none', async () => {
    const jobId = await hourly();
    const first = await ok(jobId, { from: iso(NOW - 6 * HOUR_MS), to: iso(NOW - HOUR_MS) });
    expect(first).toMatchObject({ created: 5, remaining: 0 });
    const expected = [6, 5, 4, 3, 2].map((h) => NOW - h * HOUR_MS);
    const runs = await runsOf(jobId, 'backfill');
    const byId = new Map(runs.map((r) => [r.runId, r]));
    // runIds are oldest first, each the run of its occurrence.
    expect(first.runIds.map((id) => Date.parse(byId.get(id)!.scheduledFor))).toEqual(expected);
    for (const r of runs) expect(r).toMatchObject({ status: 'scheduled', nextAttemptAt: iso(NOW) });

    expect(await ok(jobId, { from: iso(NOW - 6 * HOUR_MS), to: iso(NOW - HOUR_MS) })).toEqual({ created: 0, runIds: [], remaining: 0 });
    // An overlapping range makes only the occurrences that have none: 7 h ago and 1 h ago.
    expect(await ok(jobId, { from: iso(NOW - 7 * HOUR_MS), to: iso(NOW) })).toMatchObject({ created: 2, remaining: 0 });
    expect(await backfilledAt(jobId)).toEqual([7, 6, 5, 4, 3, 2, 1].map((h) => NOW - h * HOUR_MS));

    const audit = await tenant.api.get('/v1/audit-log?action=job.backfilled');
    expect(audit.body.entries.filter((e: { target: { id: string } }) => e.target.id === jobId)).toHaveLength(2);
  });

  it('makes at most limit runs a call, oldest first, and counts the rest as remaining', async () => {
    const jobId = await hourly();
    const range = { from: iso(NOW - 10 * HOUR_MS), to: iso(NOW) };
    const calls = [];
    for (let i = 0; i < 4; i++) calls.push(await ok(jobId, { ...range, limit: 4 }));
    expect(calls.map((c) => [c.created, c.remaining])).toEqual([
      [4, 6],
      [4, 2],
      [2, 0],
      [0, 0],
    ]);
    const byId = new Map((await runsOf(jobId, 'backfill')).map((r) => [r.runId, Date.parse(r.scheduledFor)]));
    expect(calls.flatMap((c) => c.runIds).map((id) => byId.get(id))).toEqual([10, 9, 8, 7, 6, 5, 4, 3, 2, 1].map((h) => NOW - h * HOUR_MS));
    expect((await ok(jobId, { ...range, limit: 1000 })).created).toBe(0);
  });

  it("backfills a calendar's next roll at the moved instants, and not what its skip roll drops", async () => {
    // Monday 2030-01-07 is a holiday; the weekend is Saturday and Sunday (UTC).
    const cal = await tenant.api.request('PUT', '/v1/calendars/office', { timezone: 'UTC', holidays: ['2030-01-07'] });
    expect(cal.status, JSON.stringify(cal.body)).toBe(201);
    // Saturdays 09:00, rolled to the next business day: Sat 01-05 → Tue 01-08 (over the holiday), Sat 01-12 → Mon 01-14;
    // Sat 2029-12-29 → Mon 12-31, before the range.
    const saturdays = await create({
      schedule: { type: 'cron', expression: '0 9 * * 6' },
      calendar: { key: 'office', roll: 'next' },
    });
    expect(await ok(saturdays, { from: iso(Date.UTC(2030, 0, 1)), to: iso(Date.UTC(2030, 0, 15)) })).toMatchObject({
      created: 2,
      remaining: 0,
    });
    expect(await backfilledAt(saturdays)).toEqual([Date.UTC(2030, 0, 8, 9), Date.UTC(2030, 0, 14, 9)]);

    // Daily 09:00 skipping non-business days: Fri 01-04 and Tue 01-08, not the weekend nor the holiday.
    const daily = await create({ schedule: { type: 'cron', expression: '0 9 * * *' }, calendar: { key: 'office', roll: 'skip' } });
    expect((await ok(daily, { from: iso(Date.UTC(2030, 0, 4)), to: iso(Date.UTC(2030, 0, 9)) })).created).toBe(2);
    expect(await backfilledAt(daily)).toEqual([Date.UTC(2030, 0, 4, 9), Date.UTC(2030, 0, 8, 9)]);
  });

  it('leaves an occurrence that has a schedule run, unless a pause canceled it', async () => {
    const minutely = { schedule: { type: 'interval', everyMs: 60_000 } };
    // Both jobs' first scheduled run is at NOW; one of them is paused, which cancels it.
    const kept = await create(minutely);
    const paused = await create(minutely);
    expect((await tenant.api.request('PATCH', `/v1/jobs/${paused}`, { paused: true })).status).toBe(200);
    expect((await runsOf(kept, 'schedule')).map((r) => [r.scheduledFor, r.status])).toEqual([[iso(NOW), 'scheduled']]);
    expect((await runsOf(paused, 'schedule')).map((r) => [r.scheduledFor, r.status])).toEqual([[iso(NOW), 'canceled']]);
    clock.set(NOW + 5 * 60_000);
    const range = { from: iso(NOW), to: iso(NOW + 5 * 60_000) };
    const minutes = [1, 2, 3, 4].map((m) => NOW + m * 60_000);
    expect(await ok(kept, range)).toMatchObject({ created: 4, remaining: 0 });
    expect(await backfilledAt(kept)).toEqual(minutes);
    expect(await ok(paused, range)).toMatchObject({ created: 5, remaining: 0 });
    expect(await backfilledAt(paused)).toEqual([NOW, ...minutes]);
  });

  it("buffers a skip job's runs, the oldest released at once, and sends an allow job's all now", async () => {
    const skip = await hourly({ overlapPolicy: 'skip' });
    const range = { from: iso(NOW - 3 * HOUR_MS), to: iso(NOW) };
    const made = await ok(skip, range);
    const runs = new Map((await runsOf(skip, 'backfill')).map((r) => [r.runId, r]));
    expect(made.runIds.map((id) => runs.get(id)!.nextAttemptAt)).toEqual([iso(NOW), null, null]);
    expect([...runs.values()].every((r) => r.status === 'scheduled')).toBe(true);
    const allow = await hourly();
    await ok(allow, range);
    expect((await runsOf(allow, 'backfill')).map((r) => r.nextAttemptAt)).toEqual([iso(NOW), iso(NOW), iso(NOW)]);
  });

  it('names the bad field: from, to, limit, and a range of too many occurrences at to', async () => {
    const jobId = await hourly();
    const expectBad = async (body: Record<string, unknown>, paths: string[]) => {
      const r = await backfill(jobId, body);
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      expect(errorsOf(r).map((e) => e.path)).toEqual(paths);
      return errorsOf(r);
    };
    const from = iso(NOW - HOUR_MS);
    await expectBad({ from: 'yesterday', to: iso(NOW) }, ['from']);
    await expectBad({ from: '2030-01-19T00:00:00', to: iso(NOW) }, ['from']); // no offset
    await expectBad({ to: iso(NOW) }, ['from']);
    await expectBad({ from, to: iso(NOW), limit: 0 }, ['limit']);
    await expectBad({ from, to: iso(NOW), limit: 1001 }, ['limit']);
    await expectBad({ from, to: iso(NOW), limit: 1.5 }, ['limit']);
    await expectBad({ from, to: iso(NOW), extra: 1 }, ['extra']);
    expect((await expectBad({ from, to: from }, ['to']))[0]!.message).toBe('must be after from');
    expect((await expectBad({ from, to: iso(NOW + 1) }, ['to']))[0]!.message).toMatch(/not be after now/);
    // A bad limit and a future `to` in one answer.
    await expectBad({ from, to: iso(NOW + HOUR_MS), limit: 0 }, ['limit', 'to']);

    // Every second, from a day ago: three hours hold 10,800 occurrences.
    const everySecond = await create({ schedule: { type: 'interval', everyMs: 1000, startAt: iso(NOW - 24 * HOUR_MS) } });
    const tooMany = await backfill(everySecond, { from: iso(NOW - 3 * HOUR_MS), to: iso(NOW) });
    expect(tooMany.status).toBe(400);
    expect(errorsOf(tooMany)).toEqual([{ path: 'to', message: expect.stringMatching(/backfill a shorter range/) }]);
    // Exactly the bound is fine, and made `limit` at a time.
    const atBound = await ok(everySecond, { from: iso(NOW - MAX_BACKFILL_OCCURRENCES * 1000), to: iso(NOW), limit: 1000 });
    expect(atBound).toMatchObject({ created: 1000, remaining: MAX_BACKFILL_OCCURRENCES - 1000 });
  });

  it("answers 404 for another tenant's or an unknown job and 409 for a canceled one", async () => {
    const range = { from: iso(NOW - 3 * HOUR_MS), to: iso(NOW) };
    const theirs = await create({ schedule: { type: 'cron', expression: '0 * * * *' } }, other);
    expect((await backfill(theirs, range)).status).toBe(404);
    expect((await backfill('0190a6f0-0000-7000-8000-000000000000', range)).status).toBe(404);
    expect((await backfill('not-a-uuid', range)).status).toBe(404);
    // The owner may.
    expect((await backfill(theirs, range, other)).status).toBe(202);

    const canceled = await hourly();
    expect((await tenant.api.request('DELETE', `/v1/jobs/${canceled}`)).status).toBe(204);
    const r = await backfill(canceled, range);
    expect(r.status).toBe(409);
    expect(await runsOf(canceled, 'backfill')).toEqual([]);
  });
});
