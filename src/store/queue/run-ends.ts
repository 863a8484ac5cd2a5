/**
 * What runs that just ended mean for their jobs, after a finish, a reap or a release at shutdown: the failures in a
 * row (a failure adds one, a success resets), the pauses they cause (a 410 Gone, `pauseAfterFailures` reached), the
 * events of it all and the runs their chains trigger, in the caller's transaction on one bucket (docs/design.md
 * invariants 10 and 11).
 */
import { sql } from 'drizzle-orm';
import type { ChainLink } from '../../domain/chain.ts';
import { type EventSeed, PAUSED_REASON, type PausedReason } from '../../domain/events.ts';
import { RUN_STATUS, RUN_TRIGGER } from '../../domain/states.ts';
import { recordAudit } from '../audit-log.ts';
import { announceRun, batchByPrimaryKey, type Executor, type PlannerSettings, queryPlanned, uuidArray } from '../db.ts';
import { pauseJobs } from '../job-lifecycle.ts';
import { recordEvents } from '../notifications.ts';
import { triggerChains } from './chain-runs.ts';
import { completeJobs, type RunEndEffects, recordResultDeliveries, skipNextOccurrences } from './receiver-effects.ts';

export type { RunEndEffects } from './receiver-effects.ts';

/**
 * For the statements of `countFailuresInARow` and the pauses of `recordRunEnds` (jobs and their runs, by id within one
 * bucket): nested loops over the primary key only, as in the claim (CLAIM_PLAN), for the same reason.
 */
export const RUN_ENDS_PLAN: PlannerSettings = { enable_nestloop: 'on', enable_hashjoin: 'off', enable_mergejoin: 'off' };

/**
 * A run whose state a finish, a reap or a release has just changed, with its new status, and its job's chain links
 * (`then`: null when none) when the statement that changed it read them (undefined: `triggerChains` reads them).
 */
export type EndedRun = {
  id: string;
  job_id: string;
  tenant_id: string;
  trigger: string;
  status: string;
  then_jobs?: ChainLink[] | null;
  /** The job's `overlapPolicy`, when the statement read it: a job whose runs may overlap has no buffered run to release. */
  overlap_policy?: string | null;
};
/** A run the finish statement recorded, and whether its job reached `pauseAfterFailures` by the statement's count. */
export type FinishedRun = EndedRun & { reached: boolean };

/**
 * The runs that count toward their job's failures in a row (and pause it, raise its events, route its results):
 * notification deliveries (runs of hidden jobs) and result deliveries (`trigger = 'result'`) do not.
 */
const countsForJob = (h: EndedRun) => h.trigger !== RUN_TRIGGER.notification && h.trigger !== RUN_TRIGGER.result;

/**
 * Counts the failed runs in a row of the jobs of `ended` (bucket `shard`), in the caller's transaction, after a reap
 * or a release (the finish counts in its own statement, `finishStatement`, with the same rule): a failure adds one, a
 * success resets the count (`expired` neither counts nor resets). A batch of successes of jobs without failures reads
 * their rows and writes nothing.
 * @returns the jobs that reached their `pauseAfterFailures` (active, with a threshold, count at or past it)
 */
export async function countFailuresInARow(tx: Executor, shard: number, ended: readonly EndedRun[]): Promise<Set<string>> {
  const tally = new Map<string, { failed: number; reset: boolean }>();
  for (const h of ended) {
    if (!countsForJob(h) || (h.status !== RUN_STATUS.failed && h.status !== RUN_STATUS.succeeded)) continue;
    const t = tally.get(h.job_id) ?? { failed: 0, reset: false };
    if (h.status === RUN_STATUS.failed) t.failed++;
    else t.reset = true;
    tally.set(h.job_id, t);
  }
  if (tally.size === 0) return new Set();
  // Nested loops over primary keys (with hash joins the update would scan the bucket's jobs).
  const counted = await queryPlanned<{ id: string; reached: boolean }>(
    tx,
    RUN_ENDS_PLAN,
    sql`update jobs j
      set consecutive_failures = ${NEXT_FAILURES('v')}
      from jsonb_to_recordset(${JSON.stringify([...tally].map(([id, t]) => ({ id, ...t })))}::jsonb) as v(id uuid, failed int, reset boolean)
      where ${batchByPrimaryKey('j', shard, [...tally.keys()])} and (v.failed > 0 or j.consecutive_failures <> 0)
      returning j.id, ${REACHED} as reached`,
  );
  return new Set(counted.filter((c) => c.reached).map((c) => c.id));
}

