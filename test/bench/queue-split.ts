/**
 * What a run queue apart from the history would write (issue #36, item 1), measured before it is built: the hot path's
 * statement shapes in SQL alone, on Chime's real schema (the migrations), for `--runs` once-jobs due now, drained in
 * claims of `--batch` (claim, then finish, one transaction each, one connection). Prints per variant the WAL bytes per
 * run (`pg_current_wal_lsn()` after and before; cluster-wide, so run it on a quiet server) and each table's rows
 * inserted (+), updated (~, of them HOT) and deleted (-) per run (`pg_stat_user_tables`).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:split -- --runs 20000
 *
 * Variants:
 * - `today`: the shapes of today's statements: the claim updates the run (lease, status, attempt: no indexed column,
 *   HOT where its page has room) and the job (a once-job completes), the finish updates the run and appends its attempt;
 * - `split`: waiting and held runs in a narrow queue table (fillfactor 50, its one index on (shard, due_at)): the claim
 *   sets the lease (no indexed column: HOT), the job update as today, the finish deletes the queue row and writes the
 *   run's history row once, with its attempt alongside;
 * - `split, job HOT`: as `split`, with `jobs` rewritten at fillfactor 50 (as the migrations leave it, for its new pages), so that every
 *   once-job's completion finds room on its page for a HOT update;
 * - `split, job HOT, attempt inline`: as `split, job HOT`, with a first attempt's outcome kept in the history row
 *   instead of an attempt row (the attempt log would hold the others);
 * - `split, no job update`: as `split` without the job update: what the queue and the history cost alone;
 * - `floor`: as `split, no job update` with the attempt inline and the history's only index its primary key: what the
 *   queue costs with a history row that nothing looks up (a diagnostic, not a design).
 * Registration's writes (the runs, or the queue rows) happen before the measurement, as in the full benchmark's drain.
 */
import { parseArgs } from 'node:util';
import { migratePostgresUrl } from '../../src/store/migrate.ts';
import { benchAdminUrl, connect, DatabaseFactory, type Sql } from './db.ts';
import { addDueRuns, TEMPLATE_JOB, TENANT } from './db-fixtures.ts';
import { formatWrites, tableWrites, walBytesSince, walPosition, writesPerRun } from './db-work.ts';

type Variant = 'today' | 'split' | 'split, job HOT' | 'split, job HOT, attempt inline' | 'split, no job update' | 'floor';
const VARIANTS: Variant[] = ['today', 'split', 'split, job HOT', 'split, job HOT, attempt inline', 'split, no job update', 'floor'];
const TABLES = ['runs', 'sim_queue', 'jobs', 'open_jobs', 'attempts'];

/** Moves the waiting runs into the queue table, as registration would have written them there. */
async function intoQueue(sql: Sql): Promise<void> {
  await sql.unsafe(`create table sim_queue (
      shard smallint not null, id uuid not null, tenant_id uuid not null, job_id uuid not null,
      scheduled_for timestamptz not null, trigger text not null, due_at timestamptz not null,
      lease_owner text, lease_expires_at timestamptz, attempts smallint not null default 0, started_at timestamptz,
      created_at timestamptz not null, primary key (shard, id)) with (fillfactor = 50)`);
  await sql.unsafe('create index sim_queue_due on sim_queue (shard, due_at)');
  await sql`insert into sim_queue (shard, id, tenant_id, job_id, scheduled_for, trigger, due_at, created_at)
            select shard, id, tenant_id, job_id, scheduled_for, trigger, next_attempt_at, created_at from runs where status = 'scheduled'`;
  await sql`delete from runs where status = 'scheduled'`;
}

