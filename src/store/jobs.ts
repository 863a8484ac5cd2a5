/**
 * Jobs, scoped by tenant. Creating a job commits the job and its first run in one transaction before the API
 * answers `201` (docs/design.md invariant 1), and announces the run on `RUNS_CHANNEL` so a sleeping dispatcher wakes.
 */
import { and, desc, eq, lt, type SQL, sql } from 'drizzle-orm';
import type { Calendar } from '../domain/calendar.ts';
import { newId } from '../domain/ids.ts';
import type { JobSpec } from '../domain/job.ts';
import { type PlannedRun, type PlanRule, planAfter } from '../domain/plan.ts';
import { shardOf } from '../domain/shard.ts';
import { JOB_STATUS, RUN_STATUS, RUN_TRIGGER } from '../domain/states.ts';
import { auditInsert, auditRowsJson } from './audit-log.ts';
import { calendarsByKey } from './calendars.ts';
import type { StoreContext } from './context.ts';
import { announcement, type Executor, isUniqueViolation, RUNS_CHANNEL, uuidArray } from './db.ts';
import { type JobFilter, jobFilterCondition } from './job-filter.ts';
import { countOpenJobs } from './open-jobs.ts';
import { page } from './paging.ts';
import { dueTimes } from './queue/spread-runs.ts';
import { jobs } from './schema.ts';
import { ofTenant } from './tenant-scope.ts';

export type JobRow = typeof jobs.$inferSelect;

/** Scopes every job query by tenant: another tenant's id simply does not match. */
/** The tenant's own job `jobId` (never a hidden notification job). */
const ownJob = (tenantId: string, jobId: string): SQL => and(ofTenant(jobs, tenantId), eq(jobs.id, jobId), eq(jobs.kind, 'callback'))!;

/** Options of job creation. */
export type CreateJobOptions = {
  /** Refuse to go over this many `active`/`paused` jobs of the tenant (QuotaExceededError); 0 or absent = no quota. */
  maxActiveJobs?: number;
};

/** A job's `key` is taken in its tenant (nothing was created). `key` is null when a batch's keys clashed. */
export class JobKeyTakenError extends Error {
  override name = 'JobKeyTakenError';
  constructor(readonly key: string | null) {
    super(
      key === null
        ? 'a key of this batch was taken concurrently; nothing was committed, retry the batch'
        : `a job with key "${key}" exists`,
    );
  }
}

/** A job names a calendar its tenant does not have (it was deleted since the request was checked); nothing was created. */
export class CalendarMissingError extends Error {
  override name = 'CalendarMissingError';
  constructor(readonly key: string) {
    super(`no calendar "${key}": create it first with PUT /v1/calendars/${key}`);
  }
}

/** Creating the job(s) would take the tenant over its active-jobs quota (`maxJobs`, src/domain/quotas.ts). */
export class QuotaExceededError extends Error {
  override name = 'QuotaExceededError';
  /** @param limit the quota (jobs) @param room how many more the tenant could have made (0 when at the quota) */
  constructor(
    readonly limit: number,
    readonly room: number,
  ) {
    super(`the tenant may have at most ${limit} active or paused jobs (quota maxJobs); cancel some first`);
  }
}

/**
 * How many more jobs the tenant may make before it has `maxActiveJobs` jobs `active` or `paused`.
 * With `ctx.openJobs`, a recent estimate answers while it says there is room for `adding` jobs with a margin
 * (open-jobs.ts); otherwise the jobs are counted (`countOpenJobs`: up to the quota, in `open_jobs`), and the count is
 * kept for the next checks.
 * Not a lock: concurrent creations each see the same count, so the quota may be exceeded by as many jobs as were
 * being created at the same moment. A quota, not an invariant.
 * @param maxActiveJobs the quota; 0 = none (returns Infinity without a query)
 * @param adding how many jobs the caller means to create (default 1)
 */
