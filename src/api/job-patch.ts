/**
 * `PATCH /v1/jobs/:jobId` for the fields whose new value depends on the job's: the callback (its fields replace the
 * job's; a secret of `callback.auth` left out is kept), the request body (`payload` and `body` are one body: setting
 * one drops the other) and the retry policy (merged, then checked as a whole). Each is checked before it is applied,
 * every problem named at once (`patchRuleErrors`).
 */
import type { z } from '@hono/zod-openapi';
import type { CallbackSpec } from '../domain/job.ts';
import { type RetryPolicy, resolveRetryPolicy } from '../domain/retry.ts';
import type { JobRow } from '../store/jobs.ts';
import type { AppDeps } from './env.ts';
import { fieldOf, resultRouteErrors, scheduleFieldErrors, splitAuth, validateCallback, validFields } from './job-input.ts';
import type { FieldError } from './problems.ts';
import { CallbackBodySchema, CallbackPatchSchema, RetryFieldsSchema, retryIssues, ScheduleSchema } from './schemas.ts';

type CallbackPatch = z.infer<typeof CallbackPatchSchema>;
type RetryPatch = z.infer<typeof RetryFieldsSchema>;
type AuthPatch = NonNullable<CallbackPatch['auth']>;

/**
 * A job's callback with a PATCH's fields applied: the fields given replace the job's (`null` clears `successBody`,
 * `auth`, `contentType`, `jwtAudience`).
 * @returns the callback; `hasToken`: whether it will carry an auth token (`authToken: null` removes it);
 *   `authSecret`: the auth's new secret (null: none), or undefined to keep the job's
 */
export function patchedCallback(
  job: JobRow,
  patch: CallbackPatch,
): { callback: CallbackSpec; hasToken: boolean; authSecret?: string | null } {
  const { authToken, auth, ...rest } = patch;
  const changed = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
  const callback = { ...(job.callback as CallbackSpec), ...changed } as CallbackSpec;
  const hasToken = authToken === undefined ? job.authTokenEnc !== null : authToken !== null;
  if (auth === undefined) return { callback, hasToken };
  if (auth === null) return { callback: { ...callback, auth: null }, hasToken, authSecret: null };
  const split = splitAuth(auth);
  return { callback: { ...callback, auth: split.auth }, hasToken, authSecret: split.secret };
}

/**
 * Why a PATCH's `callback.auth` without its secret cannot keep the job's: the job has no auth of that type, or (OAuth2)
 * the token URL or client id changes, which would hand the kept client secret to another endpoint or client.
 * @returns the field error, at `callback.auth.password` or `callback.auth.clientSecret`, or null
 */
function keptSecretIssue(job: JobRow, auth: AuthPatch): FieldError | null {
  const current = (job.callback as CallbackSpec).auth ?? null;
  if (auth.type === 'basic') {
    if (auth.password !== undefined || current?.type === 'basic') return null;
    return { path: 'callback.auth.password', message: 'required: the job has no basic password to keep' };
  }
  if (auth.clientSecret !== undefined) return null;
  const path = 'callback.auth.clientSecret';
  if (current?.type !== 'oauth2') return { path, message: 'required: the job has no OAuth2 client secret to keep' };
  if (current.tokenUrl !== auth.tokenUrl || current.clientId !== auth.clientId) {
    return { path, message: 'required when tokenUrl or clientId changes (the kept secret would go to another token endpoint)' };
  }
  return null;
}

/**
 * A PATCH's `payload` and `body` as changes: they are one request body, so setting one (not to null) drops the other;
 * `body: null` returns to the payload.
 * @returns the job fields to set (absent: unchanged)
 */
export function patchedRequestBody(patch: { payload?: unknown; body?: string | null }): { payload?: unknown; body?: string | null } {
  const changes: { payload?: unknown; body?: string | null } = {};
  if (patch.body !== undefined) {
    changes.body = patch.body;
    if (patch.body !== null) changes.payload = null;
  }
  if (patch.payload !== undefined) {
    changes.payload = patch.payload;
    if (patch.payload !== null && patch.body === undefined) changes.body = null;
  }
  return changes;
}

