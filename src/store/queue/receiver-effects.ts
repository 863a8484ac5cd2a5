/**
 * What a receiver's answer does to its job when the run's outcome is recorded (API.md "Receiver control and result
 * routing"), in the caller's transaction on one bucket (`recordRunEnds`: the finish, the reaper and the release at
 * shutdown): `Chime-Control: complete` and `skip-next`, and result deliveries to `onSuccess` / `onFailure`.
 * (`Chime-Control: pause` is an ordinary pause, `pausedReason: "receiver"`, through `pauseJobs`; `no-retry` is decided
 * before the finish, in `decideAfterAttempt`.)
 *
 * A result delivery is modelled as a notification event is (src/store/notifications.ts): a run, here of the job itself,
 * with `trigger = 'result'`, its own callback (`runs.callback`: `{ url, method: 'POST' }`, which the claim takes over
 * the job's), its body (`runs.payload`), a `webhook-id` of its own (`runs.event_id`) and the run whose result it carries
 * (`runs.result_of`). So it goes through the same dispatchers, leases, destination guard, signatures, attempt log and
 * retries (EVENT_DELIVERY_RETRY for 24 h: the claim sets them, `asResultDelivery`), and it is committed with the end of
 * the run it reports, so a crash cannot lose it (at least once). Such runs are never the job's own: the finish, the
 * failures in a row, overlap, usage, the run lists and dead letters leave `trigger = 'result'` out.
 */
import { sql } from 'drizzle-orm';
import type { EventSeed } from '../../domain/events.ts';
import { newId } from '../../domain/ids.ts';
import type { ResultRoute } from '../../domain/job.ts';
import { planAfter } from '../../domain/plan.ts';
import type { ControlToken, ResultResponse } from '../../domain/receiver-control.ts';
import { RUN_STATUS, RUN_TRIGGER } from '../../domain/states.ts';
import { announceRun, type Executor, epochMs, query, uuidArray } from '../db.ts';
import { eventDeliveryCallback, eventJobView } from '../notifications.ts';
import { syncOpenJobs } from '../open-jobs.ts';
import { type PlanColumns, planColumns, planRuleOf } from '../plan-columns.ts';
import { jobs, runs } from '../schema.ts';
import { runView } from '../views.ts';
import { dueTimes } from './spread-runs.ts';

/** A result delivery an outcome asks for: where to, and the response it carries (null: the attempt got none). */
export type ResultDeliverySeed = { url: string; response: ResultResponse | null };

/**
 * What a finish knows beyond the runs' new states (`recordRunEnds`): run id → the `Chime-Control` tokens acting at the
 * finish (`complete`, `skip-next`), and run id → its result delivery (null: none). A run missing from `results` (the
 * reaper's, a release's) has its job's routes read, and carries no response.
 */
export type RunEndEffects = {
  control?: ReadonlyMap<string, readonly ControlToken[]>;
  results?: ReadonlyMap<string, ResultDeliverySeed | null>;
};

/** The error a run skipped by `skip-next` shows. */
export const SKIPPED_BY_RECEIVER = 'skipped: the receiver answered Chime-Control: skip-next';

/** A run that ended (its new status), as `recordRunEnds` passes it. */
type Ended = { id: string; job_id: string; tenant_id: string; status: string };

/**
 * `Chime-Control: complete`: the jobs (active or paused) become `completed`, with no `nextRunAt` and no pausedReason,
 * and their pending scheduled occurrence is canceled. Two statements, bucket `shard`.
 * @returns the `job.completed` events of the jobs it completed
 */
export async function completeJobs(tx: Executor, shard: number, jobIds: readonly string[], nowMs: number): Promise<EventSeed[]> {
  if (jobIds.length === 0) return [];
  const nowIso = new Date(nowMs).toISOString();
  const ids = uuidArray(jobIds);
  const done = await query<{ id: string; tenant_id: string }>(
    tx,
    sql`update jobs set status = 'completed', paused_reason = null, next_run_at = null, updated_at = ${nowIso}::timestamptz
      where shard = ${shard} and id = any(${ids}::uuid[]) and status in ('active', 'paused') and kind = 'callback'
      returning id, tenant_id`,
  );
  if (done.length === 0) return [];
  await syncOpenJobs(
    tx,
    shard,
    done.map((d) => d.id),
  );
  await tx.execute(sql`update runs set status = 'canceled', finished_at = ${nowIso}::timestamptz, next_attempt_at = null,
      error = 'job completed: the receiver answered Chime-Control: complete'
    where shard = ${shard} and job_id = any(${uuidArray(done.map((d) => d.id))}::uuid[]) and status = 'scheduled' and trigger = 'schedule'`);
  return done.map((d) => ({ type: 'job.completed', tenantId: d.tenant_id, jobId: d.id }));
}