export async function activeJobsRoom(
  ctx: Pick<StoreContext, 'db' | 'openJobs'>,
  tenantId: string,
  maxActiveJobs: number,
  adding = 1,
): Promise<number> {
  if (!(maxActiveJobs > 0)) return Number.POSITIVE_INFINITY;
  const estimate = ctx.openJobs?.room(tenantId, maxActiveJobs, adding);
  if (estimate != null) return estimate;
  const open = await countOpenJobs(ctx.db, tenantId, maxActiveJobs);
  ctx.openJobs?.counted(tenantId, open);
  return Math.max(0, maxActiveJobs - open);
}

/**
 * Throws unless the tenant may make `adding` more jobs under `maxActiveJobs` (0/undefined = no quota).
 * @throws QuotaExceededError
 */
export async function assertActiveJobsRoom(
  ctx: Pick<StoreContext, 'db' | 'openJobs'>,
  tenantId: string,
  adding: number,
  maxActiveJobs: number | undefined,
): Promise<void> {
  if (!maxActiveJobs || maxActiveJobs <= 0 || adding <= 0) return;
  const room = await activeJobsRoom(ctx, tenantId, maxActiveJobs, adding);
  if (room < adding) throw new QuotaExceededError(maxActiveJobs, room);
}

/**
 * Creates a job and its first run (`createJobs` with one spec).
 * @throws as `createJobs`
 */
export async function createJob(
  ctx: StoreContext,
  tenantId: string,
  spec: JobSpec,
  registeredAtMs: number,
  opts: CreateJobOptions = {},
): Promise<JobRow> {
  const [job] = await createJobs(ctx, tenantId, [spec], registeredAtMs, opts);
  return job!;
}

/**
 * Creates jobs and their first runs, all or none: one statement writes them (and the NOTIFY of the soonest run due
 * soon), so it is atomic on `ctx.db` whether that is the database or a transaction (the idempotent and batch routes
 * pass theirs). The one creation path of callback jobs.
 * @param specs validated specs whose schedules are normalized; each fires at least once after `registeredAtMs`
 * @param registeredAtMs the time (epoch ms) the specs were validated and normalized against: each first occurrence is
 *   the first at or after it, so a `delay: 0` or a `once` a few ms ahead is not lost to the time validation took
 * @returns the jobs, in the order of `specs`
 * @throws JobKeyTakenError when a spec's `key` is taken in this tenant (nothing inserted)
 * @throws QuotaExceededError when the jobs would take the tenant over `opts.maxActiveJobs` (nothing inserted)
 */
