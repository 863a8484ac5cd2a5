/**
 * Richer schedules in the store (API.md "Richer schedules"), applied by registration, the claim and re-plans on
 * PGlite and PostgreSQL: `maxRuns` completes a job after that many scheduled runs; a calendar's `skip` ends an
 * occurrence on a holiday `skipped` (error `calendar`) while `nextRunAt` names the next business-day one, and `next`
 * plans the moved occurrence; a calendar change re-plans every job using it, in batches, one pending run each; a union
 * advances through its members; `spread` jitter reaches one destination evenly (the figure for `random` printed beside
 * it) and a re-plan does not move a run already placed.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { putCalendar, REPLAN_BATCH } from '../../src/store/calendars.ts';
import { query } from '../../src/store/db.ts';
import { replanJobs } from '../../src/store/job-lifecycle.ts';
import { createJob, createJobs, getJob } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { type JobSpecInput, runsOf, T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

const HOUR = 3_600_000;
/** The store's clock: Tuesday 1 January 2030, 00:00 UTC. */
const TUE = T0;
const iso = (t: number) => new Date(t).toISOString();

describe.each(DATABASE_TARGETS)('richer schedules in the store on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });

  const claim = (nowMs: number, limit = 1000) => claimRuns(store.database.db, { owner: 'A', limit, nowMs, leaseMarginMs: 30_000 });
  const job = (o: JobSpecInput, at = TUE) => createJob(store.ctx, tenantId, testJobSpec(at, o), at);
  const pending = async (jobId: string) => (await runsOf(store.database, jobId)).filter((r) => r.status === 'scheduled');
  const calendar = (key: string, holidays: string[], timezone = 'Europe/Berlin') =>
    putCalendar(store.ctx, tenantId, key, { name: null, timezone, weekendDays: [0, 6], holidays });

  it('maxRuns: the job completes after that many scheduled runs', async () => {
    const j = await job({ schedule: { type: 'interval', everyMs: HOUR, startAt: iso(TUE + HOUR) }, maxRuns: 3 });
    for (let k = 1; k <= 3; k++) expect((await claim(TUE + k * HOUR)).map((r) => r.scheduledForMs)).toEqual([TUE + k * HOUR]);
    const done = (await getJob(store.ctx, tenantId, j.id))!;
    expect(done).toMatchObject({ status: 'completed', scheduledRuns: 3, nextRunAt: null });
    expect(await pending(j.id)).toEqual([]);
  });

  it('a calendar: skip ends a holiday occurrence `skipped` (error calendar) with nextRunAt on the next business day; next moves it', async () => {
    await calendar('de', ['2030-01-01', '2030-01-03']); // New Year (Tuesday) and Thursday
    const daily = { type: 'cron' as const, expression: '0 9 * * *', timezone: 'Europe/Berlin' };
    const skip = await job({ schedule: daily, calendar: { key: 'de', roll: 'skip' } });
    const next = await job({ schedule: daily, calendar: { key: 'de', roll: 'next' } });
    // Tuesday 09:00 CET (08:00Z) is a holiday: `skip` plans it (to end skipped), `next` plans Wednesday 09:00.
    expect((await pending(skip.id)).map((r) => iso(r.scheduledForMs))).toEqual(['2030-01-01T08:00:00.000Z']);
    expect(skip.nextRunAt?.toISOString()).toBe('2030-01-02T08:00:00.000Z');
    expect((await pending(next.id)).map((r) => iso(r.scheduledForMs))).toEqual(['2030-01-02T08:00:00.000Z']);
    expect(next.nextRunAt?.toISOString()).toBe('2030-01-02T08:00:00.000Z');

    expect(await claim(Date.parse('2030-01-01T08:00:00Z'))).toEqual([]);
    const [ended] = (await runsOf(store.database, skip.id)).filter((r) => r.status === 'skipped');
    expect(ended).toMatchObject({ error: 'calendar', scheduledForMs: Date.parse('2030-01-01T08:00:00Z') });
    expect((await pending(skip.id)).map((r) => iso(r.scheduledForMs))).toEqual(['2030-01-02T08:00:00.000Z']);
    // Wednesday both fire; then `skip` plans Thursday (a holiday, to end skipped) and `next` Friday.
    expect((await claim(Date.parse('2030-01-02T08:00:00Z'))).map((r) => r.jobId).sort()).toEqual([skip.id, next.id].sort());
    expect((await pending(next.id)).map((r) => iso(r.scheduledForMs))).toEqual(['2030-01-04T08:00:00.000Z']);
    expect((await pending(skip.id)).map((r) => iso(r.scheduledForMs))).toEqual(['2030-01-03T08:00:00.000Z']);
    expect((await getJob(store.ctx, tenantId, skip.id))!.nextRunAt?.toISOString()).toBe('2030-01-04T08:00:00.000Z');
  });

  it(`a calendar change re-plans every job that uses it (${REPLAN_BATCH + 20} jobs, in batches), one pending run each`, async () => {
    await calendar('eu', []);
    const n = REPLAN_BATCH + 20;
    const made = await createJobs(
      store.ctx,
      tenantId,
      Array.from({ length: n }, () =>
        testJobSpec(TUE, {
          schedule: { type: 'cron', expression: '0 9 * * *', timezone: 'Europe/Berlin' },
          calendar: { key: 'eu', roll: 'next' },
        }),
      ),
      TUE,
    );
    // Tuesday 1st 09:00 is each one's pending run; a new holiday on the 1st moves every one to Wednesday.
    await calendar('eu', ['2030-01-01']);
    const rows = await Promise.all(
      made
        .slice(0, 3)
        .concat(made.slice(-3))
        .map((j) => pending(j.id)),
    );
    for (const r of rows) expect(r.map((x) => iso(x.scheduledForMs))).toEqual(['2030-01-02T08:00:00.000Z']);
    const [row] = await query<{ n: number; jobs: number; first: Date | string; last: Date | string }>(
      store.database.db,
      sql`select count(*)::int as n, count(distinct job_id)::int as jobs, min(scheduled_for) as first, max(scheduled_for) as last
          from runs where status = 'scheduled' and trigger = 'schedule'`,
    );
    expect({ n: Number(row!.n), jobs: Number(row!.jobs) }).toEqual({ n, jobs: n });
    expect(new Date(row!.first).toISOString()).toBe('2030-01-02T08:00:00.000Z');
    expect(new Date(row!.last).toISOString()).toBe('2030-01-02T08:00:00.000Z');
  });

  it('a union advances through its members, an instant two members share once', async () => {
    const j = await job({
      schedule: {
        type: 'union',
        schedules: [
          { type: 'cron', expression: '0 9 * * *', timezone: 'UTC' },
          { type: 'interval', everyMs: 12 * HOUR, startAt: iso(TUE + 9 * HOUR) },
        ],
      },
    });
    const seen: number[] = [];
    for (let k = 0; k < 4; k++) {
      const [p] = await pending(j.id);
      seen.push(p!.scheduledForMs);
      await claim(p!.scheduledForMs);
    }
    expect(seen.map(iso)).toEqual([iso(TUE + 9 * HOUR), iso(TUE + 21 * HOUR), iso(TUE + 33 * HOUR), iso(TUE + 45 * HOUR)]);
  });

  it('spread: 1,000 jobs on `0 * * * *` with a 60 s window reach one destination evenly; a re-plan does not move them', async () => {
    const busiest = async (mode: 'spread' | 'random') => {
      const url = `http://127.0.0.1:9/${mode}`;
      const made = [];
      for (let k = 0; k < 10; k++) {
        made.push(
          ...(await createJobs(
            store.ctx,
            tenantId,
            Array.from({ length: 100 }, () =>
              testJobSpec(TUE, {
                schedule: { type: 'cron', expression: '0 * * * *' },
                jitterMs: 60_000,
                jitterMode: mode,
                callback: { url },
              }),
            ),
            TUE + 1,
          )),
        );
      }
      const rows = await query<{ s: number; n: number }>(
        store.database.db,
        sql`select floor(extract(epoch from r.next_attempt_at))::bigint as s, count(*)::int as n from runs r join jobs j on j.id = r.job_id
            where r.status = 'scheduled' and j.callback->>'url' = ${url} group by 1`,
      );
      const perSecond = rows.map((r) => ({ s: Number(r.s), n: Number(r.n) }));
      const hour = TUE / 1000;
      expect(perSecond.every((p) => p.s >= hour && p.s < hour + 60)).toBe(true);
      return { made, max: Math.max(...perSecond.map((p) => p.n)), mean: 1000 / 60 };
    };
    const spread = await busiest('spread');
    const random = await busiest('random');
    console.log(
      `busiest second of 1,000 runs in a 60 s window: spread ${spread.max} (${(spread.max / spread.mean).toFixed(2)}× the mean), random ${random.max} (${(random.max / random.mean).toFixed(2)}×)`,
    );
    expect(spread.max).toBeLessThanOrEqual(1.5 * spread.mean);

    // A re-plan (a resume, a change) keeps each placed run where it is.
    const before = await pending(spread.made[0]!.id);
    await store.database.db.transaction((tx) =>
      replanJobs(
        tx,
        tenantId,
        spread.made.slice(0, 50).map((j) => j.id),
        TUE - 5_000,
      ),
    );
    expect(await pending(spread.made[0]!.id)).toEqual(before);
  });
});
