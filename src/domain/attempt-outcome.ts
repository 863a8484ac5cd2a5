/**
 * What one finished attempt means for its run: success, a retry (when), or the end (failed, expired), and whether
 * the job must pause. Pure: the dispatcher feeds it the HTTP result and the clock.
 */

import { PAUSED_REASON, type PausedReason } from './events.ts';
import type { ControlToken, ResultResponse, SuccessBody } from './receiver-control.ts';
import { successBodyMismatch } from './receiver-control.ts';
import { type RetryPolicy, retryDelayMs } from './retry.ts';
import type { DeliveryMode } from './states.ts';
import { isSuccessStatus, type StatusCodeSpec } from './status-codes.ts';
import { isPastWindow } from './window.ts';

/** Classes of attempt failure, as recorded in the attempt log. */
export const ERROR_CLASS = Object.freeze({
  timeout: 'timeout',
  connectionRefused: 'connection_refused',
  connection: 'connection_error',
  dns: 'dns',
  tls: 'tls',
  refusedDestination: 'refused_destination',
  badStatus: 'bad_status',
  /** A success status whose body did not meet the callback's `successBody`. */
  bodyMismatch: 'body_mismatch',
  internal: 'internal',
  /** The dispatcher lost the run's lease (it died, stalled past the lease, or shut down) before recording a result. */
  leaseLost: 'lease_lost',
  /** An async job's attempt: no report within `completion.timeoutMs`, or no heartbeat within `heartbeatTimeoutMs`. */
  completionTimeout: 'completion_timeout',
  /** An async job's attempt the receiver reported `failed` (its `error` is the report's). */
  reportedFailure: 'reported_failure',
  /**
   * `callback.auth` OAuth2: the access token could not be had from `tokenUrl` (network, a non-2xx answer, a body that
   * is not a token). Retried by the policy; nothing of the callback left when the first token failed.
   */
  authTokenFailed: 'auth_token_failed',
} as const);
export type ErrorClass = (typeof ERROR_CLASS)[keyof typeof ERROR_CLASS];

/**
 * Error codes (Node's `code`, undici's, on the error or its `cause`) of failures where no request byte can have left,
 * so an at-most-once run may be retried: refused connections, name resolution, connect timeouts, unreachable
 * networks, and Chime's own destination guard.
 */
export const NOT_SENT_ERROR_CODES: Readonly<Record<string, ErrorClass>> = Object.freeze({
  ECONNREFUSED: ERROR_CLASS.connectionRefused,
  ENOTFOUND: ERROR_CLASS.dns,
  EAI_AGAIN: ERROR_CLASS.dns,
  ENODATA: ERROR_CLASS.dns,
  UND_ERR_CONNECT_TIMEOUT: ERROR_CLASS.timeout,
  ERR_DESTINATION_REFUSED: ERROR_CLASS.refusedDestination,
  EHOSTUNREACH: ERROR_CLASS.connection,
  ENETUNREACH: ERROR_CLASS.connection,
});

/** The HTTP side of an attempt: a response, or an error before one arrived. */
export type HttpResult =
  | {
      kind: 'response';
      status: number;
      retryAfterMs: number | null;
      bodyExcerpt: string;
      /** Every response header, names lower-cased, repeated ones joined by `, ` (capped for the log by `outcomeOf`). */
      headers?: Record<string, string>;
      /** The body's first bytes, up to the request's `keepBodyBytes` (read only when asked: `successBody`, result routing). */
      body?: Uint8Array;
      /** The body went on past `body`. */
      bodyTruncated?: boolean;
    }
  | { kind: 'error'; errorClass: ErrorClass; message: string /** the request may have reached the receiver */; maybeSent: boolean };

/** What an attempt's result means for its run (`decideAfterAttempt`). Times are epoch ms. */
export type AttemptDecision = {
  /** The run's new state: final, or `retrying` at `nextAttemptAtMs`. */
  runStatus: 'succeeded' | 'failed' | 'retrying' | 'expired';
  nextAttemptAtMs: number | null;
  errorClass: ErrorClass | null;
  error: string | null;
  /** Set when the job must be paused (`gone`: the receiver answered 410 Gone). */
  pauseReason: PausedReason | null;
};

/**
 * One finished attempt as the dispatcher records it (the finish statement's input): which run and attempt, the attempt
 * log's fields, and the decision. Built by `outcomeOf` (src/dispatch/attempt.ts). Times are epoch ms.
 */
