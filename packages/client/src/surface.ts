/**
 * The shape of `@chime/client`: the options of `createChimeClient` and the `ChimeClient` it returns, one method per
 * `/v1` route (API.md), each documented with what it sends and answers. The implementation is client.ts.
 */
import type { Client } from 'openapi-fetch';
import type { Paginator } from './pagination.ts';
import type { FetchLike, RetryOptions } from './retry.ts';
import type { paths } from './schema.ts';
import type {
  ApiKey,
  ApiKeyInput,
  BackfillInput,
  BackfillResult,
  BatchResult,
  BulkAction,
  BulkActionResult,
  Calendar,
  CalendarInput,
  CallerTenant,
  CompletionReport,
  CreatedApiKey,
  CreatedTenant,
  DeadLetterReplayFilter,
  DeadLetterReplayResult,
  FlowControl,
  FlowControlInput,
  HeartbeatAnswer,
  Job,
  JobFilter,
  JobInput,
  JobListQuery,
  JobPatch,
  NotificationDelivery,
  NotificationEndpoint,
  NotificationEndpointInput,
  PageQuery,
  Run,
  RunFeedQuery,
  RunListQuery,
  RunWithAttempts,
  Schedule,
  SigningSecretRotation,
  TriggerResult,
  Usage,
} from './types.ts';

export type ChimeClientOptions = {
  /** The service's origin, with any path prefix it is served under: `https://chime.example.com`. */
  baseUrl: string;
  /** A tenant API key (`chk_…`), sent as `Authorization: Bearer <apiKey>`; for `tenants.create`, the admin token. */
  apiKey: string;
  /** The `fetch` to use (default `globalThis.fetch`, looked up at each request): for tests, proxies, instrumentation. */
  fetch?: FetchLike;
  /** Retries of `429`/`503` (default `{ maxRetries: 3, maxDelayMs: 30_000 }`); `false`: none. See README "Retries". */
  retry?: RetryOptions | false;
  /** More headers sent with every request. */
  headers?: Record<string, string>;
};

/** Options of the calls that honour `Idempotency-Key` (API.md "Jobs"). */
export type IdempotencyOptions = {
  /**
   * The same key with the same request within 24 h answers the first result (no second job or run); with another
   * body, `409`. 1..255 characters.
   */
  idempotencyKey?: string;
};

/**
 * The Chime API. Every method sends one request (lists: one per page, as they are iterated) and resolves to the
 * answer's JSON; an error answer rejects with `ChimeError` (`status`, `type`, `title`, `detail`, `errors`), after
 * the bounded retries of `429`/`503` that apply to idempotent requests and to those carrying an `Idempotency-Key`.
 * Every call may also throw `ChimeError` `401` (the key is unknown, revoked or expired), and `429` (rate limit) or
 * `503` (service unavailable) once retries are exhausted or not allowed.
 */
