/**
 * Request and response schemas (zod through @hono/zod-openapi): the same objects validate requests and generate
 * the OpenAPI document. Field names and bounds follow API.md.
 */
import { z } from '@hono/zod-openapi';
import { CALENDAR_ROLLS } from '../domain/calendar.ts';
import { HEADER_VALUE_PATTERN, MAX_HEADER_NAME_LENGTH, MAX_HEADER_VALUE_LENGTH } from '../domain/callback-headers.ts';
import { CHAIN_ON, MAX_CHAIN_LINKS } from '../domain/chain.ts';
import {
  COMPLETION_MAX_TIMEOUT_MS,
  COMPLETION_MIN_TIMEOUT_MS,
  COMPLETION_MODES,
  HEARTBEAT_MAX_TIMEOUT_MS,
  HEARTBEAT_MIN_TIMEOUT_MS,
  REPORTED_STATUSES,
} from '../domain/completion.ts';
import { DEFAULT_TIMEOUT_MS, HTTP_METHODS, MAX_CALLBACK_HEADERS, MAX_TIMEOUT_MS, MIN_TIMEOUT_MS } from '../domain/job.ts';
import { isJsonPointer } from '../domain/receiver-control.ts';
import {
  isStorableInstant,
  MAX_DATES,
  MAX_INSTANT_MS,
  MAX_JITTER_MS,
  MAX_UNION_SCHEDULES,
  MIN_INSTANT_MS,
  MIN_INTERVAL_MS,
  MIN_UNION_SCHEDULES,
} from '../domain/schedule.ts';
import {
  CATCH_UP_POLICIES,
  DELIVERY_MODES,
  JITTER_MODES,
  JOB_STATUSES,
  OVERLAP_POLICIES,
  RUN_STATUSES,
  RUN_TRIGGERS,
} from '../domain/states.ts';
import { STATUS_CLASS_PATTERN } from '../domain/status-codes.ts';
import {
  CallbackAuthPatchSchema,
  CallbackAuthSchema,
  CallbackBodySchema,
  ContentTypeSchema,
  FlowControlKeySchema,
  JwtAudienceSchema,
  RetryFieldsSchema,
  RetrySchema,
  retryIssues,
} from './destination-schemas.ts';

// The job fields of "Destination control", for the routes that import them from here with the others.
export { CallbackAuthSchema, CallbackBodySchema, FlowControlKeySchema, RetryFieldsSchema, RetrySchema, retryIssues };

/**
 * Longest relevancy window and jitter, in ms (24 days, 1 day). 24 days is the most whole days that fit the
 * `relevancy_window_ms` integer column (2^31 − 1 ms ≈ 24.8 days); more failed the insert.
 */
export const MAX_RELEVANCY_WINDOW_MS = 24 * 24 * 3_600_000;
/** MAX_JITTER_MS lives with the schedules, which keep their occurrences early enough for it. */
export { MAX_JITTER_MS };
export const MAX_DELAY_MS = 366 * 24 * 3_600_000;
export const MAX_METADATA_PAIRS = 20;
/** Largest `pauseAfterFailures` (consecutive failed runs before Chime pauses a job). */
export const MAX_PAUSE_AFTER_FAILURES = 1000;

const INSTANT_RANGE = `${new Date(MIN_INSTANT_MS).toISOString()}..${new Date(MAX_INSTANT_MS).toISOString()}`;

/**
 * An RFC 3339 instant with any offset (`2026-12-01T09:00:00Z`, `2026-12-01T10:00:00.000+01:00`) that PostgreSQL can
 * store: within years 0001..9999 once its offset is applied (`isStorableInstant`), so `0000-01-01T00:00:00Z`,
 * `0001-01-01T00:00:00+01:00` and `9999-12-31T23:59:59-23:59` are refused, naming the field. The one schema of every
 * instant the API takes, in bodies and query strings alike.
 */
