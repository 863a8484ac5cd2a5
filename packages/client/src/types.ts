/**
 * Names for the request and response shapes of the Chime API, all taken from the generated OpenAPI types
 * (schema.ts): `components['schemas'][…]` where the document names a schema, the operation's JSON otherwise.
 */
import type { components, paths } from './schema.ts';

type Schemas = components['schemas'];
type Method = 'get' | 'put' | 'post' | 'delete' | 'patch';

/** The JSON body of the `status` answer of `method path`. */
export type ResponseBody<P extends keyof paths, M extends Method & keyof paths[P], S extends number> = paths[P][M] extends {
  responses: { [K in S]: { content: { 'application/json': infer B } } };
}
  ? B
  : never;

/** The JSON request body of `method path`. */
export type RequestBody<P extends keyof paths, M extends Method & keyof paths[P]> = paths[P][M] extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;

/** The query parameters of `GET path`. */
export type QueryOf<P extends keyof paths> = paths[P] extends { get: { parameters: { query?: infer Q } } } ? NonNullable<Q> : never;

/** A job as the API answers it (`authToken` replaced by `callback.hasAuthToken`). */
export type Job = Schemas['Job'];
/** The body that registers a job (`POST /v1/jobs`, `PUT /v1/jobs/by-key/:key`, each item of a batch). */
export type JobInput = Schemas['JobInput'];
/** The changes of `PATCH /v1/jobs/:jobId`: any subset of the job's fields, plus `paused`. */
export type JobPatch = Schemas['JobPatch'];
/** `once` | `delay` | `interval` | `dates` | `cron`. */
export type Schedule = Schemas['Schedule'];
/** A job's callback as sent (with the write-only `authToken`). */
export type Callback = Schemas['Callback'];
/** A callback's `auth` as sent: `basic`, or `oauth2` client credentials; its password or client secret is write-only. */
export type CallbackAuth = Schemas['CallbackAuth'];
export type RetryPolicy = Schemas['RetryPolicy'];
export type JobStatus = Job['status'];
/** A run: one occurrence of a job. */
export type Run = Schemas['Run'];
export type RunStatus = Run['status'];
/** One HTTP request of a run. */
export type Attempt = Schemas['Attempt'];
/** A job's `completion`: `{ mode: 'response' }` (default) or `{ mode: 'async', timeoutMs?, heartbeatTimeoutMs? }`. */
export type Completion = Schemas['Completion'];
/** An async job's receiver's report of an attempt's end (`POST /v1/runs/:runId/completion`). */
export type CompletionReport = Schemas['CompletionReport'];
/** `{ completionDeadline, heartbeatDeadline }` of `POST /v1/runs/:runId/heartbeat`. */
export type HeartbeatAnswer = ResponseBody<'/v1/runs/{runId}/heartbeat', 'post', 200>;
/** A run with its attempts (`GET /v1/runs/:runId`). */
export type RunWithAttempts = ResponseBody<'/v1/runs/{runId}', 'get', 200>;
/** `{ runId }` of the run a trigger or a replay made. */
export type TriggerResult = ResponseBody<'/v1/jobs/{jobId}/trigger', 'post', 202>;
/** An error answer (RFC 9457 problem details). */
export type Problem = Schemas['Problem'];
export type Tenant = Schemas['Tenant'];
/** `GET /v1/tenant`: the caller's tenant and the calling key (`keyId`, `prefix`, `scopes`). */
export type CallerTenant = Schemas['CallerTenant'];
/** `POST /v1/tenants`: the tenant, its first API key and its signing secret (shown only here). */
export type CreatedTenant = ResponseBody<'/v1/tenants', 'post', 201>;
/** An API key as listed (no secret). */
export type ApiKey = Schemas['ApiKey'];
/** `{ name, expiresAt?, scopes? }` of a new API key (scopes: at most the calling key's; default the same). */
export type ApiKeyInput = RequestBody<'/v1/api-keys', 'post'>;
/** A new API key with its secret `key` (shown only here). */
export type CreatedApiKey = ResponseBody<'/v1/api-keys', 'post', 201>;
/** `{ signingSecret, previousValidUntil }` of `POST /v1/signing-secrets/rotate`. */
export type SigningSecretRotation = ResponseBody<'/v1/signing-secrets/rotate', 'post', 201>;
/** One result of `POST /v1/jobs/batch`, in request order: `{ status: 201, job }` or `{ status, problem }`. */
export type BatchResult = ResponseBody<'/v1/jobs/batch', 'post', 200>['results'][number];
/** Which jobs a bulk action changes: `jobIds`, `status`, `q`, `metadata` (all given must match; not empty). */
export type JobFilter = Schemas['JobFilter'];
export type BulkAction = Schemas['BulkJobAction']['action'];
export type BulkActionResult = Schemas['BulkJobActionResult'];
/** Which dead letters `POST /v1/dead-letters/replay` replays: `runIds`, `jobId`, `since`, `until` (none: all). */
export type DeadLetterReplayFilter = Schemas['DeadLetterReplay'];
export type DeadLetterReplayResult = Schemas['DeadLetterReplayResult'];
export type Usage = Schemas['Usage'];
export type NotificationEndpoint = Schemas['NotificationEndpoint'];
export type NotificationEndpointInput = Schemas['NotificationEndpointInput'];
export type NotificationDelivery = Schemas['NotificationDelivery'];
/** A flow control with its state (API.md "Destination control"). */
export type FlowControl = Schemas['FlowControl'];
/** A flow control's settings, as `PUT /v1/flow-controls/:key` takes them (what is absent is none). */
export type FlowControlInput = Schemas['FlowControlInput'];
/** A calendar: business days in its time zone (API.md "Richer schedules"). */
export type Calendar = Schemas['Calendar'];
/** A calendar as `PUT /v1/calendars/:key` takes it (what is absent is the default). */
export type CalendarInput = Schemas['CalendarInput'];
/** What `POST /v1/jobs/:jobId/backfill` takes: the range [from, to) and at most how many runs to make. */
export type BackfillInput = { from: string; to: string; limit?: number };
/** What a backfill made: `created` runs (`runIds`), and how many occurrences of the range still have none. */
export type BackfillResult = { created: number; runIds: string[]; remaining: number };
export type EventType = NotificationEndpoint['events'][number];
/** A run's result posted to its job's `onSuccess` / `onFailure` (`GET /v1/jobs/:jobId/result-deliveries`). */
export type ResultDelivery = Schemas['ResultDelivery'];
/** `onSuccess` / `onFailure`: where a run's result is posted. */
export type ResultRoute = Schemas['ResultRoute'];
/** `callback.successBody`: `{ contains }` or `{ jsonPointer, equals }` (RFC 6901). */
export type SuccessBody = Schemas['SuccessBody'];

/** `?limit=&cursor=`: the page size (1..100, default 50) and where to start. */
export type PageQuery = { limit?: number; cursor?: string };
/** `GET /v1/jobs`: `status`, `q` (substring of name or key), `metadata` (pairs the job must all hold, sent as `metadata.<key>=<value>`). */
export type JobListQuery = QueryOf<'/v1/jobs'> & { metadata?: Record<string, string> };
/** `GET /v1/jobs/:jobId/runs`: `status`. */
export type RunListQuery = QueryOf<'/v1/jobs/{jobId}/runs'>;
/** `GET /v1/runs`: `status`, `jobId`, `since` (inclusive), `until` (exclusive), bounding `scheduledFor`. */
export type RunFeedQuery = QueryOf<'/v1/runs'>;
