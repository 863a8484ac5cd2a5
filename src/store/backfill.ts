/**
 * Backfill (API.md "Richer schedules", `POST /v1/jobs/:jobId/backfill`): a run (trigger `backfill`, `scheduled_for`
 * the occurrence) for each past occurrence of a job in a range that has none yet, oldest first, a bounded number per
 * call. Idempotent by its range: `runs_backfill_idx` (unique `(shard, job_id, scheduled_for)` of backfill runs) and the
 * look-up of the occurrences' runs make a second call create nothing. Under the job's overlap policy: the runs of a job
 * whose runs may not overlap (`skip`, `buffer-one`) are made buffered and go one after another (run-ends.ts
 * `releaseNextBuffered`: the first at once when nothing of the job is in flight, each end releasing the next).
 */
import { sql } from 'drizzle-orm';
import { type BackfillRange, MAX_BACKFILL_OCCURRENCES, occurrencesIn } from '../domain/backfill.ts';
import type { Calendar, CalendarRoll } from '../domain/calendar.ts';
import { newId } from '../domain/ids.ts';
import type { Schedule } from '../domain/schedule.ts';
import { shardOf } from '../domain/shard.ts';
import { JOB_STATUS, type OverlapPolicy, RUN_STATUS, RUN_TRIGGER } from '../domain/states.ts';
import { recordAudit } from './audit-log.ts';
import type { StoreContext } from './context.ts';
import { announceRun, type Db, type Executor, epochMs, query } from './db.ts';
import { JobStateError } from './job-lifecycle.ts';
import { type PlanColumns, planColumns, planRuleOf } from './plan-columns.ts';
import { releaseNextBuffered } from './queue/run-ends.ts';
import { runs } from './schema.ts';

/** What a backfill call did: the runs it made (oldest first) and the occurrences of the range still without a run. */
export type BackfillResult = { created: number; runIds: string[]; remaining: number };

/** The range holds more occurrences than a backfill may walk (MAX_BACKFILL_OCCURRENCES). */
export class BackfillRangeError extends Error {
  override name = 'BackfillRangeError';
  constructor(readonly max: number) {
    super(`the range holds more than ${max} occurrences of the job; backfill a shorter range`);
  }
}

/** What decides a job's occurrences, as read for a backfill; `canceled` refuses it. */
type PlanInputs = {
  status: string;
  overlapPolicy: OverlapPolicy;
  schedule: Schedule;
  calendar: Calendar | null;
  roll: CalendarRoll | null;
};

/**
 * Backfills the tenant's job `jobId` over `range` at `ctx.clock.now()`. The occurrences are walked before the job is
 * locked (up to MAX_BACKFILL_OCCURRENCES `nextOccurrence` calls, not to be spent holding the lock a claim of the job
 * waits for), and again under the lock only if the job's schedule or calendar changed in between. Then one
 * transaction: lock the job (`FOR UPDATE`, as a trigger does), read the runs already at those instants (a `schedule`
 * run, unless it ended `canceled` or `skipped` without a request, or a `backfill` run), insert the first `range.limit`
 * occurrences without one, release the first of them when the job's runs may not overlap, announce, and write the
 * audit entry (`job.backfilled`).
 * @param range from (inclusive) and to (exclusive), epoch ms; the caller checks from < to <= now and the limit
 * @returns null when the tenant has no such job (or it is a notification endpoint's)
 * @throws JobStateError for a canceled job
 * @throws BackfillRangeError when the range holds more than MAX_BACKFILL_OCCURRENCES occurrences
 */
