/**
 * Rows → their API representations (API.md "Job", "Run"): times as RFC 3339 UTC with ms, secrets never shown. In the
 * store, not the API, because notification events carry them too (store/notifications.ts).
 */

import type { CalendarRoll } from '../domain/calendar.ts';
import type { ChainLink } from '../domain/chain.ts';
import { asyncCompletionOf, type ReportedStatus } from '../domain/completion.ts';
import type { PausedReason } from '../domain/events.ts';
import type { CallbackAuth, CallbackSpec, ResultRoute } from '../domain/job.ts';
import type { RetryPolicy } from '../domain/retry.ts';
import type { Schedule } from '../domain/schedule.ts';
import {
  type CatchUpPolicy,
  type DeliveryMode,
  type JitterMode,
  type JobStatus,
  type OverlapPolicy,
  RUN_STATUS,
  type RunStatus,
  type RunTrigger,
} from '../domain/states.ts';
import type { JobRow } from './jobs.ts';
import type { AttemptRow, RunRow } from './runs.ts';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/**
 * A job row as the API's Job (API.md "Jobs"): times RFC 3339 UTC with ms, the auth token only as `hasAuthToken`,
 * `callback.auth` without its secret (which is sealed apart and never shown).
 */
export function jobView(j: JobRow) {
  const cb = j.callback as CallbackSpec;
  return {
    jobId: j.id,
    name: j.name,
    key: j.key,
    status: j.status as JobStatus,
    pausedReason: j.pausedReason as PausedReason | null,
    pauseAfterFailures: j.pauseAfterFailures,
    consecutiveFailures: j.consecutiveFailures,
    schedule: j.schedule as Schedule,
    callback: {
      url: cb.url,
      method: cb.method,
      headers: cb.headers,
      hasAuthToken: j.authTokenEnc !== null,
      successStatusCodes: cb.successStatusCodes,
      timeoutMs: cb.timeoutMs,
      successBody: cb.successBody ?? null,
      auth: authView(cb.auth),
      contentType: cb.contentType ?? null,
      jwtAudience: cb.jwtAudience ?? null,
    },
    payload: j.payload ?? null,
    body: j.body ?? null,
    flowControlKey: j.flowControlKey ?? null,
    retry: j.retry as RetryPolicy,
    relevancyWindowMs: j.relevancyWindowMs,
    deliveryMode: j.deliveryMode as DeliveryMode,
    overlapPolicy: j.overlapPolicy as OverlapPolicy,
    catchUp: j.catchUp as CatchUpPolicy,
    jitterMs: j.jitterMs,
    metadata: j.metadata as Record<string, string>,
    onSuccess: (j.onSuccess as ResultRoute | null) ?? null,
    onFailure: (j.onFailure as ResultRoute | null) ?? null,
    calendar: j.calendarKey ? { key: j.calendarKey, roll: (j.calendarRoll ?? 'skip') as CalendarRoll } : null,
    maxRuns: j.maxRuns ?? null,
    scheduledRuns: j.scheduledRuns,
    jitterMode: j.jitterMode as JitterMode,
    then: (j.thenJobs as ChainLink[] | null) ?? null,
    completion: asyncCompletionOf(j.completion) ?? { mode: 'response' as const },
    nextRunAt: iso(j.nextRunAt),
    lastRunAt: iso(j.lastRunAt),
    createdAt: j.createdAt.toISOString(),
    updatedAt: j.updatedAt.toISOString(),
  };
}

/**
 * The public part of `callback.auth` as shown (API.md "Destination control"): type, and the user name or the OAuth2
 * client id, token URL, scope and audience; built field by field, so that a secret stored by mistake is never shown.
 */
function authView(auth: CallbackAuth | null | undefined) {
  if (!auth) return null;
  if (auth.type === 'basic') return { type: auth.type, username: auth.username };
  return {
    type: auth.type,
    tokenUrl: auth.tokenUrl,
    clientId: auth.clientId,
    ...(auth.scope ? { scope: auth.scope } : {}),
    ...(auth.audience ? { audience: auth.audience } : {}),
  };
}

/**
 * When the run's next attempt is due (RFC 3339 UTC), null unless it waits for one: a leased run keeps the due time of
 * its attempt in flight in the row (runs_due_idx, docs/design.md "Data model"), which is no next attempt.
 */
function nextAttemptOf(r: RunRow): string | null {
  return r.status === RUN_STATUS.running ? null : iso(r.nextAttemptAt);
}

/** A run row as the API's Run (API.md "Runs and attempts"), `dismissedAt` included; times RFC 3339 UTC with ms. */
export function runView(r: RunRow) {
  return {
    runId: r.id,
    jobId: r.jobId,
    scheduledFor: r.scheduledFor.toISOString(),
    trigger: r.trigger as RunTrigger,
    status: r.status as RunStatus,
    attempts: r.attempts,
    nextAttemptAt: nextAttemptOf(r),
    startedAt: iso(r.startedAt),
    finishedAt: iso(r.finishedAt),
    responseStatus: r.responseStatus,
    error: r.error,
    dismissedAt: iso(r.dismissedAt),
    awaitingCompletion: r.awaitingCompletion,
    completionDeadline: r.awaitingCompletion ? iso(r.completionDeadline) : null,
    lastHeartbeatAt: iso(r.lastHeartbeatAt),
    progress: r.progress ?? null,
    output: r.output ?? null,
  };
}

/**
 * A result delivery (a `trigger = 'result'` run, store/queue/receiver-effects.ts) as `GET /v1/jobs/:jobId/result-deliveries`
 * lists it: the delivery's id and `webhook-id` (`eventId`), the run whose result it carries (`runId`), the event type,
 * where it goes, and its delivery state; times RFC 3339 UTC with ms.
 */
export function resultDeliveryView(r: RunRow) {
  return {
    deliveryId: r.id,
    eventId: r.eventId,
    runId: r.resultOf,
    type: ((r.payload as { type?: string } | null)?.type ?? 'run.succeeded') as 'run.succeeded' | 'run.failed',
    url: (r.callback as { url: string } | null)?.url ?? '',
    ...deliveryState(r),
  };
}

/**
 * How a delivery (a run of a notification endpoint's hidden job, or a result delivery) went: its status, attempts,
 * last response status and error; times RFC 3339 UTC with ms. The part the two delivery views share.
 */
export function deliveryState(r: RunRow) {
  return {
    status: r.status as RunStatus,
    attempts: r.attempts,
    createdAt: r.createdAt.toISOString(),
    nextAttemptAt: nextAttemptOf(r),
    finishedAt: iso(r.finishedAt),
    responseStatus: r.responseStatus,
    error: r.error,
  };
}

/** An attempt row as an entry of a Run's `attemptLog`; `durationMs` in ms, times RFC 3339 UTC with ms. */
export function attemptView(a: AttemptRow) {
  return {
    attempt: a.attempt,
    startedAt: a.startedAt.toISOString(),
    finishedAt: iso(a.finishedAt),
    durationMs: a.durationMs,
    responseStatus: a.responseStatus,
    responseBodyExcerpt: a.responseBodyExcerpt,
    responseHeaders: (a.responseHeaders as Record<string, string> | null) ?? null,
    errorClass: a.errorClass,
    error: a.error,
    completedAt: iso(a.completedAt),
    reportedStatus: a.reportedStatus as ReportedStatus | null,
  };
}
