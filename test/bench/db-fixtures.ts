/**
 * Rows for the database-only benchmarks (db-drain.ts, queue-split.ts): once-jobs of one tenant with their runs due,
 * written in SQL (`cloneRows`), as the scale workload adds future runs.
 */
import { cloneRows, type Sql } from './db.ts';

/** The benchmarks' tenant. */
export const TENANT = '00000000-0000-7000-8000-000000000001';
/** The job (and run) every added one is cloned from; its run is `canceled`, so no drain counts it. */
export const TEMPLATE_JOB = '00000000-0000-7000-8000-000000000002';

/**
 * Adds `n` once-jobs to the database of `sql`, each with its run due now, or with `rate` (runs/s) the i-th due at
 * `leadMs` + i / rate seconds from now (a steady stream, as the full benchmark's steady workload).
 */
export async function addDueRuns(sql: Sql, n: number, rate: number | null, leadMs: number): Promise<void> {
  // Due now, and their schedule says so: a claim then completes each job rather than plan a next occurrence.
  const at = new Date().toISOString();
  const schedule = { type: 'once', at };
  await sql`insert into tenants (shard, id, name, created_at) values (chime_shard_of(${TENANT}::uuid), ${TENANT}, 'bench', now())`;
  await sql`insert into jobs (shard, id, tenant_id, status, schedule, callback, retry, delivery_mode, overlap_policy, catch_up,
                              jitter_ms, metadata, next_run_at, created_at, updated_at)
            values (chime_shard_of(${TENANT}::uuid), ${TEMPLATE_JOB}, ${TENANT}, 'active', ${sql.json(schedule)},
                    '{"url":"http://127.0.0.1:9/db-drain","method":"POST","headers":{},"timeoutMs":10000,"successStatusCodes":["2xx"]}',
                    '{"strategy":"none"}', 'at-least-once', 'allow', 'latest', 0, '{}', ${at}, now(), now())`;
  await sql`insert into runs (shard, id, tenant_id, job_id, scheduled_for, trigger, status, next_attempt_at, created_at)
            values (chime_shard_of(${TENANT}::uuid), ${TEMPLATE_JOB}, ${TENANT}, ${TEMPLATE_JOB}, ${at}, 'schedule', 'canceled', null, now())`;
  await cloneRows(sql, { schema: 'public', name: 'jobs' }, `t.id = '${TEMPLATE_JOB}'`, { id: `md5('j' || g)::uuid` }, 1, n);
  // Open, as registration leaves them (src/store/open-jobs.ts).
  await sql`insert into open_jobs (shard, tenant_id, job_id)
            select shard, tenant_id, id from jobs where tenant_id = ${TENANT} and id <> ${TEMPLATE_JOB}`;
  const due = rate === null ? 't.scheduled_for' : `t.scheduled_for + (${leadMs} + g * ${1000 / rate}) * interval '1 millisecond'`;
  await cloneRows(
    sql,
    { schema: 'public', name: 'runs' },
    `t.id = '${TEMPLATE_JOB}'`,
    {
      id: `md5('r' || g)::uuid`,
      job_id: `md5('j' || g)::uuid`,
      status: `'scheduled'`,
      scheduled_for: due,
      next_attempt_at: due,
    },
    1,
    n,
  );
  await sql.unsafe('vacuum analyze jobs, runs');
}