export const InstantSchema = z.iso
  .datetime({ offset: true, precision: undefined, abort: true }) // a malformed time gets one message, not two
  .refine((v) => isStorableInstant(Date.parse(v)), `must be within ${INSTANT_RANGE} (UTC, after applying the offset)`)
  .openapi({
    example: '2026-12-01T09:00:00.000Z',
    description: `RFC 3339 with an offset, within ${INSTANT_RANGE} once the offset is applied`,
  });
const time = InstantSchema;
const int = (min: number, max: number) => z.number().int().min(min).max(max);

const onceSchedule = z.strictObject({ type: z.literal('once'), at: time });
const intervalSchedule = z.strictObject({
  type: z.literal('interval'),
  everyMs: int(MIN_INTERVAL_MS, MAX_DELAY_MS),
  startAt: time.optional(),
  endAt: time.optional(),
});
const datesSchedule = z.strictObject({ type: z.literal('dates'), dates: z.array(time).min(1).max(MAX_DATES) });
const cronSchedule = z.strictObject({
  type: z.literal('cron'),
  expression: z
    .string()
    .min(1)
    .max(200)
    .openapi({ description: '5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or a macro (@daily…)' }),
  timezone: z.string().min(1).max(64).optional(),
  startAt: time.optional(),
  endAt: time.optional(),
});

export const ScheduleSchema = z
  .discriminatedUnion('type', [
    onceSchedule,
    z.strictObject({ type: z.literal('delay'), delayMs: int(0, MAX_DELAY_MS) }),
    intervalSchedule,
    datesSchedule,
    cronSchedule,
    z
      .strictObject({
        type: z.literal('union'),
        schedules: z
          .array(z.discriminatedUnion('type', [onceSchedule, intervalSchedule, datesSchedule, cronSchedule]))
          .min(MIN_UNION_SCHEDULES)
          .max(MAX_UNION_SCHEDULES),
      })
      .openapi({ description: 'Occurrences of every member, merged in order; an instant produced twice fires once.' }),
  ])
  .openapi('Schedule');

/**
 * A job's custom headers: sizes here; which names and values are accepted is the rule of
 * src/domain/callback-headers.ts, applied by `validateCallback` (job-input.ts) so that every refused header is named
 * at `callback.headers.<name>` with why, and delivery applies the same rule.
 */
const CallbackHeadersSchema = z
  .record(z.string().max(MAX_HEADER_NAME_LENGTH), z.string().max(MAX_HEADER_VALUE_LENGTH))
  .refine((h) => Object.keys(h).length <= MAX_CALLBACK_HEADERS, `at most ${MAX_CALLBACK_HEADERS} headers`)
  .openapi({
    description:
      `At most ${MAX_CALLBACK_HEADERS}. Names are RFC 9110 tokens; reserved names (host, content-length, content-type, user-agent, expect, ` +
      'hop-by-hop: connection, keep-alive, proxy-*, te, trailer, transfer-encoding, upgrade; webhook-*, chime-*) are refused, and ' +
      'Authorization when callback.authToken is set. Values are visible ASCII with spaces and tabs inside (RFC 9110 §5.5).',
    example: { 'X-Team': 'ops' },
  });

/**
 * `callback.authToken`, sent as `Authorization: Bearer <token>`: so it can always be sent, a header value of RFC 9110
 * §5.5 (visible ASCII, spaces and tabs inside), the rule of `callback.headers` values.
 */
export const AuthTokenSchema = z
  .string()
  .min(1)
  .max(MAX_HEADER_VALUE_LENGTH - 'Bearer '.length)
  .regex(HEADER_VALUE_PATTERN, 'visible ASCII only, with spaces and tabs inside (RFC 9110)');