/**
 * `Chime-Control: skip-next`: the next scheduled occurrence of each active job (its pending `schedule` run, not yet
 * claimed) ends `skipped` without a request, and the occurrence after it becomes the pending one, as a claim would
 * have made it (its jitter offset, `nextRunAt`; `completed` when the schedule has none left). An occurrence a
 * dispatcher has already claimed (ahead of its time, within the lookahead) is not skipped: it is locked `SKIP LOCKED`
 * (the claim holds it) or no longer `scheduled`. Bucket `shard`.
 * @returns the `job.completed` events of the jobs whose schedule had nothing after the skipped occurrence
 */
export async function skipNextOccurrences(tx: Executor, shard: number, jobIds: readonly string[], nowMs: number): Promise<EventSeed[]> {
  if (jobIds.length === 0) return [];
  const nowIso = new Date(nowMs).toISOString();
  const pending = await query<PlanColumns & { id: string; job_id: string; tenant_id: string; scheduled_for: Date | string; url: string }>(
    tx,
    sql`select r.id, r.job_id, r.tenant_id, r.scheduled_for, j.callback->>'url' as url, ${planColumns(shard)}
      from runs r join jobs j on j.shard = ${shard} and j.id = r.job_id and j.status = 'active'
      where r.shard = ${shard} and r.job_id = any(${uuidArray(jobIds)}::uuid[]) and r.status = 'scheduled' and r.trigger = 'schedule'
        and not r.buffered
      for update of r skip locked`,
  );
  if (pending.length === 0) return [];
  // The skipped occurrence counts as a scheduled run (`maxRuns`), as a claim of it would have.
  const next = pending.map((p) => planAfter({ ...planRuleOf(p.job_id, p), scheduledRuns: p.scheduled_runs + 1 }, epochMs(p.scheduled_for)));
  const placed = await dueTimes(
    tx,
    shard,
    pending.flatMap((p, i) => {
      const planned = next[i];
      return planned
        ? [{ tenantId: p.tenant_id, jobId: p.job_id, url: p.url, jitterMs: p.jitter_ms, jitterMode: p.jitter_mode, planned }]
        : [];
    }),
  );
  let k = 0;
  const plans = pending.map((p, i) => {
    const planned = next[i];
    const dueMs = planned ? placed[k++]! : null;
    const firesAt = planned ? (planned.firesAtMs === planned.dueMs ? dueMs : planned.firesAtMs) : null;
    return {
      run_id: p.id,
      new_id: newId(),
      id: p.job_id,
      tenant_id: p.tenant_id,
      next_at: planned ? new Date(planned.occurrenceMs).toISOString() : null,
      due_at: dueMs === null ? null : new Date(dueMs).toISOString(),
      fires_at: firesAt === null ? null : new Date(firesAt).toISOString(),
    };
  });
  const json = JSON.stringify(plans);
  await tx.execute(sql`update runs r set status = 'skipped', finished_at = ${nowIso}::timestamptz, next_attempt_at = null,
      error = ${SKIPPED_BY_RECEIVER}
    from jsonb_to_recordset(${json}::jsonb) as v(run_id uuid)
    where r.shard = ${shard} and r.id = v.run_id`);
  await tx.execute(sql`insert into runs (shard, id, tenant_id, job_id, scheduled_for, trigger, status, next_attempt_at, created_at)
    select ${shard}::smallint, v.new_id, v.tenant_id, v.id, v.next_at, 'schedule', 'scheduled', v.due_at, ${nowIso}::timestamptz
    from jsonb_to_recordset(${json}::jsonb) as v(new_id uuid, id uuid, tenant_id uuid, next_at timestamptz, due_at timestamptz)
    where v.next_at is not null
    on conflict (shard, job_id, scheduled_for) where trigger = 'schedule' do nothing`);
  await tx.execute(sql`update jobs j
    set next_run_at = v.fires_at, status = case when v.next_at is null then 'completed' else j.status end,
        scheduled_runs = j.scheduled_runs + 1, updated_at = ${nowIso}::timestamptz
    from jsonb_to_recordset(${json}::jsonb) as v(id uuid, next_at timestamptz, fires_at timestamptz)
    where j.shard = ${shard} and j.id = v.id`);
  await syncOpenJobs(
    tx,
    shard,
    plans.filter((p) => p.next_at === null).map((p) => p.id),
  );
  const due = plans.flatMap((p) => (p.due_at ? [Date.parse(p.due_at)] : []));
  if (due.length > 0) await announceRun(tx, Math.min(...due), nowMs);
  return plans.filter((p) => p.next_at === null).map((p) => ({ type: 'job.completed', tenantId: p.tenant_id, jobId: p.id }));
}

