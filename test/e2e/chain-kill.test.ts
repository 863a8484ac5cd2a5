/**
 * Chains across dispatcher crashes (API.md "Richer schedules"; src/store/queue/chain-runs.ts): three real dispatcher
 * processes (`chime serve --role dispatcher`) and an API process on one PostgreSQL. 240 upstream jobs, each linking to
 * three downstream jobs (`succeeded`, `failed`, `finished`), answer 200 or 500 (two attempts each) at a receiver that
 * takes 20–200 ms; two dispatchers are SIGKILLed while runs are finishing (mid-finish transactions die with them, held
 * runs come back through the reaper, some ending `failed` there).
 * At every look at the database (one statement, so one snapshot) during and after, and at the end with every run done:
 * - an upstream run that ended has exactly one chained run per link its end fires (never lost, never doubled: the
 *   chained runs grouped by `upstream->>'runId'`), and one that has not ended (waiting, running, retrying) has none;
 * - no chained run names an upstream run that is not one of them.
 * PostgreSQL only: the embedded database is opened by one process.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../src/store/db.ts';
import { openPostgres } from '../../src/store/postgres.ts';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

const UPSTREAM = 240;
const TIMEOUT_MS = 2_000;
const MARGIN_MS = 1_000;
const DISPATCHER_ENV = { CHIME_LEASE_MARGIN_MS: String(MARGIN_MS), CHIME_REAP_INTERVAL_MS: '300' };
const ENDED = new Set(['succeeded', 'failed', 'expired']);

type Snapshot = {
  ups: { id: string; status: string; targets: string[] }[];
  /** Chained runs whose upstream run is none of the upstream jobs' runs. */
  orphans: number;
};