export interface ChimeClient {
  jobs: {
    /**
     * `POST /v1/jobs`: registers a job; its first run is due at the schedule's first occurrence.
     * Always sends an `Idempotency-Key` (`options.idempotencyKey`, or a new `crypto.randomUUID()`), so a retried or
     * repeated call with the same key and body returns the first job instead of making a second one; this is also
     * what makes the call safe to retry after a `429`/`503`.
     * @returns the job (`201` created, or `200` the job first created with this key)
     * @throws ChimeError 400 (invalid body; `errors` names each bad field), 403 (the `maxJobs` quota: `quota_exceeded`;
     *   or the tenant is suspended: `tenant_suspended`), 409 (`key` taken, or the key used with another body), 413 (body
     *   over 64 KiB)
     */
    create(body: JobInput, options?: IdempotencyOptions): Promise<Job>;
    /**
     * `GET /v1/jobs/:jobId`.
     * @throws ChimeError 404 (no such job of this tenant)
     */
    get(jobId: string): Promise<Job>;
    /**
     * `GET /v1/jobs/by-key/:key`: the job with this tenant-unique key.
     * @throws ChimeError 400 (malformed key), 404 (no job with this key)
     */
    getByKey(key: string): Promise<Job>;
    /**
     * `GET /v1/jobs?status=&q=&metadata.<key>=&limit=&cursor=`: every job matching, newest first, as a lazy async
     * iterable over all pages (`limit` is the page size, 1..100, default 50).
     * @throws ChimeError 400 (bad filter), from the iteration
     */
    list(query?: JobListQuery): Paginator<Job>;
    /**
     * `PATCH /v1/jobs/:jobId`: changes the given fields (`callback` is merged into the job's callback).
     * @throws ChimeError 400 (invalid field), 404, 409 (the job is completed or canceled)
     */
    update(jobId: string, patch: JobPatch): Promise<Job>;
    /**
     * `PATCH /v1/jobs/:jobId {"paused": true}`: no new runs until resumed (`pausedReason` `manual`).
     * @throws ChimeError 404, 409 (completed or canceled job)
     */
    pause(jobId: string): Promise<Job>;
    /**
     * `PATCH /v1/jobs/:jobId {"paused": false}`: resumes from the next occurrence after now; resets `consecutiveFailures`.
     * @throws ChimeError 404, 409 (completed or canceled job)
     */
    resume(jobId: string): Promise<Job>;
    /**
     * `POST /v1/jobs/:jobId/trigger`: one run due now, outside the schedule (also when paused). Retried after
     * `429`/`503` only with `options.idempotencyKey`.
     * @returns `{ runId }` of the new run (or, for a repeated key, of the first)
     * @throws ChimeError 404, 409 (canceled job, or the key used for another request)
     */
    trigger(jobId: string, options?: IdempotencyOptions): Promise<TriggerResult>;
    /**
     * `POST /v1/jobs/:jobId/backfill`: a run for each occurrence in [from, to) that has none yet, oldest first, at most
     * `limit` (default 100); call again while `remaining` > 0. A repeat of the same range makes nothing new.
     * @throws ChimeError 400 (a bad range), 404, 409 (canceled job)
     */
    backfill(jobId: string, input: BackfillInput): Promise<BackfillResult>;
    /**
     * `DELETE /v1/jobs/:jobId`: cancels the job (status `canceled`) and its runs not yet started; history is kept.
     * @throws ChimeError 404
     */
    cancel(jobId: string): Promise<void>;
    /**
     * `PUT /v1/jobs/by-key/:key`: creates the job with this key, or replaces the whole job that has it, so that
     * registering the same job twice never makes two. `body.key` must be absent or equal `key`.
     * @returns the job (created or replaced)
     * @throws ChimeError 400 (invalid body or key), 403 (the `maxJobs` quota), 409 (a concurrent change: retry)
     */
    upsertByKey(key: string, body: JobInput): Promise<Job>;
    /**
     * `POST /v1/jobs/batch`: registers up to 1,000 jobs; the valid ones are committed in one transaction.
     * @returns one result per job, in order: `{ status: 201, job }` or `{ status: 400 | 409, problem }` (per-job
     *   errors are results, not exceptions)
     * @throws ChimeError 400 (not 1..1000 jobs), 413 (body over 1 MiB)
     */
    createBatch(bodies: JobInput[]): Promise<BatchResult[]>;
    /**
     * `POST /v1/jobs/bulk`: pauses, resumes or cancels up to 10,000 jobs matching `filter` in one transaction.
     * @returns `{ matched, changed }` (jobs already in that state are matched, not changed)
     * @throws ChimeError 400 (empty filter, or more than 10,000 matches: nothing changed)
     */
    bulk(action: BulkAction, filter: JobFilter): Promise<BulkActionResult>;
    /** The runs of a job: the same as `client.runs.list(jobId, query)`. */
    runs(jobId: string, query?: RunListQuery): Paginator<Run>;
  };
  runs: {
    /**
     * `GET /v1/runs/:runId`: a run with its attempt log (`attemptLog`, each attempt's status, duration, body excerpt, error).
     * @throws ChimeError 404
     */
    get(runId: string): Promise<RunWithAttempts>;
    /**
     * `GET /v1/jobs/:jobId/runs?status=`: the job's runs, newest first, over all pages.
     * @throws ChimeError 404 (no such job), 400, from the iteration
     */
    list(jobId: string, query?: RunListQuery): Paginator<Run>;
    /**
     * `GET /v1/runs?status=&jobId=&since=&until=`: every run of the tenant's jobs, newest first, over all pages
     * (`since` inclusive, `until` exclusive, bounding `scheduledFor`).
     * @throws ChimeError 400 (malformed filter), from the iteration
     */
    feed(query?: RunFeedQuery): Paginator<Run>;
    /**
     * `POST /v1/runs/:runId/replay`: a new run of the same job and payload, due now; a dead letter replayed is
     * dismissed. Retried after `429`/`503` only with `options.idempotencyKey`.
     * @returns `{ runId }` of the new run
     * @throws ChimeError 404, 409 (canceled job, or the key used for another request)
     */
    replay(runId: string, options?: IdempotencyOptions): Promise<TriggerResult>;
    /**
     * `POST /v1/runs/:runId/completion`, as an async job's receiver: reports the end of the attempt whose
     * `Chime-Completion-Token` is `token` (sent instead of the API key; the client's `apiKey` is not used).
     * `succeeded` ends the run; `failed` fails the attempt with `error` and the job's retry policy decides.
     * Not retried after `429`/`503` (a report is recorded once: a retry after a lost answer meets `409`).
     * @returns the run as it now is
     * @throws ChimeError 400 (`output` over 16 KiB), 401 (a wrong or stale token), 404, 409 (already reported, or timed out)
     */
    complete(runId: string, token: string, report: CompletionReport): Promise<Run>;
    /**
     * `POST /v1/runs/:runId/heartbeat`, as an async job's receiver: postpones the attempt's heartbeat deadline;
     * `progress` (any JSON ≤ 1 KiB) is shown on the run. Authenticated by the completion `token` alone.
     * @returns `{ completionDeadline, heartbeatDeadline }` (RFC 3339 UTC; `heartbeatDeadline` null when none is needed)
     * @throws ChimeError 400, 401, 404, 409 (the attempt is no longer awaited)
     */
    heartbeat(runId: string, token: string, progress?: unknown): Promise<HeartbeatAnswer>;
  };
  deadLetters: {
    /**
     * `GET /v1/dead-letters`: runs that ended `failed` (retries exhausted) and are not dismissed, newest first, over all pages.
     * @throws ChimeError 400, from the iteration
     */
    list(query?: PageQuery): Paginator<Run>;
    /**
     * `DELETE /v1/dead-letters/:runId`: no longer listed or replayed in bulk; the run gains `dismissedAt`.
     * @throws ChimeError 404 (not a dead letter of this tenant)
     */
    dismiss(runId: string): Promise<void>;
    /**
     * `POST /v1/dead-letters/replay`: replays (and dismisses) the oldest 1,000 matching dead letters; call again
     * while `remaining` is above 0. No filter: every dead letter.
     * @returns `{ replayed, runIds, remaining }`
     * @throws ChimeError 400 (malformed filter)
     */
    replay(filter?: DeadLetterReplayFilter): Promise<DeadLetterReplayResult>;
  };
  schedules: {
    /**
     * `POST /v1/schedules/preview`: the next `count` (1..50, default 10) occurrences of a schedule, RFC 3339 UTC;
     * no job is made (so it is retried after `429`/`503` like a read).
     * @throws ChimeError 400 (invalid schedule, as `jobs.create` would answer it)
     */
    preview(schedule: Schedule, count?: number): Promise<string[]>;
  };
  apiKeys: {
    /**
     * `POST /v1/api-keys`: a new key of this tenant; its secret `key` is in this answer only.
     * @throws ChimeError 400 (bad name, or `expiresAt` not in the future)
     */
    create(input: ApiKeyInput): Promise<CreatedApiKey>;
    /** `GET /v1/api-keys`: the tenant's keys without secrets, with `lastUsedAt`. */
    list(): Promise<ApiKey[]>;
    /**
     * `DELETE /v1/api-keys/:keyId`: the key stops working at once.
     * @throws ChimeError 404 (no such key, or already revoked)
     */
    revoke(keyId: string): Promise<void>;
  };
  signingSecrets: {
    /** `POST /v1/signing-secrets/rotate`: a new signing secret; the previous one also signs until `previousValidUntil` (24 h). */
    rotate(): Promise<SigningSecretRotation>;
  };
  notificationEndpoints: {
    /**
     * `POST /v1/notification-endpoints`: where the tenant hears of `run.failed`, `run.expired`, `job.paused`, `job.completed`.
     * @throws ChimeError 400 (bad URL or events; a refused destination), 409 (10 endpoints already)
     */
    create(input: NotificationEndpointInput): Promise<NotificationEndpoint>;
    /** `GET /v1/notification-endpoints`: the tenant's endpoints. */
    list(): Promise<NotificationEndpoint[]>;
    /**
     * `DELETE /v1/notification-endpoints/:endpointId`: its waiting deliveries are canceled.
     * @throws ChimeError 404
     */
    delete(endpointId: string): Promise<void>;
    /**
     * `GET /v1/notification-endpoints/:endpointId/deliveries`: the endpoint's deliveries, newest first, over all pages.
     * @throws ChimeError 404, from the iteration
     */
    deliveries(endpointId: string, query?: PageQuery): Paginator<NotificationDelivery>;
  };
  flowControls: {
    /**
     * `PUT /v1/flow-controls/:key`: creates the flow control, or replaces its settings (what is absent is none). Jobs
     * name it with `flowControlKey`; it holds across every dispatcher together.
     * @throws ChimeError 400 (a bound out of range, a bad key)
     */
    put(key: string, input: FlowControlInput): Promise<FlowControl>;
    /**
     * `GET /v1/flow-controls/:key`: with its state (`inFlight`, `waiting`).
     * @throws ChimeError 404
     */
    get(key: string): Promise<FlowControl>;
    /** `GET /v1/flow-controls`: the tenant's flow controls by key, over all pages. */
    list(query?: PageQuery): Paginator<FlowControl>;
    /**
     * `DELETE /v1/flow-controls/:key`.
     * @throws ChimeError 404, 409 (open jobs name it)
     */
    delete(key: string): Promise<void>;
  };
  calendars: {
    /**
     * `PUT /v1/calendars/:key`: creates the calendar, or replaces it; the jobs using it are re-planned. Jobs name it
     * with `calendar: { key, roll }`.
     * @throws ChimeError 400 (an unknown time zone, a date that does not exist, a bad key)
     */
    put(key: string, input: CalendarInput): Promise<Calendar>;
    /**
     * `GET /v1/calendars/:key`.
     * @throws ChimeError 404
     */
    get(key: string): Promise<Calendar>;
    /** `GET /v1/calendars`: the tenant's calendars by key, over all pages. */
    list(query?: PageQuery): Paginator<Calendar>;
    /**
     * `DELETE /v1/calendars/:key`.
     * @throws ChimeError 404, 409 (open jobs use it)
     */
    delete(key: string): Promise<void>;
  };
  tenants: {
    /**
     * `POST /v1/tenants`: a new tenant. Needs a client made with the admin token (`CHIME_ADMIN_TOKEN`) as `apiKey`,
     * unless the service's signup is open. Not retried after `429`/`503`.
     * @returns the tenant, its API key and its signing secret (both shown only here)
     * @throws ChimeError 400 (bad name), 401 (not the admin token)
     */
    create(name: string): Promise<CreatedTenant>;
  };
  /** `GET /v1/tenant`: the caller's tenant. */
  tenant(): Promise<CallerTenant>;
  /**
   * `GET /v1/usage?days=`: runs per UTC day by outcome over the last `days` (1..90, default 14), fire lag, open jobs.
   * @throws ChimeError 400 (days out of range)
   */
  usage(days?: number): Promise<Usage>;
  /**
   * The underlying openapi-fetch client (`raw.GET('/v1/jobs/{jobId}', { params: { path: { jobId } } })`), typed by
   * the OpenAPI document, with the same base URL, API key and retries; it returns `{ data, error, response }` and
   * does not throw for error answers. For anything the methods above do not cover (e.g. the compatibility routes).
   */
  raw: Client<paths, 'application/json'>;
}