/** The failures-in-a-row rule over `jobs j` and a tally row `alias` (failed int, reset boolean): a failure adds one, a success alone resets. */
export const NEXT_FAILURES = (alias: 't' | 'v') =>
  sql.raw(`case when ${alias}.reset and ${alias}.failed = 0 then 0 else j.consecutive_failures + ${alias}.failed end`);

/** Whether an updated job row has reached its `pauseAfterFailures` (SQL over `jobs j`). */
export const REACHED = sql`(j.status = 'active' and j.pause_after_failures > 0 and j.consecutive_failures >= j.pause_after_failures)`;

/**
 * What runs that just ended (or were sent back to retry) mean for their jobs beyond the failures in a row, in the
 * caller's transaction on bucket `shard` (the finish, the reaper and a release at shutdown share it, so a run failed as
 * ambiguous counts as any other): the pauses (a 410 Gone; `pauseAfterFailures` reached, as counted) and the events of
 * it all (docs/design.md invariant 11: committed with the change), and the pauses' audit entries (actor `system`), and the runs the ends trigger through their jobs' `then` (chains:
 * `triggerChains`). Notification deliveries (runs of hidden jobs) are left out: they neither cause pauses nor events of
 * their own. Every statement names the bucket; a batch of
 * successes that pauses nothing sends none.
 * @param ended the runs changed, all of bucket `shard`, with their new status
 * @param pauseReasons run id → PausedReason its outcome asks for (`gone` for a 410); empty for the reaper
 * @param reached the jobs whose failures in a row reached their `pauseAfterFailures` (`countFailuresInARow`, or the finish's count)
 * @param nowMs the changes' time (epoch ms): the pauses' `updatedAt` and the events' `occurredAt`
 * @param effects what the receivers' answers ask beyond pauses (receiver-effects.ts): `Chime-Control: complete` and
 *   `skip-next`, applied after the pauses, and the result deliveries (`onSuccess`/`onFailure`), inserted last so their
 *   bodies show the runs and jobs as changed; absent (the reaper), the ended runs' jobs' routes are read
 */
export async function recordRunEnds(
  tx: Executor,
  shard: number,
  ended: readonly EndedRun[],
  pauseReasons: ReadonlyMap<string, PausedReason>,
  reached: ReadonlySet<string>,
  nowMs: number,
  effects: RunEndEffects = {},
): Promise<void> {
  const held = ended.filter(countsForJob);
  if (held.length === 0) return;
  const pauses = new Map<string, PausedReason>();
  for (const h of held) {
    const reason = pauseReasons.get(h.id);
    if (reason) pauses.set(h.job_id, reason);
  }
  for (const id of reached) if (!pauses.has(id)) pauses.set(id, PAUSED_REASON.consecutiveFailures);
  const events: EventSeed[] = [];
  for (const h of held) {
    if (h.status === RUN_STATUS.failed) events.push({ type: 'run.failed', tenantId: h.tenant_id, jobId: h.job_id, runId: h.id });
    if (h.status === RUN_STATUS.expired) events.push({ type: 'run.expired', tenantId: h.tenant_id, jobId: h.job_id, runId: h.id });
  }
  if (pauses.size > 0) {
    const paused = await pauseJobs(
      tx,
      shard,
      [...pauses].map(([id, reason]) => ({ id, reason })),
      nowMs,
      RUN_ENDS_PLAN,
    );
    for (const p of paused) events.push({ type: 'job.paused', tenantId: p.tenant_id, jobId: p.id, reason: p.paused_reason ?? undefined });
    // Chime paused them: the audit log says so, and why (rare: a 410 or a job's failures reaching its bound).
    for (const reason of new Set(paused.map((p) => p.paused_reason ?? PAUSED_REASON.consecutiveFailures))) {
      await recordAudit(
        tx,
        { actor: { type: 'system', reason }, requestId: null },
        nowMs,
        paused
          .filter((p) => (p.paused_reason ?? PAUSED_REASON.consecutiveFailures) === reason)
          .map((p) => ({ tenantId: p.tenant_id, action: 'job.paused', target: { type: 'job', id: p.id } })),
      );
    }
  }
  const completing = new Set<string>();
  const skipping = new Set<string>();
  for (const h of held) {
    const tokens = effects.control?.get(h.id);
    if (tokens?.includes('complete')) completing.add(h.job_id);
    else if (tokens?.includes('skip-next')) skipping.add(h.job_id);
  }
  if (completing.size > 0) events.push(...(await completeJobs(tx, shard, [...completing], nowMs)));
  if (skipping.size > 0) events.push(...(await skipNextOccurrences(tx, shard, [...skipping], nowMs)));
  await recordResultDeliveries(tx, shard, held, effects.results, nowMs);
  // The runs the ends trigger through their jobs' `then`, in this same transaction (chain-runs.ts).
  await triggerChains(tx, shard, held, nowMs);
  await releaseBuffered(tx, shard, held, nowMs);
  await recordEvents(tx, events, nowMs);
}

