/**
 * The job as the domain sees it: what to call, when, and how to retry. The API validates client input into a
 * `JobSpec`; the store persists it; the dispatcher executes it.
 */
import type { CalendarRef } from './calendar.ts';
import type { ChainLink } from './chain.ts';
import type { AsyncCompletion } from './completion.ts';
import type { SuccessBody } from './receiver-control.ts';
import type { RetryPolicy } from './retry.ts';
import type { Schedule } from './schedule.ts';
import type { CatchUpPolicy, DeliveryMode, JitterMode, OverlapPolicy } from './states.ts';
import type { StatusCodeSpec } from './status-codes.ts';

export const HTTP_METHODS = ['POST', 'PUT', 'PATCH', 'GET', 'DELETE'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/**
 * Callback timeout bounds and default, in ms. Up to 15 min: the run's lease (timeout + CHIME_LEASE_MARGIN_MS, from the
 * claim) covers it, and the request holds one of the dispatcher's CHIME_DISPATCH_CONCURRENCY slots that long.
 */
export const MIN_TIMEOUT_MS = 1000;
export const MAX_TIMEOUT_MS = 900_000;
export const DEFAULT_TIMEOUT_MS = 10_000;
/** Most custom headers on a callback (which headers are accepted: src/domain/callback-headers.ts). */
export const MAX_CALLBACK_HEADERS = 20;

/**
 * How the callback authenticates besides `authToken` (API.md "Destination control"): the public part, as stored in
 * `callback.auth` and shown; the secret (a basic password, an OAuth2 client secret) is write-only and sealed apart
 * (`jobs.auth_secret_enc`). `oauth2` is the client credentials grant of RFC 6749 §4.4.
 */
export type CallbackAuth =
  | { type: 'basic'; username: string }
  | { type: 'oauth2'; tokenUrl: string; clientId: string; scope?: string | null; audience?: string | null };

/** Where and how a callback is sent; the auth token travels separately (write-only, sealed at rest). */
export type CallbackSpec = {
  url: string;
  method: HttpMethod;
  headers: Record<string, string>;
  successStatusCodes: StatusCodeSpec[];
  timeoutMs: number;
  /** What the body of a success status must also hold (src/domain/receiver-control.ts); absent or null: anything. */
  successBody?: SuccessBody | null;
  /** Basic or OAuth2 client-credentials auth (its secret sealed apart); absent or null: none. */
  auth?: CallbackAuth | null;
  /** The request's media type; absent or null: `application/json` for `payload`, `text/plain` for `body`. */
  contentType?: string | null;
  /** The `aud` claim of `Chime-Signature`; absent or null: none. */
  jwtAudience?: string | null;
};

/** Where a run's result goes (`onSuccess`, `onFailure`): a URL under the same destination rule as callbacks. */
export type ResultRoute = { url: string };

/** A validated job, as stored. Times inside `schedule` are normalized (see `normalizeSchedule`). */
export type JobSpec = {
  name: string | null;
  key: string | null;
  schedule: Schedule;
  callback: CallbackSpec;
  /** Plain text here; sealed by the store. undefined = unchanged (on update), null = none. */
  authToken?: string | null;
  payload: unknown;
  retry: RetryPolicy;
  relevancyWindowMs: number | null;
  deliveryMode: DeliveryMode;
  overlapPolicy: OverlapPolicy;
  catchUp: CatchUpPolicy;
  jitterMs: number;
  metadata: Record<string, string>;
  /** Pause the job after this many consecutive runs ended `failed`; 0 = never (absent: 0). */
  pauseAfterFailures?: number;
  /** Result routing (API.md "Receiver control and result routing"): where a run that ends `succeeded` / `failed` is posted; null or absent: nowhere. */
  onSuccess?: ResultRoute | null;
  onFailure?: ResultRoute | null;
  /** Async completion (src/domain/completion.ts): the receiver reports each run's end; null or absent: the response does. */
  completion?: AsyncCompletion | null;
  /** A body that is not JSON, sent as is instead of `payload` (≤ 256 KiB); absent or null: `payload` as JSON. */
  body?: string | null;
  /** The secret of `callback.auth`, plain here, sealed by the store. undefined = unchanged (on update), null = none. */
  authSecret?: string | null;
  /** The tenant's flow control that limits this job's requests (API.md "Destination control"); absent or null: none. */
  flowControlKey?: string | null;
  /** The tenant's calendar and what an occurrence on a non-business day does (API.md "Richer schedules"); absent or null: none. */
  calendar?: CalendarRef | null;
  /** The job completes after this many scheduled runs; absent or null: no limit. */
  maxRuns?: number | null;
  /** How `jitterMs` is drawn (absent: `stable`). */
  jitterMode?: JitterMode;
  /** Jobs of the tenant to trigger when a run of this one ends; absent or null: none. */
  then?: ChainLink[] | null;
};