export async function backfillJob(
  ctx: StoreContext,
  tenantId: string,
  jobId: string,
  range: BackfillRange,
): Promise<BackfillResult | null> {
  const before = await planInputs(ctx.db, tenantId, jobId, false);
  if (!before) return null;
  if (before.status === JOB_STATUS.canceled) throw new JobStateError('the job is canceled');
  const walked = await walk(before, range);
  return (ctx.db as Db).transaction(async (tx) => {
    const job = await planInputs(tx, tenantId, jobId, true);
    if (!job) return null;
    if (job.status === JOB_STATUS.canceled) throw new JobStateError('the job is canceled');
    const occurrences = samePlan(before, job) ? walked : await walk(job, range);
    const shard = shardOf(tenantId);
    const now = ctx.clock.now();
    const covered = await coveredInstants(tx, shard, jobId, range);
    const missing = occurrences.filter((t) => !covered.has(t));
    const chosen = missing.slice(0, range.limit);
    if (chosen.length === 0) return { created: 0, runIds: [], remaining: missing.length };
    const buffered = job.overlapPolicy !== 'allow';
    const made = await tx
      .insert(runs)
      .values(
        chosen.map((t) => ({
          shard,
          id: newId(),
          tenantId,
          jobId,
          scheduledFor: new Date(t),
          trigger: RUN_TRIGGER.backfill,
          status: RUN_STATUS.scheduled,
          // One after another when the job's runs may not overlap: waiting, buffered, until released.
          nextAttemptAt: buffered ? null : new Date(now),
          buffered,
          createdAt: new Date(now),
        })),
      )
      .onConflictDoNothing()
      .returning({ id: runs.id, scheduledFor: runs.scheduledFor });
    made.sort((a, b) => a.scheduledFor.getTime() - b.scheduledFor.getTime());
    if (buffered) await releaseNextBuffered(tx, shard, [jobId], now);
    else await announceRun(tx, now, now);
    if (made.length > 0) {
      await recordAudit(tx, ctx.source, now, [{ tenantId, action: 'job.backfilled', target: { type: 'job', id: jobId } }]);
    }
    // An occurrence the insert found taken (a concurrent call's) has its run now: it is not remaining either.
    return { created: made.length, runIds: made.map((m) => m.id), remaining: missing.length - chosen.length };
  });
}

/** Occurrences walked between two turns of the event loop (a few tens of ms of CPU at most). */
const WALK_SLICE = 200;

/**
 * The occurrences `job` fires in the range, walked in slices that let other requests in between.
 * @throws BackfillRangeError past MAX_BACKFILL_OCCURRENCES
 */
async function walk(job: PlanInputs, range: BackfillRange): Promise<number[]> {
  const found: number[] = [];
  for (const t of occurrencesIn(job, range.fromMs, range.toMs)) {
    if (found.length === MAX_BACKFILL_OCCURRENCES) throw new BackfillRangeError(MAX_BACKFILL_OCCURRENCES);
    found.push(t);
    if (found.length % WALK_SLICE === 0) await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return found;
}

const samePlan = (a: PlanInputs, b: PlanInputs) =>
  JSON.stringify([a.schedule, a.calendar, a.roll]) === JSON.stringify([b.schedule, b.calendar, b.roll]);

/**
 * The tenant's callback job `jobId` as a backfill plans it: its plan columns in one statement (`planColumns`, the
 * calendar read with the job; `planRuleOf` keeps the roll only when the calendar exists, as the planner does), locked
 * `FOR UPDATE` when `lock`; null when there is none.
 */
async function planInputs(db: Executor, tenantId: string, jobId: string, lock: boolean): Promise<PlanInputs | null> {
  const shard = shardOf(tenantId);
  const [row] = await query<PlanColumns & { status: string; overlap_policy: OverlapPolicy }>(
    db,
    sql`select j.status, j.overlap_policy, ${planColumns(shard)} from jobs j
        where j.shard = ${shard} and j.tenant_id = ${tenantId} and j.id = ${jobId} and j.kind = 'callback'
        ${lock ? sql`for update of j` : sql``}`,
  );
  if (!row) return null;
  const { schedule, calendar, roll } = planRuleOf(jobId, row);
  return { status: row.status, overlapPolicy: row.overlap_policy, schedule, calendar, roll };
}

/**
 * The instants in the range at which job `jobId` already has a run that stands for its occurrence: a `schedule` run
 * (not one ended `canceled` or `skipped`, which made no request: a pause, a schedule change, an overlap or catch-up
 * skip), or a `backfill` run. Two probes, one on each unique index of occurrences.
 */
async function coveredInstants(tx: Executor, shard: number, jobId: string, range: BackfillRange): Promise<Set<number>> {
  const from = new Date(range.fromMs).toISOString();
  const to = new Date(range.toMs).toISOString();
  const rows = await query<{ at: Date | string }>(
    tx,
    sql`select scheduled_for as at from runs where shard = ${shard} and job_id = ${jobId} and trigger = ${RUN_TRIGGER.schedule}
          and scheduled_for >= ${from}::timestamptz and scheduled_for < ${to}::timestamptz
          and status not in (${RUN_STATUS.canceled}, ${RUN_STATUS.skipped})
        union all
        select scheduled_for from runs where shard = ${shard} and job_id = ${jobId} and trigger = ${RUN_TRIGGER.backfill}
          and scheduled_for >= ${from}::timestamptz and scheduled_for < ${to}::timestamptz`,
  );
  return new Set(rows.map((r) => epochMs(r.at)));
}