/**
 * Inserts the result deliveries of runs that just ended `succeeded` / `failed` (bucket `shard`, the caller's
 * transaction, after the runs' and jobs' updates so the bodies show them): one `trigger = 'result'` run per ended run
 * whose job routes its end, due now, carrying `{ type: "run.succeeded" | "run.failed", eventId, occurredAt, data: {
 * job, run, response } }` (the job as the API shows it, custom header values redacted as in notification events; the
 * response: status, kept headers, body ≤ 64 KiB as text or base64 with `bodyEncoding`; null when there was none).
 * @param seeds run id → its delivery (null: none); runs missing from it have their job's routes read here
 * @returns how many deliveries were made
 */
export async function recordResultDeliveries(
  tx: Executor,
  shard: number,
  ended: readonly Ended[],
  seeds: ReadonlyMap<string, ResultDeliverySeed | null> | undefined,
  nowMs: number,
): Promise<number> {
  const finished = ended.filter((e) => e.status === RUN_STATUS.succeeded || e.status === RUN_STATUS.failed);
  const wanted = new Map<string, ResultDeliverySeed>();
  const unknown: Ended[] = [];
  for (const e of finished) {
    if (seeds?.has(e.id)) {
      const s = seeds.get(e.id);
      if (s) wanted.set(e.id, s);
    } else unknown.push(e);
  }
  if (unknown.length > 0) {
    // The reaper's and a release's ends: the job's routes as they are now (rare: runs whose lease was lost).
    const routes = await query<{ id: string; on_success: ResultRoute | null; on_failure: ResultRoute | null }>(
      tx,
      sql`select id, on_success, on_failure from jobs
        where shard = ${shard} and id = any(${uuidArray([...new Set(unknown.map((u) => u.job_id))])}::uuid[])
          and (on_success is not null or on_failure is not null)`,
    );
    const byJob = new Map(routes.map((r) => [r.id, r]));
    for (const e of unknown) {
      const r = byJob.get(e.job_id);
      const route = e.status === RUN_STATUS.succeeded ? r?.on_success : r?.on_failure;
      if (route) wanted.set(e.id, { url: route.url, response: null });
    }
  }
  if (wanted.size === 0) return 0;
  const runIds = uuidArray([...wanted.keys()]);
  const jobIds = uuidArray([...new Set(finished.filter((e) => wanted.has(e.id)).map((e) => e.job_id))]);
  const jobRows = await tx.select().from(jobs).where(sql`${jobs.shard} = ${shard} and ${jobs.id} = any(${jobIds}::uuid[])`);
  const runRows = await tx.select().from(runs).where(sql`${runs.shard} = ${shard} and ${runs.id} = any(${runIds}::uuid[])`);
  const jobById = new Map(jobRows.map((j) => [j.id, j]));
  const now = new Date(nowMs);
  const deliveries: (typeof runs.$inferInsert)[] = [];
  for (const run of runRows) {
    const seed = wanted.get(run.id);
    const job = jobById.get(run.jobId);
    if (!seed || !job) continue;
    const eventId = newId();
    deliveries.push({
      shard,
      id: newId(),
      tenantId: run.tenantId,
      jobId: run.jobId,
      scheduledFor: now,
      trigger: RUN_TRIGGER.result,
      status: RUN_STATUS.scheduled,
      nextAttemptAt: now,
      createdAt: now,
      eventId,
      callback: eventDeliveryCallback(seed.url),
      resultOf: run.id,
      payload: {
        type: run.status === RUN_STATUS.succeeded ? 'run.succeeded' : 'run.failed',
        eventId,
        occurredAt: now.toISOString(),
        data: {
          job: eventJobView(job),
          run: runView(run),
          response: seed.response,
        },
      },
    });
  }
  if (deliveries.length === 0) return 0;
  await tx.insert(runs).values(deliveries);
  await announceRun(tx, nowMs, nowMs);
  return deliveries.length;
}