/** Final states: a run in one of them no longer holds its job's turn (`buffer-one`, a backfill of a job whose runs may not overlap). */
const FINAL_STATUSES: readonly string[] = [
  RUN_STATUS.succeeded,
  RUN_STATUS.failed,
  RUN_STATUS.expired,
  RUN_STATUS.skipped,
  RUN_STATUS.canceled,
];

/**
 * Releases, for each job of `ended` whose run ended (a final status) and whose runs may not overlap, its next buffered
 * run (`releaseNextBuffered`; API.md "Richer schedules", `buffer-one`; a backfill's runs go one after another the same
 * way). In the transaction that records the end, so the release is never lost. No statement for jobs whose runs may
 * overlap (`allow`), the common case.
 */
export async function releaseBuffered(tx: Executor, shard: number, ended: readonly EndedRun[], nowMs: number): Promise<void> {
  const jobIds = [
    ...new Set(
      ended.filter((e) => FINAL_STATUSES.includes(e.status) && e.overlap_policy !== 'allow' && countsForJob(e)).map((e) => e.job_id),
    ),
  ];
  await releaseNextBuffered(tx, shard, jobIds, nowMs);
}

/**
 * Releases the next buffered run (runs.buffered, waiting without a due time) of each job of `jobIds` in bucket `shard`,
 * unless a run of that job is still in flight (running, awaiting completion, retrying, or released and not claimed yet):
 * its buffered `schedule` run if it has one (buffer-one's waiting occurrence goes before a backfill's remaining runs),
 * else its oldest. It becomes due at its occurrence or now, whichever is later: a run claimed ahead of its time and
 * buffered is never sent before it. In the caller's transaction (an end; a backfill; a claim that ended a run).
 * @returns how many runs it released
 */
export async function releaseNextBuffered(tx: Executor, shard: number, jobIds: readonly string[], nowMs: number): Promise<number> {
  if (jobIds.length === 0) return 0;
  const now = new Date(nowMs).toISOString();
  const waiting = (order: 'asc' | 'desc') => sql`select b.id, b.trigger from runs b
    where b.shard = ${shard} and b.job_id = j.id and b.buffer_waiting and b.next_attempt_at is null
    order by b.scheduled_for ${sql.raw(order)} limit 1`;
  const released = await queryPlanned<{ next_attempt_at: Date | string }>(
    tx,
    RUN_ENDS_PLAN,
    sql`update runs r set next_attempt_at = greatest(${now}::timestamptz, r.scheduled_for)
      from (select coalesce((select n.id from (${waiting('desc')}) n where n.trigger = ${RUN_TRIGGER.schedule}),
                            (select o.id from (${waiting('asc')}) o)) as id
            from jobs j where j.shard = ${shard} and j.id = any(${uuidArray(jobIds)}::uuid[])) next
      where r.shard = ${shard} and r.id = next.id
        -- Not while another run of its job is in flight (a manual run, a retry of an older one, one released before).
        and not exists (select 1 from runs o where o.shard = ${shard} and o.job_id = r.job_id and o.trigger <> ${RUN_TRIGGER.result}
                          and (o.status in ('running', 'retrying') or (o.buffer_waiting and o.next_attempt_at is not null)))
      returning r.next_attempt_at`,
  );
  if (released.length > 0) {
    const due = released.map((r) => (r.next_attempt_at instanceof Date ? r.next_attempt_at.getTime() : Date.parse(r.next_attempt_at)));
    await announceRun(tx, Math.min(...due), nowMs);
  }
  return released.length;
}