const callbackFields = {
  url: z.string().min(1).max(2048),
  method: z.enum(HTTP_METHODS),
  headers: CallbackHeadersSchema,
  successStatusCodes: z
    .array(z.union([int(100, 599), z.string().regex(STATUS_CLASS_PATTERN, 'a status class such as "2xx"')]))
    .min(1)
    .max(50),
  timeoutMs: int(MIN_TIMEOUT_MS, MAX_TIMEOUT_MS),
  successBody: z
    .union([
      z.strictObject({ contains: z.string().min(1).max(1024) }),
      z.strictObject({
        jsonPointer: z.string().max(1024).refine(isJsonPointer, 'an RFC 6901 JSON Pointer, such as "/status" ("~0" for ~, "~1" for /)'),
        equals: z.unknown().refine((v) => v !== undefined, 'required'),
      }),
    ])
    .openapi('SuccessBody', {
      description:
        'A success status whose body does not match fails the attempt (`body_mismatch`): the body (its first 64 KiB, as UTF-8) contains `contains`, or parses as JSON with `equals` at the RFC 6901 `jsonPointer`.',
    }),
};

/** `onSuccess` / `onFailure`: where a run's result is posted (API.md "Receiver control and result routing"). */
export const ResultRouteSchema = z.strictObject({ url: z.string().min(1).max(2048) }).openapi('ResultRoute');

export const CallbackSchema = z
  .strictObject({
    url: callbackFields.url,
    method: callbackFields.method.default('POST'),
    headers: callbackFields.headers.default({}),
    authToken: AuthTokenSchema.optional(),
    successStatusCodes: callbackFields.successStatusCodes.default(['2xx']),
    timeoutMs: callbackFields.timeoutMs.default(DEFAULT_TIMEOUT_MS),
    successBody: callbackFields.successBody.optional(),
    auth: CallbackAuthSchema.optional(),
    contentType: ContentTypeSchema.optional(),
    jwtAudience: JwtAudienceSchema.optional(),
  })
  .openapi('Callback');

/**
 * A PATCH's `callback`: any of the fields, each replacing the job's; `authToken: null` removes the token. No
 * defaults: `CallbackSchema.partial()` kept them (zod 4 applies a default under `.optional()`), so changing only
 * `timeoutMs` reset the method, the headers and the success codes.
 */
export const CallbackPatchSchema = z.strictObject({
  url: callbackFields.url.optional(),
  method: callbackFields.method.optional(),
  headers: callbackFields.headers.optional(),
  authToken: AuthTokenSchema.nullable().optional(),
  successStatusCodes: callbackFields.successStatusCodes.optional(),
  timeoutMs: callbackFields.timeoutMs.optional(),
  /** null removes the rule. */
  successBody: callbackFields.successBody.nullable().optional(),
  /** null removes the auth; a secret left out keeps the job's (same type). */
  auth: CallbackAuthPatchSchema.nullable().optional(),
  contentType: ContentTypeSchema.nullable().optional(),
  jwtAudience: JwtAudienceSchema.nullable().optional(),
});

/**
 * A job's `completion` (API.md "Long-running jobs"): `response` (the default: the response decides the run) or `async`
 * (a success response only acknowledges the attempt; the receiver reports the end), with the report's timeout and the
 * heartbeat timeout in ms.
 */
export const CompletionSchema = z
  .strictObject({
    mode: z.enum(COMPLETION_MODES),
    timeoutMs: int(COMPLETION_MIN_TIMEOUT_MS, COMPLETION_MAX_TIMEOUT_MS).optional(),
    heartbeatTimeoutMs: int(HEARTBEAT_MIN_TIMEOUT_MS, HEARTBEAT_MAX_TIMEOUT_MS).optional(),
  })
  .openapi('Completion');

/** Most scheduled runs a job may be limited to (`maxRuns`). */
export const MAX_RUNS = 1_000_000;

/** A calendar's key (path of `PUT /v1/calendars/:key`, and a job's `calendar.key`): URL-safe, 1..100 characters. */
export const CalendarKeySchema = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9._:~-]+$/, 'letters, digits and . _ : ~ - only');

/** A job's `calendar`: the tenant's calendar, and what an occurrence on a weekend day or holiday does. */
export const CalendarRefSchema = z.strictObject({ key: CalendarKeySchema, roll: z.enum(CALENDAR_ROLLS) }).openapi('CalendarRef', {
  description:
    "An occurrence on a weekend day or holiday of the calendar (in the calendar's time zone) is skipped (a `skipped` run, error `calendar`) or moved to the next / previous business day at the same local time.",
});