export async function createJobs(
  ctx: StoreContext,
  tenantId: string,
  specs: JobSpec[],
  registeredAtMs: number,
  opts: CreateJobOptions = {},
): Promise<JobRow[]> {
  if (specs.length === 0) return [];
  await assertActiveJobsRoom(ctx, tenantId, specs.length, opts.maxActiveJobs);
  const now = ctx.clock.now();
  const nowDate = new Date(now);
  const from = Math.min(now, registeredAtMs) - 1;
  const jobRows: JobRow[] = [];
  const runRows: { id: string; job_id: string; scheduled_for: string; next_attempt_at: string }[] = [];
  const calendarKeys = specs.flatMap((s) => (s.calendar ? [s.calendar.key] : []));
  const cals = calendarKeys.length > 0 ? await calendarsByKey(ctx.db, tenantId, calendarKeys) : new Map<string, Calendar>();
  const missing = calendarKeys.find((k) => !cals.has(k));
  if (missing !== undefined) throw new CalendarMissingError(missing);
  const plans: { id: string; spec: JobSpec; first: PlannedRun | null }[] = specs.map((spec) => {
    const id = newId();
    const calendar = spec.calendar ? cals.get(spec.calendar.key)! : null;
    const rule: PlanRule = {
      jobId: id,
      schedule: spec.schedule,
      calendar,
      roll: spec.calendar?.roll ?? null,
      jitterMs: spec.jitterMs,
      jitterMode: spec.jitterMode ?? 'stable',
      maxRuns: spec.maxRuns ?? null,
      scheduledRuns: 0,
    };
    return { id, spec, first: planAfter(rule, from) };
  });
  const withFirst = plans.filter((p) => p.first !== null);
  const due = await dueTimes(
    ctx.db,
    shardOf(tenantId),
    withFirst.map((p) => ({
      tenantId,
      jobId: p.id,
      url: p.spec.callback.url,
      jitterMs: p.spec.jitterMs,
      jitterMode: p.spec.jitterMode ?? 'stable',
      planned: p.first!,
    })),
  );
  const dueOf = new Map(withFirst.map((p, i) => [p.id, due[i]!]));
  let soonest = Number.POSITIVE_INFINITY;
  for (const { id, spec, first } of plans) {
    const dueMs = dueOf.get(id);
    // The job's nextRunAt: when it fires (a spread run where it was placed, unless its calendar skips this occurrence).
    const firesAt = first === null ? null : first.firesAtMs === first.dueMs ? dueMs! : first.firesAtMs;
    jobRows.push({
      shard: shardOf(tenantId),
      id,
      tenantId,
      key: spec.key ?? null,
      name: spec.name ?? null,
      status: first === null ? JOB_STATUS.completed : JOB_STATUS.active,
      kind: 'callback',
      pausedReason: null,
      pauseAfterFailures: spec.pauseAfterFailures ?? 0,
      consecutiveFailures: 0,
      schedule: spec.schedule,
      callback: spec.callback,
      authTokenEnc: spec.authToken ? await ctx.cipher.seal(spec.authToken) : null,
      payload: spec.payload ?? null,
      retry: spec.retry,
      relevancyWindowMs: spec.relevancyWindowMs ?? null,
      deliveryMode: spec.deliveryMode,
      overlapPolicy: spec.overlapPolicy,
      catchUp: spec.catchUp,
      jitterMs: spec.jitterMs,
      metadata: spec.metadata ?? {},
      nextRunAt: firesAt === null ? null : new Date(firesAt),
      lastRunAt: null,
      createdAt: nowDate,
      updatedAt: nowDate,
      traceParent: ctx.source?.traceParent ?? null,
      completion: spec.completion ?? null,
      onSuccess: spec.onSuccess ?? null,
      onFailure: spec.onFailure ?? null,
      flowControlKey: spec.flowControlKey ?? null,
      authSecretEnc: spec.authSecret ? await ctx.cipher.seal(spec.authSecret) : null,
      body: spec.body ?? null,
      calendarKey: spec.calendar?.key ?? null,
      calendarRoll: spec.calendar?.roll ?? null,
      maxRuns: spec.maxRuns ?? null,
      scheduledRuns: 0,
      jitterMode: spec.jitterMode ?? 'stable',
      thenJobs: spec.then?.length ? spec.then : null,
    });
    if (first !== null && dueMs !== undefined) {
      soonest = Math.min(soonest, dueMs);
      runRows.push({
        id: newId(),
        job_id: id,
        scheduled_for: new Date(first.occurrenceMs).toISOString(),
        next_attempt_at: new Date(dueMs).toISOString(),
      });
    }
  }
  // Announced only when due soon (NOTIFY_HORIZON_MS): a dispatcher's poll finds later runs in time.
  try {
    const audit = auditRowsJson(
      ctx.source,
      now,
      jobRows.map((j) => ({ tenantId, action: 'job.created', target: { type: 'job', id: j.id } })),
    );
    await insertJobsAndRuns(ctx.db, tenantId, jobRows, runRows, nowDate.toISOString(), announcement(soonest, now), audit);
  } catch (err) {
    if (isUniqueViolation(err)) throw new JobKeyTakenError(specs.length === 1 ? (specs[0]!.key ?? null) : null);
    throw err;
  }
  ctx.openJobs?.added(tenantId, runRows.length);
  return jobRows;
}

