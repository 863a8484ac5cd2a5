/**
 * The job as the domain sees it: what to call, when, and how to retry. The API validates client input into a
 * `JobSpec`; the store persists it; the dispatcher executes it.
 */
import type { RetryPolicy } from './retry.ts';
import type { Schedule } from './schedule.ts';
import type { CatchUpPolicy, DeliveryMode, OverlapPolicy } from './states.ts';
import type { StatusCodeSpec } from './status-codes.ts';

export const HTTP_METHODS = ['POST', 'PUT', 'PATCH', 'GET', 'DELETE'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** Callback timeout bounds and default, in ms. */
export const MIN_TIMEOUT_MS = 1000;
export const MAX_TIMEOUT_MS = 60_000;
export const DEFAULT_TIMEOUT_MS = 10_000;
/** Most custom headers on a callback (which headers are accepted: src/domain/callback-headers.ts). */
export const MAX_CALLBACK_HEADERS = 20;

/** Where and how a callback is sent; the auth token travels separately (write-only, sealed at rest). */
export type CallbackSpec = {
  url: string;
  method: HttpMethod;
  headers: Record<string, string>;
  successStatusCodes: StatusCodeSpec[];
  timeoutMs: number;
};

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
};