/** A job's `then`: jobs of the same tenant triggered when a run of this job ends so (trigger `chain`). */
export const ThenSchema = z
  .array(z.strictObject({ jobId: z.uuid(), on: z.enum(CHAIN_ON) }))
  .max(MAX_CHAIN_LINKS)
  .openapi('Then', { description: `At most ${MAX_CHAIN_LINKS} links; a chain that comes back to a job already in it is refused.` });

/** A job's tenant-unique `key` (body field, and the path of `PUT /v1/jobs/by-key/:key`): URL-safe, 1..200 characters. */
export const JobKeySchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._:~-]+$/, 'letters, digits and . _ : ~ - only');

const jobFields = {
  name: z.string().min(1).max(200).optional(),
  schedule: ScheduleSchema,
  callback: CallbackSchema,
  payload: z.unknown().optional(),
  body: CallbackBodySchema.optional(),
  flowControlKey: FlowControlKeySchema.nullable().optional(),
  retry: RetrySchema.optional(),
  relevancyWindowMs: int(0, MAX_RELEVANCY_WINDOW_MS).nullable().optional(),
  deliveryMode: z.enum(DELIVERY_MODES).optional(),
  overlapPolicy: z.enum(OVERLAP_POLICIES).optional(),
  catchUp: z.enum(CATCH_UP_POLICIES).optional(),
  jitterMs: int(0, MAX_JITTER_MS).optional(),
  key: JobKeySchema.optional(),
  pauseAfterFailures: int(0, MAX_PAUSE_AFTER_FAILURES).optional(),
  completion: CompletionSchema.optional(),
  onSuccess: ResultRouteSchema.nullable().optional(),
  onFailure: ResultRouteSchema.nullable().optional(),
  calendar: CalendarRefSchema.nullable().optional(),
  maxRuns: int(1, MAX_RUNS).nullable().optional(),
  jitterMode: z.enum(JITTER_MODES).optional(),
  then: ThenSchema.nullable().optional(),
  metadata: z
    .record(z.string().min(1).max(64), z.string().max(512))
    .refine((m) => Object.keys(m).length <= MAX_METADATA_PAIRS, `at most ${MAX_METADATA_PAIRS} pairs`)
    .optional(),
};

export const JobBodySchema = z.strictObject(jobFields).openapi('JobInput');
export type JobBody = z.infer<typeof JobBodySchema>;