/**
 * The registration hot path's one statement: the jobs, their `open_jobs` rows, their first runs, their audit entries (`audit`, from
 * `auditRowsJson`; null: none) and, when `notify` (the payload) is set, the NOTIFY of the soonest, with each array
 * passed as a single jsonb parameter (no per-row bind parameters, no query building per row), atomic without a
 * transaction.
 * @throws Error when a run is of a job not in `jobRows` (a bug: nothing is written)
 */
async function insertJobsAndRuns(
  db: Executor,
  tenantId: string,
  jobRows: JobRow[],
  runRows: { id: string; job_id: string; scheduled_for: string; next_attempt_at: string }[],
  nowIso: string,
  notify: string | null,
  audit: string | null,
): Promise<void> {
  const jobsJson = JSON.stringify(
    jobRows.map((j) => ({
      id: j.id,
      key: j.key,
      name: j.name,
      status: j.status,
      schedule: j.schedule,
      callback: j.callback,
      auth_token_enc: j.authTokenEnc,
      payload: j.payload,
      retry: j.retry,
      relevancy_window_ms: j.relevancyWindowMs,
      delivery_mode: j.deliveryMode,
      overlap_policy: j.overlapPolicy,
      catch_up: j.catchUp,
      jitter_ms: j.jitterMs,
      metadata: j.metadata,
      pause_after_failures: j.pauseAfterFailures,
      next_run_at: j.nextRunAt?.toISOString() ?? null,
      trace_parent: j.traceParent,
      completion: j.completion,
      on_success: j.onSuccess,
      on_failure: j.onFailure,
      flow_control_key: j.flowControlKey,
      auth_secret_enc: j.authSecretEnc,
      body: j.body,
      calendar_key: j.calendarKey,
      calendar_roll: j.calendarRoll,
      max_runs: j.maxRuns,
      jitter_mode: j.jitterMode,
      then_jobs: j.thenJobs,
    })),
  );
  // Only runs of the jobs this statement makes: the check a foreign key would make (runs have none, schema.ts), made
  // here rather than in SQL, where a join of the two inserts would make Citus send the first's rows to every worker.
  const made = new Set(jobRows.map((j) => j.id));
  const openIds = jobRows.filter((j) => j.status === JOB_STATUS.active || j.status === JOB_STATUS.paused).map((j) => j.id);
  const stray = runRows.find((r) => !made.has(r.job_id));
  if (stray) throw new Error(`run ${stray.id} is of job ${stray.job_id}, which this insert does not make`);
  await db.execute(sql`with new_jobs as (
      insert into jobs (shard, id, tenant_id, key, name, status, schedule, callback, auth_token_enc, payload, retry,
                        relevancy_window_ms, delivery_mode, overlap_policy, catch_up, jitter_ms, metadata,
                        pause_after_failures, next_run_at, trace_parent, completion, on_success, on_failure,
                        flow_control_key, auth_secret_enc, body, calendar_key, calendar_roll, max_runs, jitter_mode, then_jobs,
                        created_at, updated_at)
      select ${shardOf(tenantId)}::smallint, v.id, ${tenantId}::uuid, v.key, v.name, v.status, v.schedule, v.callback, v.auth_token_enc, v.payload, v.retry,
             v.relevancy_window_ms, v.delivery_mode, v.overlap_policy, v.catch_up, v.jitter_ms, v.metadata,
             v.pause_after_failures, v.next_run_at, v.trace_parent, v.completion, v.on_success, v.on_failure,
             v.flow_control_key, v.auth_secret_enc, v.body, v.calendar_key, v.calendar_roll, v.max_runs, v.jitter_mode, v.then_jobs,
             ${nowIso}::timestamptz, ${nowIso}::timestamptz
      from jsonb_to_recordset(${jobsJson}::jsonb) as v(id uuid, key text, name text, status text, schedule jsonb,
             callback jsonb, auth_token_enc text, payload jsonb, retry jsonb, relevancy_window_ms int, delivery_mode text,
             overlap_policy text, catch_up text, jitter_ms int, metadata jsonb, pause_after_failures int, next_run_at timestamptz,
             trace_parent text, completion jsonb, on_success jsonb, on_failure jsonb, flow_control_key text,
             auth_secret_enc text, body text, calendar_key text, calendar_roll text, max_runs int, jitter_mode text, then_jobs jsonb)),
    new_open as (
      insert into open_jobs (shard, tenant_id, job_id)
      select ${shardOf(tenantId)}::smallint, ${tenantId}::uuid, unnest(${uuidArray(openIds)}::uuid[])),
    new_runs as (
      insert into runs (shard, id, tenant_id, job_id, scheduled_for, trigger, status, next_attempt_at, created_at)
      select ${shardOf(tenantId)}::smallint, v.id, ${tenantId}::uuid, v.job_id, v.scheduled_for, ${RUN_TRIGGER.schedule}, ${RUN_STATUS.scheduled},
             v.next_attempt_at, ${nowIso}::timestamptz
      from jsonb_to_recordset(${JSON.stringify(runRows)}::jsonb)
           as v(id uuid, job_id uuid, scheduled_for timestamptz, next_attempt_at timestamptz))
    ${audit ? sql`, new_audit as (${auditInsert(audit, shardOf(tenantId))})` : sql``}
    select case when ${notify}::text is not null then pg_notify(${RUNS_CHANNEL}, ${notify}::text) end`);
}

