/**
 * The database schema (drizzle-orm, PostgreSQL ≥ 14; the same on postgres.js and PGlite).
 * Migrations under `drizzle/` are generated from this file by `npm run db:generate` and committed.
 *
 * Hot path: runs waiting to fire (`scheduled`, `retrying`) and runs leased (`running`) sit in the partial index
 * `runs_due_idx` on `next_attempt_at`, so claiming costs the same whatever the number of jobs or of finished runs, and
 * the claim and a lease's renewal change no indexed column of `runs` (HOT updates; docs/design.md).
 */
import { type SQL, sql } from 'drizzle-orm';
import {
  type AnyPgColumn,
  boolean,
  date,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';

const tz = (name: string) => timestamp(name, { withTimezone: true, mode: 'date', precision: 3 });

/**
 * The tenant's bucket (`shardOf(tenantId)`, src/domain/shard.ts): on every tenant-owned row, first in its primary key
 * and its unique and due indexes, so that a statement naming one value touches one bucket (one shard on Citus).
 */
const shard = () => smallint('shard').notNull();
// Secondary indexes that are neither unique nor the due or lease index lead with their tenant or job and carry the bucket
// second: led by the bucket, a planner short of statistics took them for the primary key (a finish read a whole bucket's
// entries to find its runs), and the primary key for them (a list walked the bucket's rows of every tenant).

export const tenants = pgTable(
  'tenants',
  {
    shard: shard(),
    id: uuid('id').notNull(),
    name: text('name').notNull(),
    createdAt: tz('created_at').notNull().defaultNow(),
    /** `active`, or `suspended` by the operator: its keys are refused and its runs held (not sent, not lost). */
    status: text('status').notNull().default('active'),
    /** The operator's overrides of the configured quotas (`{ maxJobs?, requestsPerSecond?, callbacksPerDay? }`). */
    quotas: jsonb('quotas').notNull().default(sql`'{}'::jsonb`),
  },
  (t) => [primaryKey({ name: 'tenants_pkey', columns: [t.shard, t.id] })],
);

/** API keys: only the SHA-256 of the key is stored; `prefix` (shown to users) finds the row. */
export const apiKeys = pgTable(
  'api_keys',
  {
    shard: shard(),
    id: uuid('id').notNull(),
    tenantId: uuid('tenant_id').notNull(),
    name: text('name').notNull(),
    prefix: text('prefix').notNull(),
    /** Hex SHA-256 of the whole key. */
    keyHash: text('key_hash').notNull(),
    createdAt: tz('created_at').notNull().defaultNow(),
    expiresAt: tz('expires_at'),
    lastUsedAt: tz('last_used_at'),
    revokedAt: tz('revoked_at'),
    /** What the key may do (domain/scopes.ts); `{*}` for every key made before scopes existed. */
    scopes: text('scopes').array().notNull().default(sql`'{*}'::text[]`),
  },
  (t) => [
    primaryKey({ name: 'api_keys_pkey', columns: [t.shard, t.id] }),
    uniqueIndex('api_keys_shard_prefix_idx').on(t.shard, t.prefix),
    // Authentication knows the key, not yet its tenant: it finds the row by prefix alone.
    index('api_keys_prefix_idx').on(t.prefix),
    index('api_keys_tenant_idx').on(t.tenantId),
  ],
);

/** Standard Webhooks signing secrets (`whsec_…`), encrypted at rest. A rotated-out secret keeps signing until `expiresAt`. */
export const signingSecrets = pgTable(
  'signing_secrets',
  {
    shard: shard(),
    id: uuid('id').notNull(),
    tenantId: uuid('tenant_id').notNull(),
    secretEnc: text('secret_enc').notNull(),
    createdAt: tz('created_at').notNull().defaultNow(),
    expiresAt: tz('expires_at'),
  },
  (t) => [primaryKey({ name: 'signing_secrets_pkey', columns: [t.shard, t.id] }), index('signing_secrets_tenant_idx').on(t.tenantId)],
);

/** The service's own JWT signing keys (Chime-Signature); public halves are served at /.well-known/jwks.json. */
export const jwtKeys = pgTable('jwt_keys', {
  kid: text('kid').primaryKey(),
  alg: text('alg').notNull(),
  publicJwk: jsonb('public_jwk').notNull(),
  privateJwkEnc: text('private_jwk_enc').notNull(),
  createdAt: tz('created_at').notNull().defaultNow(),
  /** Set when rotated out: the key stops signing, and leaves the JWKS once its tokens have expired. */
  retiredAt: tz('retired_at'),
});

/**
 * The text a job search (`GET /v1/jobs?q=`) matches: name and key, lower-cased, joined by a separator (chr(1)) that
 * no query can span. One function for the index `jobs_search_idx` and the query (`JOB_SEARCH_TEXT` in
 * job-filter.ts): PostgreSQL uses an expression index only for a query whose expression is the same.
 */
export function jobSearchText(name: AnyPgColumn, key: AnyPgColumn): SQL {
  return sql`lower(coalesce(${name}, '') || chr(1) || coalesce(${key}, ''))`;
}

/**
 * Jobs, and their runs below, carry no foreign key (jobs to tenants, runs to jobs): registration writes a job and its
 * first run per job, and the check a foreign key makes on each inserted row (a lookup and a KEY SHARE lock of the
 * parent, one per row) was half of PostgreSQL's cost of a batch registration. Every insert already
 * has its parent: jobs are made for the authenticated tenant, a job's first run in the statement that makes the job
 * (`insertJobsAndRuns` checks it exists), later runs in the transaction that locks or claims their job; and Chime
 * deletes jobs only with their tenant. No table carries a foreign key or a trigger to cascade (a distributed
 * PostgreSQL refuses statement triggers): `deleteTenant` (tenants.ts) and retention delete the dependent rows with
 * explicit statements.
 */
export const jobs = pgTable(
  'jobs',
  {
    shard: shard(),
    id: uuid('id').notNull(),
    tenantId: uuid('tenant_id').notNull(),
    key: text('key'),
    name: text('name'),
    status: text('status').notNull(),
    /** `callback`: a tenant's job; `notification`: the hidden job that delivers a notification endpoint's events. */
    kind: text('kind').notNull().default('callback'),
    /** Why Chime or the tenant paused the job: `manual`, `gone` (a 410), `consecutive_failures`; null when not paused. */
    pausedReason: text('paused_reason'),
    /** Pause after this many consecutive runs ended `failed` (0 = never). */
    pauseAfterFailures: integer('pause_after_failures').notNull().default(0),
    /** Runs in a row that ended `failed`; a succeeded run and a resume reset it. */
    consecutiveFailures: integer('consecutive_failures').notNull().default(0),
    schedule: jsonb('schedule').notNull(),
    /** The callback without its auth token: { url, method, headers, successStatusCodes, timeoutMs }. */
    callback: jsonb('callback').notNull(),
    authTokenEnc: text('auth_token_enc'),
    payload: jsonb('payload'),
    retry: jsonb('retry').notNull(),
    relevancyWindowMs: integer('relevancy_window_ms'),
    deliveryMode: text('delivery_mode').notNull(),
    overlapPolicy: text('overlap_policy').notNull(),
    catchUp: text('catch_up').notNull(),
    jitterMs: integer('jitter_ms').notNull().default(0),
    metadata: jsonb('metadata').notNull().default(sql`'{}'::jsonb`),
    nextRunAt: tz('next_run_at'),
    lastRunAt: tz('last_run_at'),
    createdAt: tz('created_at').notNull(),
    updatedAt: tz('updated_at').notNull(),
    /** The W3C `traceparent` of the request that created the job, when tracing is on: its runs' spans link to it. */
    traceParent: text('trace_parent'),
    /** `{ mode: 'async', timeoutMs, heartbeatTimeoutMs? }`: the receiver reports each run's end; null: the response does. */
    completion: jsonb('completion'),
    /** Where a run's result goes when it ends `succeeded` (`{ url }`), or `failed`; null: nowhere. */
    onSuccess: jsonb('on_success'),
    onFailure: jsonb('on_failure'),
    /** The tenant's flow control (`flow_controls.key`) that limits this job's requests with others'; null: none. */
    flowControlKey: text('flow_control_key'),
    /** The sealed secret of `callback.auth` (a basic password or an OAuth2 client secret); null: none. */
    authSecretEnc: text('auth_secret_enc'),
    /** A body that is not JSON (`body`), sent as is instead of `payload`; null: the payload is sent as JSON. */
    body: text('body'),
    /** The tenant's calendar (`calendars.key`) whose weekend days and holidays move or skip occurrences; null: none. */
    calendarKey: text('calendar_key'),
    /** What an occurrence on a non-business day of the calendar does: `skip`, `next`, `previous` (src/domain/calendar.ts). */
    calendarRoll: text('calendar_roll'),
    /** The job completes after this many scheduled runs (manual, replay, backfill and chain runs do not count); null: no limit. */
    maxRuns: integer('max_runs'),
    /** Scheduled runs made so far (each claimed occurrence counts, whatever its outcome), for `maxRuns`. */
    scheduledRuns: integer('scheduled_runs').notNull().default(0),
    /** How `jitterMs` is drawn: `stable` (per job), `random` (per occurrence), `spread` (where the destination is least busy). */
    jitterMode: text('jitter_mode').notNull().default('stable'),
    /** Chains: `[{ jobId, on }]`, the jobs of the tenant triggered when a run of this job ends so; null: none. */
    thenJobs: jsonb('then_jobs'),
  },
  (t) => [
    primaryKey({ name: 'jobs_pkey', columns: [t.shard, t.id] }),
    // The jobs that use a calendar: its change re-plans them, and its deletion is refused while any open one does.
    index('jobs_calendar_idx').on(t.tenantId, t.shard, t.calendarKey).where(sql`${t.calendarKey} is not null`),
    // The jobs that name a flow control: its claim finds their due runs, and its deletion is refused while any does.
    index('jobs_flow_control_idx').on(t.tenantId, t.shard, t.flowControlKey).where(sql`${t.flowControlKey} is not null`),
    index('jobs_tenant_idx').on(t.tenantId, t.shard, t.id),
    uniqueIndex('jobs_tenant_key_idx').on(t.shard, t.tenantId, t.key).where(sql`${t.key} is not null`),
    // No index names `status`, `next_run_at`, `last_run_at` or `scheduled_runs`: a claim's update of them (a once-job's
    // completion included) is then a HOT update, which writes no index entry (the open jobs are `open_jobs`).
    // Job search (`GET /v1/jobs?q=&metadata.<key>=`, bulk actions): trigrams of the search text (pg_trgm) and the
    // metadata's key/value paths, each led by tenant_id (a uuid in GIN through btree_gin), so one bitmap index scan
    // finds the tenant's matches and never the other tenants' (which a single-column index would fetch and filter
    // away). The opclass is written into the expression: drizzle's `.op()` exists on columns only.
    index('jobs_search_idx').using('gin', t.tenantId, sql`(${jobSearchText(t.name, t.key)}) gin_trgm_ops`),
    index('jobs_metadata_idx').using('gin', t.tenantId, t.metadata.op('jsonb_path_ops')),
  ],
);

export const runs = pgTable(
  'runs',
  {
    shard: shard(),
    id: uuid('id').notNull(),
    tenantId: uuid('tenant_id').notNull(),
    /** The job (no foreign key: see `jobs`). */
    jobId: uuid('job_id').notNull(),
    scheduledFor: tz('scheduled_for').notNull(),
    trigger: text('trigger').notNull(),
    status: text('status').notNull(),
    attempts: smallint('attempts').notNull().default(0),
    nextAttemptAt: tz('next_attempt_at'),
    leaseOwner: text('lease_owner'),
    leaseExpiresAt: tz('lease_expires_at'),
    startedAt: tz('started_at'),
    finishedAt: tz('finished_at'),
    responseStatus: smallint('response_status'),
    error: text('error'),
    createdAt: tz('created_at').notNull(),
    /** A dead letter the tenant dismissed (`DELETE /v1/dead-letters/:runId`): no longer listed, history kept. */
    dismissedAt: tz('dismissed_at'),
    /** The request body of this run when it is not the job's `payload` (a notification event's body). */
    payload: jsonb('payload'),
    /** `webhook-id` of this run's requests when it is not the run id (a notification's event id). */
    eventId: uuid('event_id'),
    /** The run's callback when it is not the job's (a result delivery to `onSuccess`/`onFailure`). */
    callback: jsonb('callback'),
    /** The run whose result this run delivers (`trigger = 'result'`). */
    resultOf: uuid('result_of'),
    /** An async job's attempt was acknowledged and Chime waits for the receiver's report (status stays `running`). */
    awaitingCompletion: boolean('awaiting_completion').notNull().default(false),
    /** When the awaited report is late (`completion_timeout`), and when the next heartbeat is (null: none needed). */
    completionDeadline: tz('completion_deadline'),
    heartbeatDeadline: tz('heartbeat_deadline'),
    lastHeartbeatAt: tz('last_heartbeat_at'),
    /** The last heartbeat's `progress` and the report's `output`. */
    progress: jsonb('progress'),
    output: jsonb('output'),
    /** The flow control (`flow_controls.id`) whose slot this run holds while leased; set by its claim. */
    flowId: uuid('flow_id'),
    /**
     * A run waiting for its job's run in flight to end (`overlapPolicy: buffer-one`, or a backfill of a job whose runs
     * may not overlap): `scheduled` with no `next_attempt_at` until a run of its job ends and releases it.
     */
    buffered: boolean('buffered').notNull().default(false),
    /** A chained run's upstream (`trigger = 'chain'`): `{ jobId, runId, status, output? }` of the run whose end triggered it. */
    upstream: jsonb('upstream'),
    // Generated: the conditions the partial indexes below are on. An index whose predicate named `status` or a lease
    // column would make every claim and renewal a non-HOT update (each writes an entry into every index of `runs`);
    // these change value only when a run becomes or stops being a dead letter, buffered or a flow control's in flight.
    /** A dead letter: ended `failed`, not dismissed, not a notification's delivery (`runs_tenant_dead_idx`). */
    deadLetter: boolean('dead_letter').generatedAlwaysAs(sql`status = 'failed' and dismissed_at is null and trigger <> 'notification'`),
    /** A buffered run not claimed yet (`runs_buffered_idx`). */
    bufferWaiting: boolean('buffer_waiting').generatedAlwaysAs(sql`buffered and status = 'scheduled'`),
    /** A run holding a flow control's slot: leased through it (`runs_flow_lease_idx`). */
    flowLeased: boolean('flow_leased').generatedAlwaysAs(sql`flow_id is not null and lease_expires_at is not null`),
    /**
     * A lease taken by a release before 0021_claim_hot, whose claim cleared the due time (`runs_lease_without_due_idx`):
     * during a rolling upgrade the reaper finds those here, since they are not in runs_due_idx. Never true for a lease
     * this release takes; to go in a later contract migration.
     */
    leaseWithoutDue: boolean('lease_without_due').generatedAlwaysAs(sql`lease_expires_at is not null and next_attempt_at is null`),
  },
  (t) => [
    primaryKey({ name: 'runs_pkey', columns: [t.shard, t.id] }),
    // Invariant 2: one run per scheduled occurrence of a job.
    uniqueIndex('runs_occurrence_idx').on(t.shard, t.jobId, t.scheduledFor).where(sql`${t.trigger} = 'schedule'`),
    // A backfill makes one run per past occurrence, once: a second backfill of the same range creates nothing.
    uniqueIndex('runs_backfill_idx').on(t.shard, t.jobId, t.scheduledFor).where(sql`${t.trigger} = 'backfill'`),
    // The buffered runs not yet claimed (waiting for a run of their job to end, or released), oldest first: the one an
    // end releases. A run leaves it once claimed, so it holds the job's queue, not its history.
    index('runs_buffered_idx').on(t.shard, t.jobId, t.scheduledFor).where(sql`${t.bufferWaiting}`),
    // A bucket's waiting runs in due order (see claim-runs.ts), and its leased runs, which keep the due time of their
    // attempt so that the claim changes no indexed column (a HOT update): the claims pass over them (`status`), and
    // the reaper finds expired leases among them (reap-leases.ts). Every way out of both states clears the due time.
    index('runs_due_idx').on(t.shard, t.nextAttemptAt).where(sql`${t.nextAttemptAt} is not null`),
    index('runs_lease_without_due_idx').on(t.shard).where(sql`${t.leaseWithoutDue}`),
    index('runs_job_idx').on(t.jobId, t.shard, t.id),
    // Dead letters: failed, not dismissed, not a notification's delivery; newest first per tenant.
    index('runs_tenant_dead_idx').on(t.tenantId, t.shard, t.id).where(sql`${t.deadLetter}`),
    // The tenant-wide runs feed (`GET /v1/runs`), newest first.
    index('runs_tenant_idx').on(t.tenantId, t.shard, t.id),
    // A flow control's requests in flight: its runs holding a lease (src/store/queue/claim-flow-runs.ts).
    index('runs_flow_lease_idx').on(t.shard, t.flowId).where(sql`${t.flowLeased}`),
    // The reaper's index of runs awaiting a receiver's report, by the deadline that comes first.
    index('runs_awaiting_idx').on(t.shard, sql`least(${t.completionDeadline}, ${t.heartbeatDeadline})`).where(sql`${t.awaitingCompletion}`),
  ],
);

/**
 * The attempt log: one row per attempt of a run, keyed by `(run_id, attempt)`. Written by every finish (the hot path),
 * so it carries no surrogate key and no foreign key: the primary key is the only index, and the check a foreign key
 * makes on each insert (a KEY SHARE lock on the run just updated, a WAL record of its own) was a large part of the
 * finish statement's cost. Attempts are written only for runs this store holds or has just reaped, and runs are
 * deleted only by retention, long after they finished, which deletes their attempts in the same statement.
 */
export const attempts = pgTable(
  'attempts',
  {
    shard: shard(),
    runId: uuid('run_id').notNull(),
    attempt: smallint('attempt').notNull(),
    startedAt: tz('started_at').notNull(),
    finishedAt: tz('finished_at'),
    durationMs: integer('duration_ms'),
    responseStatus: smallint('response_status'),
    responseBodyExcerpt: text('response_body_excerpt'),
    errorClass: text('error_class'),
    error: text('error'),
    /** At-most-once: true once the request may have left (written before sending). */
    sent: boolean('sent').notNull().default(true),
    /** The response's headers (at most 4 KiB in all, `set-cookie` removed). */
    responseHeaders: jsonb('response_headers'),
    /** An async attempt: when the receiver reported, and what (`succeeded`/`failed`). */
    completedAt: tz('completed_at'),
    reportedStatus: text('reported_status'),
  },
  (t) => [primaryKey({ name: 'attempts_pkey', columns: [t.shard, t.runId, t.attempt] })],
);

/**
 * `Idempotency-Key` of `POST /v1/jobs` (the job it made: `job_id`), of `POST /v1/jobs/:jobId/trigger` and of
 * `POST /v1/runs/:runId/replay` (the run it made: `run_id`): kept 24 h.
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    shard: shard(),
    tenantId: uuid('tenant_id').notNull(),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    jobId: uuid('job_id'),
    runId: uuid('run_id'),
    createdAt: tz('created_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('idempotency_keys_pk').on(t.shard, t.tenantId, t.key), index('idempotency_keys_created_idx').on(t.createdAt)],
);

/**
 * Notification endpoints: where a tenant hears of its jobs' failures (`run.failed`, `run.expired`, `job.paused`,
 * `job.completed`). Each has a hidden job (`jobs.kind = 'notification'`, `job_id`) whose runs are its deliveries, so
 * events go through the same dispatcher, leases, retries, destination guard and attempt log as callbacks.
 */
export const notificationEndpoints = pgTable(
  'notification_endpoints',
  {
    shard: shard(),
    id: uuid('id').notNull(),
    tenantId: uuid('tenant_id').notNull(),
    url: text('url').notNull(),
    /** The event types it subscribes to (a JSON array of strings). */
    events: jsonb('events').notNull(),
    description: text('description'),
    /** The hidden job that delivers to it. */
    jobId: uuid('job_id').notNull(),
    createdAt: tz('created_at').notNull(),
  },
  (t) => [
    primaryKey({ name: 'notification_endpoints_pkey', columns: [t.shard, t.id] }),
    index('notification_endpoints_tenant_idx').on(t.tenantId, t.id),
  ],
);

/**
 * The audit log: one entry per change a tenant (or the operator, or Chime on its behalf) made, written in the same
 * transaction (or statement) as the change, so an entry exists exactly when its change does (API.md "Access control
 * and audit"). `changes` holds field names only, never values. Pruned after CHIME_AUDIT_RETENTION_DAYS.
 */
export const auditLog = pgTable(
  'audit_log',
  {
    shard: shard(),
    id: uuid('id').notNull(),
    tenantId: uuid('tenant_id').notNull(),
    at: tz('at').notNull(),
    /** `api_key`, `admin` or `system`. */
    actorType: text('actor_type').notNull(),
    /** The API key that made the change (`actor_type = 'api_key'`), with its prefix. */
    keyId: uuid('key_id'),
    keyPrefix: text('key_prefix'),
    /** Why Chime made the change (`actor_type = 'system'`: `consecutive_failures`, `gone`). */
    reason: text('reason'),
    action: text('action').notNull(),
    targetType: text('target_type').notNull(),
    targetId: text('target_id').notNull(),
    requestId: text('request_id'),
    changes: text('changes').array(),
  },
  (t) => [
    primaryKey({ name: 'audit_log_pkey', columns: [t.shard, t.id] }),
    // The tenant's entries newest first (ids are UUID v7, time-ordered); retention cuts by id on the primary key.
    index('audit_log_tenant_idx').on(t.tenantId, t.shard, t.id),
  ],
);

/**
 * Callbacks sent per tenant per UTC day, for the `callbacksPerDay` quota (src/store/queue/hold-runs.ts): one row per
 * tenant and day, counted by the claims (one statement per claim that takes runs of a tenant with that quota), never
 * per request. Rows of days gone are pruned by the housekeeper.
 */
export const tenantCallbacks = pgTable(
  'tenant_callbacks',
  {
    shard: shard(),
    tenantId: uuid('tenant_id').notNull(),
    /** The UTC day. */
    day: date('day', { mode: 'string' }).notNull(),
    /** Attempts claimed for delivery that day. */
    callbacks: integer('callbacks').notNull().default(0),
  },
  (t) => [primaryKey({ name: 'tenant_callbacks_pkey', columns: [t.shard, t.tenantId, t.day] })],
);

/**
 * Flow controls (API.md "Destination control"): a tenant's named limit on the requests of the jobs that name it, held
 * across every dispatcher together: at most `parallelism` in flight (runs holding a lease with `flow_id` = this id), at
 * most `rate_limit` started in any `rate_period_ms`. `starts` is the rate's log: `[startMs, count]` pairs of the
 * starts granted within the last period (src/domain/flow-control.ts).
 */
export const flowControls = pgTable(
  'flow_controls',
  {
    shard: shard(),
    id: uuid('id').notNull(),
    tenantId: uuid('tenant_id').notNull(),
    key: text('key').notNull(),
    rateLimit: integer('rate_limit'),
    ratePeriodMs: integer('rate_period_ms'),
    parallelism: integer('parallelism'),
    paused: boolean('paused').notNull().default(false),
    starts: jsonb('starts').notNull().default(sql`'[]'::jsonb`),
    createdAt: tz('created_at').notNull(),
    updatedAt: tz('updated_at').notNull(),
  },
  (t) => [
    primaryKey({ name: 'flow_controls_pkey', columns: [t.shard, t.id] }),
    uniqueIndex('flow_controls_tenant_key_idx').on(t.shard, t.tenantId, t.key),
  ],
);

/**
 * Calendars (API.md "Richer schedules"): a tenant's business days, in the calendar's own time zone: the weekend days
 * (0 = Sunday) and the holidays (local dates, `YYYY-MM-DD`). Jobs name one by `calendar_key`; a change re-plans them
 * (src/store/calendars.ts).
 */
export const calendars = pgTable(
  'calendars',
  {
    shard: shard(),
    id: uuid('id').notNull(),
    tenantId: uuid('tenant_id').notNull(),
    key: text('key').notNull(),
    name: text('name'),
    timezone: text('timezone').notNull(),
    weekendDays: jsonb('weekend_days').notNull(),
    holidays: jsonb('holidays').notNull(),
    createdAt: tz('created_at').notNull(),
    updatedAt: tz('updated_at').notNull(),
  },
  (t) => [
    primaryKey({ name: 'calendars_pkey', columns: [t.shard, t.id] }),
    uniqueIndex('calendars_tenant_key_idx').on(t.shard, t.tenantId, t.key),
  ],
);

/**
 * The open jobs (`active` or `paused`, of kind `callback`) of each tenant, by id: what the active-jobs quota and the usage
 * count. A row is written when a job is made or reopened and deleted when it completes or is canceled, in the
 * transaction that changes the job's status (src/store/open-jobs.ts). Kept apart from `jobs` so that no index of `jobs`
 * names `status`: a once-job's completion at its claim is a HOT update of the job, and here one delete, which writes no
 * index entry.
 */
export const openJobs = pgTable(
  'open_jobs',
  {
    shard: shard(),
    tenantId: uuid('tenant_id').notNull(),
    jobId: uuid('job_id').notNull(),
  },
  (t) => [primaryKey({ name: 'open_jobs_pkey', columns: [t.shard, t.tenantId, t.jobId] })],
);

/**
 * The API processes alive on this database, each heartbeating its row every few seconds (src/store/api-presence.ts):
 * how each divides a tenant's request rate so that the limit holds across all of them together. No tenant: a
 * reference table on Citus.
 */
export const apiProcesses = pgTable('api_processes', {
  id: uuid('id').primaryKey(),
  /** The database's clock at the last heartbeat. */
  seenAt: tz('seen_at').notNull(),
});