/** Claims up to `batch` due runs and finishes them, as `variant` would; the number of runs done. */
async function claimAndFinish(sql: Sql, variant: Variant, shard: number, batch: number): Promise<number> {
  const claimed = await sql.begin(async (tx) => {
    const rows =
      variant === 'today'
        ? await tx<{ id: string; job_id: string }[]>`
            with due as materialized (select id from runs where shard = ${shard} and status in ('scheduled', 'retrying')
                                      and next_attempt_at <= now() order by next_attempt_at limit ${batch} for update skip locked)
            update runs r set status = 'running', lease_owner = 'sim', lease_expires_at = now() + interval '40 s',
                   attempts = r.attempts + 1, started_at = now()
            from due where r.shard = ${shard} and r.id = due.id returning r.id, r.job_id`
        : await tx<{ id: string; job_id: string }[]>`
            with due as materialized (select id from sim_queue where shard = ${shard} and due_at <= now()
                                      and lease_expires_at is null order by due_at limit ${batch} for update skip locked)
            update sim_queue q set lease_owner = 'sim', lease_expires_at = now() + interval '40 s',
                   attempts = q.attempts + 1, started_at = now()
            from due where q.shard = ${shard} and q.id = due.id returning q.id, q.job_id`;
    if (rows.length > 0 && variant !== 'split, no job update' && variant !== 'floor') {
      await tx`with advanced as (
                 update jobs j set next_run_at = null, last_run_at = now(), scheduled_runs = j.scheduled_runs + 1,
                   status = case when j.status = 'active' then 'completed' else j.status end
                 where j.shard = ${shard} and j.id = any(${rows.map((r) => r.job_id)}::uuid[])
                 returning j.id, j.tenant_id, j.status)
               delete from open_jobs o using advanced a
               where o.shard = ${shard} and o.tenant_id = a.tenant_id and o.job_id = a.id and a.status = 'completed'`;
    }
    return rows;
  });
  if (claimed.length === 0) return 0;
  const ids = claimed.map((r) => r.id);
  await sql.begin(async (tx) => {
    if (variant === 'today') {
      await tx`update runs r set status = 'succeeded', finished_at = now(), response_status = 200, lease_owner = null,
                 lease_expires_at = null, next_attempt_at = null
               where r.shard = ${shard} and r.id = any(${ids}::uuid[]) and r.status = 'running'`;
    } else {
      await tx`with gone as (delete from sim_queue where shard = ${shard} and id = any(${ids}::uuid[]) returning *)
               insert into runs (shard, id, tenant_id, job_id, scheduled_for, trigger, status, attempts, started_at,
                                 finished_at, response_status, created_at)
               select shard, id, tenant_id, job_id, scheduled_for, trigger, 'succeeded', attempts, started_at, now(), 200,
                      created_at from gone`;
    }
    // Inline: a first attempt's outcome is the history row's own (response_status, started_at, finished_at).
    if (variant !== 'split, job HOT, attempt inline' && variant !== 'floor') {
      await tx`insert into attempts (shard, run_id, attempt, started_at, finished_at, duration_ms, response_status)
               select ${shard}::smallint, id, 1, now(), now(), 5, 200 from unnest(${ids}::uuid[]) as id`;
    }
  });
  return claimed.length;
}

async function measure(factory: DatabaseFactory, variant: Variant, n: number, batch: number) {
  const { name, url } = await factory.create('split');
  await migratePostgresUrl(url);
  const sql = connect(url);
  try {
    await addDueRuns(sql, n, null, 0);
    if (variant !== 'today') await intoQueue(sql);
    if (variant.startsWith('split, job HOT')) {
      await sql.unsafe('alter table jobs set (fillfactor = 50)');
      await sql.unsafe('vacuum full jobs');
    }
    if (variant === 'floor') await sql.unsafe('drop index runs_occurrence_idx, runs_backfill_idx, runs_job_idx, runs_tenant_idx');
    await sql.unsafe('vacuum analyze');
    const shard = (await sql<{ shard: number }[]>`select chime_shard_of(${TENANT}::uuid) as shard`)[0]!.shard;
    // One connection: forcing its counts out makes each reading complete.
    await sql`select pg_stat_force_next_flush()`;
    const before = await tableWrites(sql, TABLES);
    const lsn = await walPosition(sql);
    const started = performance.now();
    let done = 0;
    for (let k = await claimAndFinish(sql, variant, shard, batch); k > 0; k = await claimAndFinish(sql, variant, shard, batch)) done += k;
    const ms = performance.now() - started;
    const bytes = await walBytesSince(sql, lsn);
    await sql`select pg_stat_force_next_flush()`;
    const after = await tableWrites(sql, TABLES);
    if (done !== n) throw new Error(`${variant}: ${done} of ${n} runs drained`);
    const left = (await sql<{ n: number }[]>`select count(*)::int as n from runs where status <> 'succeeded' and id <> ${TEMPLATE_JOB}`)[0]!
      .n;
    if (left !== 0) throw new Error(`${variant}: ${left} runs not succeeded`);
    const width = Math.max(...VARIANTS.map((v) => v.length));
    const perRun = Math.round(bytes / n).toLocaleString('en');
    console.log(
      `${variant.padEnd(width)}  WAL ${perRun.padStart(6)} bytes per run, ${((ms / n) * 1000).toFixed(0)} µs per run; ${formatWrites(writesPerRun(before, after, TABLES, n))}`,
    );
  } finally {
    await sql.end();
    await factory.drop(name);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '20000' }, batch: { type: 'string', default: '100' } } });
  const n = Number(values.runs);
  const batch = Number(values.batch);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--runs: a whole number of runs ≥ 1, not "${values.runs}"`);
  if (!Number.isInteger(batch) || batch < 1) throw new Error(`--batch: a whole number ≥ 1, not "${values.batch}"`);
  const factory = new DatabaseFactory(benchAdminUrl());
  try {
    await factory.dropStale();
    for (const variant of VARIANTS) await measure(factory, variant, n, batch);
  } finally {
    await factory.close();
  }
}

await main();