export const JobSchema = z
  .object({
    jobId: z.uuid(),
    name: z.string().nullable(),
    key: z.string().nullable(),
    status: z.enum(JOB_STATUSES),
    pausedReason: z.enum(['manual', 'gone', 'consecutive_failures', 'receiver']).nullable(),
    pauseAfterFailures: z.number(),
    consecutiveFailures: z.number(),
    schedule: ScheduleSchema,
    callback: z.object({
      url: z.string(),
      method: z.enum(HTTP_METHODS),
      headers: z.record(z.string(), z.string()),
      hasAuthToken: z.boolean(),
      successStatusCodes: z.array(z.union([z.number(), z.string()])),
      timeoutMs: z.number(),
      // `equals` as any JSON value: the response's typing turns `unknown` into `null`.
      successBody: z.union([z.object({ contains: z.string() }), z.object({ jsonPointer: z.string(), equals: z.any() })]).nullable(),
      /** The auth's public part; never its password or client secret. */
      auth: z
        .object({
          type: z.enum(['basic', 'oauth2']),
          username: z.string().optional(),
          tokenUrl: z.string().optional(),
          clientId: z.string().optional(),
          scope: z.string().optional(),
          audience: z.string().optional(),
        })
        .nullable(),
      contentType: z.string().nullable(),
      jwtAudience: z.string().nullable(),
    }),
    payload: z.unknown(),
    /** The body sent as is instead of `payload`, or null. */
    body: z.string().nullable(),
    flowControlKey: z.string().nullable(),
    retry: RetrySchema,
    relevancyWindowMs: z.number().nullable(),
    deliveryMode: z.enum(DELIVERY_MODES),
    overlapPolicy: z.enum(OVERLAP_POLICIES),
    catchUp: z.enum(CATCH_UP_POLICIES),
    jitterMs: z.number(),
    metadata: z.record(z.string(), z.string()),
    onSuccess: z.object({ url: z.string() }).nullable(),
    onFailure: z.object({ url: z.string() }).nullable(),
    calendar: z.object({ key: z.string(), roll: z.enum(CALENDAR_ROLLS) }).nullable(),
    maxRuns: z.number().nullable(),
    /** Scheduled runs made so far (toward `maxRuns`). */
    scheduledRuns: z.number(),
    jitterMode: z.enum(JITTER_MODES),
    then: z.array(z.object({ jobId: z.string(), on: z.enum(CHAIN_ON) })).nullable(),
    /** `{ mode: 'response' }`, or `{ mode: 'async', timeoutMs, heartbeatTimeoutMs? }` (src/domain/completion.ts). */
    completion: z.object({
      mode: z.enum(COMPLETION_MODES),
      timeoutMs: z.number().optional(),
      heartbeatTimeoutMs: z.number().optional(),
    }),
    nextRunAt: z.string().nullable(),
    lastRunAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('Job');

export const RunSchema = z
  .object({
    runId: z.uuid(),
    jobId: z.uuid(),
    scheduledFor: z.string(),
    trigger: z.enum(RUN_TRIGGERS),
    status: z.enum(RUN_STATUSES),
    attempts: z.number(),
    nextAttemptAt: z.string().nullable(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    responseStatus: z.number().nullable(),
    error: z.string().nullable(),
    /** When the tenant dismissed this dead letter (`DELETE /v1/dead-letters/:runId`, or a bulk replay); null otherwise. */
    dismissedAt: z.string().nullable(),
    /** An async job's run whose attempt was acknowledged: Chime waits for the receiver's report (status `running`). */
    awaitingCompletion: z.boolean(),
    /** While awaiting: when the report is due (RFC 3339 UTC); null otherwise. */
    completionDeadline: z.string().nullable(),
    /** The last heartbeat (RFC 3339 UTC) and its `progress`; null when none came. */
    lastHeartbeatAt: z.string().nullable(),
    progress: z.unknown(),
    /** The receiver's last report's `output` (JSON), or null. */
    output: z.unknown(),
  })
  .openapi('Run');

export const AttemptSchema = z
  .object({
    attempt: z.number(),
    startedAt: z.string(),
    finishedAt: z.string().nullable(),
    durationMs: z.number().nullable(),
    responseStatus: z.number().nullable(),
    responseBodyExcerpt: z.string().nullable(),
    /** The response's headers (names lower-cased, at most 4 KiB in all, `set-cookie` removed); null without a response. */
    responseHeaders: z.record(z.string(), z.string()).nullable(),
    errorClass: z.string().nullable(),
    error: z.string().nullable(),
    /** An async job's attempt: when the receiver reported its end (RFC 3339 UTC) and what it reported; else null. */
    completedAt: z.string().nullable(),
    reportedStatus: z.enum(REPORTED_STATUSES).nullable(),
  })
  .openapi('Attempt');

export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number(),
    detail: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    /** The request's id (its `X-Request-Id` response header): quote it when reporting a problem. */
    requestId: z.string().optional(),
  })
  .openapi('Problem');

/** The optional `Idempotency-Key` request header of `POST /v1/jobs`, triggers and replays (1..255 characters). */
export const IdempotencyKeyHeaders = z.object({ 'idempotency-key': z.string().min(1).max(255).optional() });

/** `?limit=&cursor=` of every list (API.md "Lists"). */
export const PageQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(50),
  cursor: z.uuid().optional(),
};