describe.skipIf(!process.env.TEST_DATABASE_URL)('chains across dispatcher crashes (postgres)', () => {
  let db: FreshDatabase;
  let api: ChimeProcess;
  const dispatchers: ChimeProcess[] = [];
  let receiver: Receiver;
  let tenant: TestTenant;
  let database: ReturnType<typeof openPostgres>;

  beforeAll(async () => {
    db = await freshDatabase({ kind: 'postgres' });
    // Upstream i answers 200 when i is even, 500 when odd; downstream jobs 200.
    receiver = await startReceiver((r) => {
      const m = /^\/up\/(\d+)$/.exec(r.path);
      return { status: m && Number(m[1]) % 2 === 1 ? 500 : 200, delayMs: m ? 20 + Math.floor(Math.random() * 180) : 5 };
    });
    api = await startChime(db.env, ['serve', '--role', 'api']);
    tenant = await createTestTenant(api.url, 'chains');
    database = openPostgres(db.url!);
  });
  afterAll(async () => {
    for (const d of dispatchers) await d.stop('SIGKILL').catch(() => {});
    await api?.stop();
    await receiver?.close();
    await database?.close();
    await db?.drop();
  });

  const ownerOf = (p: ChimeProcess) => /"owner":"([0-9a-f-]{36})"/.exec(p.output())?.[1];
  const leasedBy = async (owner: string) =>
    Number(
      (
        await query<{ n: string }>(
          database.db,
          sql`select count(*) as n from runs where lease_owner = ${owner} and lease_expires_at is not null`,
        )
      )[0]!.n,
    );

  it('makes exactly one chained run per firing link of every upstream run that ended, none for one that did not', async () => {
    const down = async (name: string) => {
      const r = await tenant.api.post('/v1/jobs', {
        name,
        schedule: { type: 'delay', delayMs: 86_400_000 },
        callback: { url: `${receiver.url}/down/${name}`, timeoutMs: TIMEOUT_MS },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body.jobId as string;
    };
    const onSucceeded = await down('succeeded');
    const onFailed = await down('failed');
    const onFinished = await down('finished');
    const fires: Record<string, string[]> = {
      succeeded: [onSucceeded, onFinished].sort(),
      failed: [onFailed, onFinished].sort(),
      expired: [onFinished],
    };

    // The dispatchers first, so that the upstream runs fall due while all three run.
    for (let i = 0; i < 3; i++) dispatchers.push(await startChime({ ...db.env, ...DISPATCHER_ENV }, ['serve', '--role', 'dispatcher']));
    const owners = await eventually(
      () => {
        const o = dispatchers.map(ownerOf);
        return o.every(Boolean) ? (o as string[]) : undefined;
      },
      { what: 'each dispatcher to log its lease owner' },
    );
    const start = Date.now() + 1_500;
    const batch = await tenant.api.post('/v1/jobs/batch', {
      jobs: Array.from({ length: UPSTREAM }, (_, i) => ({
        name: `up ${i}`,
        // Spread over about 4.8 s, so that runs finish all through the crashes.
        schedule: { type: 'once', at: new Date(start + i * 20).toISOString() },
        callback: { url: `${receiver.url}/up/${i}`, timeoutMs: TIMEOUT_MS },
        retry: { maxAttempts: 2, initialDelayMs: 100, jitter: false },
        then: [
          { jobId: onSucceeded, on: 'succeeded' },
          { jobId: onFailed, on: 'failed' },
          { jobId: onFinished, on: 'finished' },
        ],
      })),
    });
    expect(
      batch.body.results.map((r: { status: number }) => r.status),
      JSON.stringify(batch.body).slice(0, 500),
    ).toEqual(Array(UPSTREAM).fill(201));
    const upstreamJobs = `{${batch.body.results.map((r: { job: { jobId: string } }) => r.job.jobId).join(',')}}`;

    /** The upstream runs and their chained runs' target jobs, and the orphans, in one statement (one snapshot). */
    const snapshot = async (): Promise<Snapshot> => {
      const [row] = await query<{ s: Snapshot }>(
        database.db,
        sql`select json_build_object(
            'ups', (select coalesce(json_agg(json_build_object('id', u.id, 'status', u.status, 'targets', coalesce(c.targets, '{}'))), '[]')
                    from runs u
                    left join (select upstream->>'runId' as run_id, array_agg(job_id::text order by job_id::text) as targets
                               from runs where trigger = 'chain' group by 1) c on c.run_id = u.id::text
                    where u.job_id = any(${upstreamJobs}::uuid[])),
            'orphans', (select count(*) from runs c where c.trigger = 'chain'
                          and not exists (select 1 from runs u
                                          where u.id::text = c.upstream->>'runId' and u.job_id = any(${upstreamJobs}::uuid[])))
          ) as s`,
      );
      return row!.s;
    };
    let looks = 0;
    const check = (s: Snapshot) => {
      looks++;
      expect(s.orphans).toBe(0);
      for (const u of s.ups) {
        const expected = ENDED.has(u.status) ? fires[u.status]! : [];
        expect(u.targets, `upstream run ${u.id} (${u.status})`).toEqual(expected);
      }
    };
    // Look all along, crashes included: the invariant holds at every snapshot, not only at the end.
    let watching = true;
    let broken: unknown = null;
    const watcher = (async () => {
      while (watching) {
        check(await snapshot());
        await new Promise((r) => setTimeout(r, 100));
      }
    })().catch((err: unknown) => {
      broken = err;
    });

    const upRequests = () => receiver.received.filter((r) => r.path.startsWith('/up/')).length;
    /** SIGKILLs one of `alive` while it holds runs (leased: in flight, or claimed ahead), or the first after 10 s. */
    const killOneHolding = async (alive: number[]) => {
      const holder = await eventually(
        async () => {
          for (const i of alive) {
            const held = await leasedBy(owners[i]!);
            if (held > 0) return { i, held };
          }
          return undefined;
        },
        { timeoutMs: 10_000, intervalMs: 10, what: 'a dispatcher holding runs' },
      ).catch(() => ({ i: alive[0]!, held: 0 }));
      await dispatchers[holder.i]!.stop('SIGKILL');
      return holder;
    };
    await eventually(() => upRequests() >= UPSTREAM / 4, {
      timeoutMs: 30_000,
      intervalMs: 20,
      what: 'a quarter of the upstream runs sent',
    });
    const first = await killOneHolding([0, 1, 2]);
    await eventually(() => upRequests() >= UPSTREAM / 2, { timeoutMs: 30_000, intervalMs: 20, what: 'half of the upstream runs sent' });
    const second = await killOneHolding([0, 1, 2].filter((i) => i !== first.i));
    console.log(
      `killed dispatcher ${first.i} holding ${first.held} run(s) after ${UPSTREAM / 4} upstream requests, ` +
        `${second.i} holding ${second.held} after ${UPSTREAM / 2}`,
    );

    // Every upstream run ends, and every chained run is delivered.
    const done = await eventually(
      async () => {
        if (broken) throw broken;
        const s = await snapshot();
        const [c] = await query<{ waiting: string }>(
          database.db,
          sql`select count(*) as waiting from runs where trigger = 'chain' and status not in ('succeeded', 'failed')`,
        );
        return s.ups.length === UPSTREAM && s.ups.every((u) => ENDED.has(u.status)) && Number(c!.waiting) === 0 ? s : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 250, what: 'every upstream run to end and every chained run to be delivered' },
    );
    watching = false;
    await watcher;
    if (broken) throw broken;
    check(done);
    const statuses: Record<string, number> = {};
    for (const u of done.ups) statuses[u.status] = (statuses[u.status] ?? 0) + 1;
    const [chained] = await query<{ n: string; reaped: string }>(
      database.db,
      sql`select (select count(*) from runs where trigger = 'chain') as n,
                 (select count(distinct run_id) from attempts where error_class = 'lease_lost') as reaped`,
    );
    console.log(
      `upstream ends ${JSON.stringify(statuses)}; ${chained!.n} chained runs; ` +
        `${chained!.reaped} runs taken back from the dead; ${looks} snapshots checked`,
    );
    expect(Number(chained!.n)).toBe(done.ups.reduce((n, u) => n + fires[u.status]!.length, 0));
    // Both ends happened, and the crashes cost some runs their lease (the reaper's ends chain too).
    expect(statuses.succeeded).toBeGreaterThan(0);
    expect(statuses.failed).toBeGreaterThan(0);
    expect(Number(chained!.reaped)).toBeGreaterThan(0);
    // Each chained run reached its receiver.
    const downPaths = receiver.received.filter((r) => r.path.startsWith('/down/'));
    expect(new Set(downPaths.map((r) => r.headers['webhook-id'])).size).toBe(Number(chained!.n));
  }, 240_000);
});