/** The tenant's job, or null (also for another tenant's id). */
export async function getJob(ctx: StoreContext, tenantId: string, jobId: string): Promise<JobRow | null> {
  const [row] = await ctx.db.select().from(jobs).where(ownJob(tenantId, jobId));
  return row ?? null;
}

/** The tenant's job with this `key`, or null. */
export async function getJobByKey(ctx: StoreContext, tenantId: string, key: string): Promise<JobRow | null> {
  const [row] = await ctx.db
    .select()
    .from(jobs)
    .where(and(ofTenant(jobs, tenantId), eq(jobs.key, key)));
  return row ?? null;
}

/** What `GET /v1/jobs` asks for: a filter (job-filter.ts), and a page of `limit` jobs after `cursor`. */
export type ListJobsOptions = Omit<JobFilter, 'jobIds'> & {
  /** Jobs per page (the API allows 1..100). */
  limit: number;
  /** The last job id of the previous page; absent for the first. */
  cursor?: string;
};

/**
 * The statement `listJobs` sends (not yet run), for tests that EXPLAIN it: the tenant's own jobs matching the filter
 * (`jobFilterCondition`: never a hidden notification job), below `cursor`, newest first (ids are UUID v7), `limit + 1`
 * rows so that `page` can tell whether another page follows.
 */
export function listJobsQuery(db: Executor, tenantId: string, opts: ListJobsOptions) {
  const { limit, cursor, ...filter } = opts;
  return db
    .select()
    .from(jobs)
    .where(and(jobFilterCondition(tenantId, filter), cursor ? lt(jobs.id, cursor) : undefined))
    .orderBy(desc(jobs.id))
    .limit(limit + 1);
}

/**
 * The tenant's jobs matching `opts` (status, `q`: a case-insensitive substring of name or key, `metadata`: pairs
 * that must all be present), newest first, `limit` at a time after the `cursor` (the last job id of the previous
 * page). `q` is served by the trigram index `jobs_search_idx`, `metadata` by `jobs_metadata_idx`, and a list without
 * either (or with a `q` that matches many jobs) by walking `jobs_tenant_idx` backwards: the planner picks by the
 * statistics.
 * @returns the page and the cursor of the next one (null at the end)
 */
export async function listJobs(
  ctx: StoreContext,
  tenantId: string,
  opts: ListJobsOptions,
): Promise<{ items: JobRow[]; nextCursor: string | null }> {
  return page(await listJobsQuery(ctx.db, tenantId, opts), opts.limit);
}