/**
 * A job's retry policy with a PATCH's fields merged in. `delaysMs` carries over only while the strategy stays
 * `schedule`; a `schedule` gets `delaysMs.length + 1` attempts (`resolveRetryPolicy`).
 */
export function patchedRetry(job: JobRow, patch: RetryPatch): RetryPolicy {
  return resolveRetryPolicy({ ...(job.retry as RetryPolicy), ...patch, delaysMs: mergedDelays(job, patch) });
}

/** The `delaysMs` a patched policy has: the patch's, else the job's while both are `schedule`. */
function mergedDelays(job: JobRow, patch: RetryPatch): number[] | undefined {
  const current = job.retry as RetryPolicy;
  const strategy = patch.strategy ?? current.strategy;
  return patch.delaysMs ?? (strategy === 'schedule' && current.strategy === 'schedule' ? current.delaysMs : undefined);
}

/**
 * The problems of a PATCH body beyond its schema, in every part of it that its own schema accepts: the schedule must
 * fire (`scheduleIssues`); the callback, payload and body, applied to the job's, must pass `validateCallback`; an
 * auth secret left out must be one the job can keep; the merged retry policy must hold together (`retryIssues`);
 * result routes must be allowed destinations.
 * @param raw the body as sent (anything), or the parsed body
 * @param job the job patched; null when there is none (then only the patch's own fields are checked)
 * @param nowMs the time of the change (epoch ms)
 */
export async function patchRuleErrors(raw: unknown, job: JobRow | null, deps: AppDeps, nowMs: number): Promise<FieldError[]> {
  const schedule = ScheduleSchema.safeParse(fieldOf(raw, 'schedule'));
  const errors = schedule.success ? scheduleFieldErrors(schedule.data, nowMs) : [];
  const rawCallback = fieldOf(raw, 'callback');
  const bodyField = CallbackBodySchema.nullable().safeParse(fieldOf(raw, 'body'));
  const patchBody = { payload: fieldOf(raw, 'payload'), body: bodyField.success ? bodyField.data : undefined };
  if (rawCallback !== undefined || patchBody.payload !== undefined || patchBody.body !== undefined) {
    const patch = rawCallback === undefined ? {} : validFields(CallbackPatchSchema.shape, rawCallback);
    if (patch.auth && job) {
      const kept = keptSecretIssue(job, patch.auth);
      if (kept) errors.push(kept);
    }
    if (job) {
      const { callback, hasToken } = patchedCallback(job, patch);
      const changes = patchedRequestBody(patchBody);
      const payload = 'payload' in changes ? changes.payload : job.payload;
      const body = 'body' in changes ? changes.body : job.body;
      // Unchanged parts are not checked again (a payload change must not re-resolve the job's URL).
      const checked = rawCallback === undefined ? { method: callback.method } : callback;
      errors.push(...(await validateCallback(checked, { hasAuthToken: hasToken, payload, body }, deps)));
    } else {
      errors.push(...(await validateCallback(patch, { hasAuthToken: Boolean(patch.authToken), ...patchBody }, deps)));
    }
  }
  const retry = RetryFieldsSchema.safeParse(fieldOf(raw, 'retry'));
  // Without the job, a patch that names no strategy cannot be judged.
  if (retry.success && retry.data && (job || retry.data.strategy !== undefined)) {
    const strategy = retry.data.strategy ?? (job ? (job.retry as RetryPolicy).strategy : undefined);
    const delaysMs = job ? mergedDelays(job, retry.data) : retry.data.delaysMs;
    for (const i of retryIssues({ strategy, maxAttempts: retry.data.maxAttempts, delaysMs })) {
      errors.push({ path: `retry.${i.path}`, message: i.message });
    }
  }
  errors.push(...(await resultRouteErrors({ onSuccess: fieldOf(raw, 'onSuccess'), onFailure: fieldOf(raw, 'onFailure') }, deps)));
  return errors;
}