export type AttemptOutcome = AttemptDecision & {
  /** The run's bucket: a finish statement names one. */
  shard: number;
  runId: string;
  jobId: string;
  attempt: number;
  startedAtMs: number;
  finishedAtMs: number;
  responseStatus: number | null;
  responseBodyExcerpt: string | null;
  /** The response's headers as the attempt log keeps them (`capResponseHeaders`); null without a response. */
  responseHeaders?: Record<string, string> | null;
  /** The attempt log's note beside its error (unknown `Chime-Control` tokens); the run's error is not given it. */
  attemptNote?: string | null;
  /** The `Chime-Control` tokens of the response that act on the job at the finish (`complete`, `skip-next`; `pause` is `pauseReason`). */
  control?: ControlToken[];
  /**
   * The result delivery this outcome asks for (the run ended `succeeded`/`failed` and its job routes that result):
   * where, and the response it carries (null when the attempt got none).
   */
  resultDelivery?: { url: string; response: ResultResponse | null };
  /** The attempt's client span as a W3C `traceparent`, when traced (README "Traces"): the finish span links to it. */
  attemptTraceParent?: string;
  /**
   * Set when the attempt succeeded and its job is async (src/domain/completion.ts): the finish records the run as
   * awaiting the receiver's report (still `running`, no lease) with its deadlines counted from `finishedAtMs`, in ms.
   */
  awaitCompletion?: { timeoutMs: number; heartbeatTimeoutMs: number | null };
};

/** HTTP 410: the receiver wants no more callbacks for this job. */
const GONE = 410;

/**
 * Decides a run's next state after its attempt number `attempt` (1-based) ended at `nowMs` (epoch ms).
 * @param random in [0, 1), for backoff jitter
 */
export function decideAfterAttempt(
  r: {
    attempt: number;
    scheduledForMs: number;
    relevancyWindowMs: number | null;
    retry: RetryPolicy;
    deliveryMode: DeliveryMode;
    successStatusCodes: readonly StatusCodeSpec[];
    /** The callback's `successBody`: a success status whose body does not meet it fails with `body_mismatch`. */
    successBody?: SuccessBody | null;
    /** The response's `Chime-Control` tokens (`parseChimeControl`): `no-retry` ends the run, `pause` pauses the job. */
    control?: readonly ControlToken[];
  },
  result: HttpResult,
  nowMs: number,
  random: () => number = Math.random,
): AttemptDecision {
  const control = r.control ?? [];
  // `Chime-Control: pause` pauses the job whatever the attempt's result (a 410's `gone` says more, and wins).
  const receiverPause = control.includes('pause') ? PAUSED_REASON.receiver : null;
  let mismatch: string | null = null;
  if (result.kind === 'response' && isSuccessStatus(result.status, r.successStatusCodes)) {
    mismatch = r.successBody ? successBodyMismatch(r.successBody, bodyText(result)) : null;
    if (mismatch === null) {
      return { runStatus: 'succeeded', nextAttemptAtMs: null, errorClass: null, error: null, pauseReason: receiverPause };
    }
  }
  const errorClass = mismatch !== null ? ERROR_CLASS.bodyMismatch : result.kind === 'response' ? ERROR_CLASS.badStatus : result.errorClass;
  const error =
    mismatch !== null
      ? `status ${(result as { status: number }).status}, but ${mismatch}`
      : result.kind === 'response'
        ? `unexpected status ${result.status}`
        : result.message;
  const end = (runStatus: 'failed' | 'expired', why: string, pauseReason: PausedReason | null = receiverPause): AttemptDecision => ({
    runStatus,
    nextAttemptAtMs: null,
    errorClass,
    error: why,
    pauseReason,
  });
  // The guard refuses by the address itself, so every retry would be refused the same way (API.md: it fails the run).
  if (errorClass === ERROR_CLASS.refusedDestination) return end('failed', `${error}; not retried: the destination is refused`);
  if (result.kind === 'response' && result.status === GONE) {
    return end('failed', `${error}: the receiver asked for no more callbacks`, PAUSED_REASON.gone);
  }
  // The receiver said not to try again: the run ends now (API.md "Receiver control and result routing").
  if (control.includes('no-retry')) return end('failed', `${error}; not retried: the receiver answered Chime-Control: no-retry`);
  if (r.deliveryMode === 'at-most-once' && (result.kind === 'response' || result.maybeSent)) {
    return end('failed', `${error}; not re-sent (at-most-once)`);
  }
  const delay = retryDelayMs(r.retry, r.attempt, result.kind === 'response' ? result.retryAfterMs : null, random);
  if (delay === null) return end('failed', `${error} (attempt ${r.attempt} of ${r.retry.maxAttempts}; no retries left)`);
  const next = nowMs + delay;
  if (isPastWindow(r.scheduledForMs, r.relevancyWindowMs, next)) {
    return end('expired', `${error}; the next retry would start after the relevancy window`);
  }
  return { runStatus: 'retrying', nextAttemptAtMs: next, errorClass, error, pauseReason: receiverPause };
}

/** The body a `successBody` rule reads: the kept bytes as UTF-8 (malformed sequences replaced), else the excerpt. */
function bodyText(result: Extract<HttpResult, { kind: 'response' }>): string {
  return result.body ? new TextDecoder().decode(result.body) : result.bodyExcerpt;
}
