/**
 * Chains (API.md "Richer schedules"; src/domain/chain.ts): when a run of a job ends `succeeded`, `failed` or `expired`,
 * a run of each job its `then` names for that end (`on`: the status, or `finished` for any of them) is inserted in the
 * transaction that records the end (`recordRunEnds`: the finish, the reaper, a release at shutdown, an async report or
 * the completion reaper; the claim for the runs it ends `expired`), so a crash can neither lose a chained run nor make
 * it twice: a run ends once (docs/design.md invariants 11 and 15).
 *
 * A chained run is a run of its job like a manual one (`trigger = 'chain'`, due now; it goes even when the job is
 * paused, and counts in its run lists, overlap, failures in a row and usage, not toward `maxRuns`), carrying
 * `upstream` (`ChainUpstream`) for its request's `Chime-Upstream-*` headers and payload.
 */
import { sql } from 'drizzle-orm';
import { type ChainLink, linkFires } from '../../domain/chain.ts';
import { newId } from '../../domain/ids.ts';
import { DELIVERY_TRIGGERS, type RunTrigger } from '../../domain/states.ts';
import { announceRun, type Executor, type PlannerSettings, pipelined, query, uuidArray } from '../db.ts';

/** A run that just ended, as `recordRunEnds` passes it, with its job's links when the statement that ended it read them. */
export type ChainedEnd = {
  id: string;
  job_id: string;
  trigger: string;
  status: string;
  /** The job's `then` (null: none); undefined when not read with the end: `triggerChains` reads it. */
  then_jobs?: ChainLink[] | null;
};

/**
 * The insert's planner settings: the ended runs (a jsonb recordset) joined to their rows and their target jobs by
 * primary key in nested loops, as RUN_ENDS_PLAN does for the same reason (short of statistics, a hash join read the
 * bucket's runs or jobs whole).
 */
const CHAIN_PLAN: PlannerSettings = { enable_nestloop: 'on', enable_hashjoin: 'off', enable_mergejoin: 'off' };

/**
 * Inserts the chained runs of the runs in `ended` (bucket `shard`, the caller's transaction, after their end is
 * written), due at `nowMs`, and announces them. Notification and result deliveries chain nothing. A target job is
 * skipped when it is canceled, is not a callback job of the same tenant, or is already in the upstream's chain (a cycle
 * that two concurrent changes closed: src/domain/chain.ts). The target jobs are locked `FOR KEY SHARE`, so a cancel
 * (which locks its job `FOR UPDATE`) either sees the chained run and cancels it or is seen and skipped; the finish's,
 * claim's and pauses' updates of jobs take no conflicting lock, so the lock adds no wait on the hot path.
 *
 * Cost: nothing is sent when no ended run has a link that fires (the finish, the reaper and the completion return each
 * job's links with the end); runs ended without their links (`then_jobs` undefined) cost one read of their jobs.
 * @returns how many chained runs were made
 */
export async function triggerChains(tx: Executor, shard: number, ended: readonly ChainedEnd[], nowMs: number): Promise<number> {
  const own = ended.filter(
    (e) => !DELIVERY_TRIGGERS.includes(e.trigger as RunTrigger) && e.then_jobs !== null && linkFires('finished', e.status),
  );
  if (own.length === 0) return 0;
  const unknown = [...new Set(own.filter((e) => e.then_jobs === undefined).map((e) => e.job_id))];
  const read =
    unknown.length === 0
      ? new Map<string, ChainLink[]>()
      : new Map(
          (
            await query<{ id: string; then_jobs: ChainLink[] }>(
              tx,
              sql`select id, then_jobs from jobs where shard = ${shard} and id = any(${uuidArray(unknown)}::uuid[])
                and then_jobs is not null`,
            )
          ).map((j) => [j.id, j.then_jobs]),
        );
  const links: { new_id: string; run_id: string; target: string; status: string }[] = [];
  for (const e of own) {
    for (const link of e.then_jobs ?? read.get(e.job_id) ?? []) {
      if (linkFires(link.on, e.status)) links.push({ new_id: newId(), run_id: e.id, target: link.jobId, status: e.status });
    }
  }
  if (links.length === 0) return 0;
  const now = new Date(nowMs).toISOString();
  const [inserted] = await pipelined(
    tx,
    CHAIN_PLAN,
    () =>
      query<{ id: string }>(
        tx,
        sql`insert into runs as chained
            (shard, id, tenant_id, job_id, scheduled_for, trigger, status, next_attempt_at, created_at, upstream)
          select t.shard, v.new_id, t.tenant_id, t.id, ${now}::timestamptz, 'chain', 'scheduled', ${now}::timestamptz, ${now}::timestamptz,
                 jsonb_build_object('jobId', u.job_id, 'runId', u.id, 'status', v.status, 'chain', c.chain)
                   || case when u.output is null or jsonb_typeof(u.output) = 'null' then '{}'::jsonb
                      else jsonb_build_object('output', u.output) end
          from jsonb_to_recordset(${JSON.stringify(links)}::jsonb) as v(new_id uuid, run_id uuid, target uuid, status text)
            join runs u on u.shard = ${shard} and u.id = v.run_id
            -- The jobs of the chain so far, this run's included: a link back to one of them does not fire.
            cross join lateral (select coalesce(u.upstream->'chain', '[]'::jsonb) || jsonb_build_array(u.job_id) as chain) c
            join jobs t on t.shard = ${shard} and t.id = v.target and t.tenant_id = u.tenant_id
          where t.kind = 'callback' and t.status <> 'canceled' and not c.chain @> jsonb_build_array(v.target)
          for key share of t
          -- Qualified by the insert's alias: Citus (13.2) deparses a bare column of RETURNING as runs.<column>, which
          -- the shard's own table name does not answer to.
          returning chained.id`,
      ),
    // Due now: a sleeping dispatcher wakes (a notification sent at the commit; none made is a harmless wake-up).
    () => announceRun(tx, nowMs, nowMs),
  );
  return inserted.length;
}
