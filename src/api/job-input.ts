/**
 * Turns a schema-valid job body into a `JobSpec`: the checks a schema cannot make (schedule can fire, callback
 * destination allowed, header rules) and the defaults of API.md. Every problem found is reported at once, each with
 * its field path; a body that fails its schema too is answered with both kinds (`jobBodyErrors`), as are a PATCH's.
 */
import type { z } from '@hono/zod-openapi';
import type { CalendarRef } from '../domain/calendar.ts';
import { callbackHeadersIssues } from '../domain/callback-headers.ts';
import { type ChainLink, describeCycle, findCycle } from '../domain/chain.ts';
import { normalizeCompletion } from '../domain/completion.ts';
import { checkCallbackUrl } from '../domain/destination.ts';
import type { CallbackAuth, CallbackSpec, JobSpec } from '../domain/job.ts';
import { planAfter } from '../domain/plan.ts';
import type { SuccessBody } from '../domain/receiver-control.ts';
import { resolveRetryPolicy } from '../domain/retry.ts';
import { normalizeSchedule, type Schedule, scheduleIssues } from '../domain/schedule.ts';
import type { StatusCodeSpec } from '../domain/status-codes.ts';
import { calendarsByKey } from '../store/calendars.ts';
import { chainJobs } from '../store/chains.ts';
import { missingFlowControls } from '../store/flow-controls.ts';
import type { AppDeps, ResolveHost } from './env.ts';
import { type FieldError, schemaFieldErrors, validationError } from './problems.ts';
import { CallbackSchema, type JobBody, JobBodySchema, ScheduleSchema } from './schemas.ts';

/**
 * The fields of `value` that their own schema in `shape` accepts, parsed (defaults filled in); the others are left
 * out. For checking the good parts of a body that failed its schema as a whole.
 */
export function validFields<S extends Record<string, z.ZodType>>(shape: S, value: unknown): Partial<{ [K in keyof S]: z.output<S[K]> }> {
  const out: Record<string, unknown> = {};
  const obj = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  for (const [key, schema] of Object.entries(shape)) {
    const r = schema.safeParse(obj[key]);
    if (r.success && r.data !== undefined) out[key] = r.data;
  }
  return out as Partial<{ [K in keyof S]: z.output<S[K]> }>;
}

/** The field `key` of `value` when it is an object, else undefined. */
export function fieldOf(value: unknown, key: string): unknown {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined;
}

/** `scheduleIssues` as field errors under `schedule.`. */
export function scheduleFieldErrors(schedule: Schedule, nowMs: number): FieldError[] {
  return scheduleIssues(schedule, nowMs).map((i) => ({ path: `schedule.${i.path}`, message: i.message }));
}

/** What goes with a callback that `validateCallback` checks it against: the job's token, payload and body. */
export type CallbackContext = {
  /** The job has (or will have) `callback.authToken`. */
  hasAuthToken: boolean;
  payload: unknown;
  /** The job's body that is not JSON (`body`); absent or null: none. */
  body?: unknown;
};

/**
 * Checks a callback beyond its schema: the destination is allowed (and, for a host name, resolves to allowed
 * addresses), and so is an OAuth2 `tokenUrl`; every header can be sent as given (`callbackHeadersIssues`: RFC 9110
 * names and values, no reserved name, Authorization not set twice); `authToken` and `auth` are not both set; GET
 * carries no payload or body; `payload` and `body` are not both set. A part left out (`url`, `method`, `headers`,
 * `auth`) is not checked.
 * @returns the problems found, with paths under `callback.` (or `payload`, `body`)
 */
export async function validateCallback(
  callback: Partial<Pick<CallbackSpec, 'url' | 'method' | 'headers'>> & { auth?: { type: string; tokenUrl?: string } | null },
  context: CallbackContext,
  deps: AppDeps,
): Promise<FieldError[]> {
  const { hasAuthToken, payload, body } = context;
  const errors: FieldError[] = [];
  const refused = callback.url === undefined ? null : await destinationIssue(callback.url, deps);
  if (refused) errors.push({ path: 'callback.url', message: refused });
  const auth = callback.auth ?? null;
  if (auth && hasAuthToken) errors.push({ path: 'callback.auth', message: 'set either callback.authToken or callback.auth, not both' });
  // The token request goes through the same destination guard as the callback (API.md "Destination control").
  if (auth?.type === 'oauth2' && typeof auth.tokenUrl === 'string') {
    const tokenRefused = await destinationIssue(auth.tokenUrl, deps);
    if (tokenRefused) errors.push({ path: 'callback.auth.tokenUrl', message: tokenRefused });
  }
  // The rule delivery also applies (src/domain/callback-headers.ts): what is accepted here can be sent as given.
  for (const { name, message } of callbackHeadersIssues(callback.headers ?? {}, { hasAuthToken })) {
    errors.push({ path: `callback.headers.${name}`, message });
  }
  if (auth) {
    for (const name of Object.keys(callback.headers ?? {})) {
      if (name.toLowerCase() === 'authorization' && !hasAuthToken) {
        errors.push({ path: `callback.headers.${name}`, message: 'set either callback.auth or an Authorization header, not both' });
      }
    }
  }
  const hasPayload = payload !== undefined && payload !== null;
  const hasBody = body !== undefined && body !== null;
  if (callback.method === 'GET' && hasPayload) errors.push({ path: 'payload', message: 'a GET callback carries no body' });
  if (callback.method === 'GET' && hasBody) errors.push({ path: 'body', message: 'a GET callback carries no body' });
  if (hasPayload && hasBody) errors.push({ path: 'body', message: 'send either payload (JSON) or body (sent as is), not both' });
  return errors;
}

/** A schema-valid `callback.auth` as sent; its secret may be left out on a PATCH (to keep the job's). */
export type AuthInput =
  | { type: 'basic'; username: string; password?: string }
  | { type: 'oauth2'; tokenUrl: string; clientId: string; clientSecret?: string; scope?: string; audience?: string };

/**
 * A `callback.auth` split into what is stored in the callback (shown in the Job) and its secret (sealed apart:
 * `JobSpec.authSecret`), built field by field so that no secret reaches the callback.
 * @returns `secret`: the password or client secret; null for an empty basic password (an API key as the user-id:
 *   nothing to seal); undefined when it was left out
 */
export function splitAuth(auth: AuthInput): { auth: CallbackAuth; secret: string | null | undefined } {
  if (auth.type === 'basic') {
    return { auth: { type: 'basic', username: auth.username }, secret: auth.password === undefined ? undefined : auth.password || null };
  }
  const { clientSecret, type, tokenUrl, clientId, scope, audience } = auth;
  return { auth: { type, tokenUrl, clientId, ...(scope ? { scope } : {}), ...(audience ? { audience } : {}) }, secret: clientSecret };
}

/**
 * Checks `onSuccess` / `onFailure` (API.md "Receiver control and result routing") as callbacks are checked: each URL
 * must pass `destinationIssue`. Absent or null routes are not checked.
 * @returns the problems found, with paths `onSuccess.url` / `onFailure.url`
 */
export async function resultRouteErrors(routes: { onSuccess?: unknown; onFailure?: unknown }, deps: AppDeps): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  for (const field of ['onSuccess', 'onFailure'] as const) {
    const url = fieldOf(routes[field], 'url');
    if (typeof url !== 'string') continue;
    const refused = await destinationIssue(url, deps);
    if (refused) errors.push({ path: `${field}.url`, message: refused });
  }
  return errors;
}

/**
 * Why `url` may not be called (a callback's or a notification endpoint's), or null: it must be http(s), and its host
 * public unless private destinations are allowed; a host name must resolve to public addresses now (the
 * connect-time guard checks again on every attempt).
 */
export async function destinationIssue(url: string, deps: AppDeps): Promise<string | null> {
  const allowPrivate = deps.config.allowPrivateDestinations;
  const checked = checkCallbackUrl(url, { allowPrivate });
  if (!checked.ok) return checked.reason;
  if (!allowPrivate && !checked.hostIsIp && deps.resolveHost) {
    const resolved = await deps.resolveHost(checked.url.hostname);
    if (!resolved.ok) return resolved.reason;
  }
  return null;
}

/**
 * `resolve` with one lookup per host name: for the jobs of one request (`POST /v1/jobs/batch`), which mostly share a
 * few hosts. Without it a batch of 1,000 jobs to one host made 1,000 DNS lookups on libuv's thread pool (4 threads).
 * Per request only: a later request looks again, as the registration check is of the host's addresses now.
 * @returns a ResolveHost whose calls for one host name share the first call's promise (its answer, or its rejection)
 */
export function resolveOncePerHost(resolve: ResolveHost): ResolveHost {
  const byHost = new Map<string, ReturnType<ResolveHost>>();
  return (hostname) => {
    let result = byHost.get(hostname);
    if (result === undefined) byHost.set(hostname, (result = resolve(hostname)));
    return result;
  };
}

/**
 * The problems of a job body beyond its schema (`scheduleIssues`, `validateCallback`) in every part of it that its
 * own schema accepts, so that a body with a bad field of each kind (a `jitterMs` out of range and a schedule that
 * never fires) names both.
 * @param raw the body as sent: anything
 * @param nowMs registration time (epoch ms)
 */
export async function jobRuleErrors(raw: unknown, deps: AppDeps, nowMs: number): Promise<FieldError[]> {
  const schedule = ScheduleSchema.safeParse(fieldOf(raw, 'schedule'));
  const callback = validFields(CallbackSchema.shape, fieldOf(raw, 'callback'));
  return [
    ...(schedule.success ? scheduleFieldErrors(schedule.data, nowMs) : []),
    ...(await validateCallback(
      callback,
      { hasAuthToken: Boolean(callback.authToken), payload: fieldOf(raw, 'payload'), body: fieldOf(raw, 'body') },
      deps,
    )),
    ...(await resultRouteErrors({ onSuccess: fieldOf(raw, 'onSuccess'), onFailure: fieldOf(raw, 'onFailure') }, deps)),
  ];
}

/**
 * Every problem of a job body as sent: its schema's field errors and `jobRuleErrors`.
 * @returns empty for a body `toJobSpec` accepts
 */
export async function jobBodyErrors(raw: unknown, deps: AppDeps, nowMs: number): Promise<FieldError[]> {
  const parsed = JobBodySchema.safeParse(raw);
  return [...(parsed.success ? [] : schemaFieldErrors(parsed.error.issues)), ...(await jobRuleErrors(raw, deps, nowMs))];
}

/**
 * Refuses a `flowControlKey` that names no flow control of the tenant (API.md "Destination control").
 * @param key the job's key as set (null or undefined: none, nothing to check)
 * @throws ApiError `validation` naming `flowControlKey`
 */
export async function assertFlowControlExists(deps: AppDeps, tenantId: string, key: string | null | undefined): Promise<void> {
  if (!key) return;
  const [missing] = await missingFlowControls(deps.store.db, tenantId, [key]);
  if (missing !== undefined) throw validationError([flowControlMissing(missing)]);
}

/** The job a `then` belongs to, for the cycle check: its id and the name it has (or will have) after the change. */
export type ChainOwner = { id: string; name: string | null };

/**
 * The problems of chains (`then`, API.md "Richer schedules") that need the tenant's jobs, for several jobs in one read
 * (`chainJobs`): each `then[i].jobId` must name a callback job of the tenant that is not canceled (`then.<i>.jobId`),
 * and the chain from an existing job must not come back to a job already in it (`then`, naming the cycle). A job being
 * created (`owner` null) closes no cycle: no link can name it yet. Canceled jobs' links are left out of the graph (a
 * chain never triggers a canceled job).
 * @param items each job's `then` (`links`) and the job it is set on (`owner`)
 * @returns per item, its field errors (empty when its `then` is absent, null or empty)
 */
export async function chainErrors(
  deps: AppDeps,
  tenantId: string,
  items: readonly { links: readonly ChainLink[] | null | undefined; owner: ChainOwner | null }[],
): Promise<FieldError[][]> {
  const targets = items.flatMap((i) => i.links?.map((l) => l.jobId) ?? []);
  if (targets.length === 0) return items.map(() => []);
  const withLinks = items.some((i) => i.owner !== null && (i.links?.length ?? 0) > 0);
  const byId = new Map((await chainJobs(deps.store.db, tenantId, targets, withLinks)).map((j) => [j.id, j]));
  const linksOf = (id: string) => {
    const j = byId.get(id);
    return j && j.status !== 'canceled' ? (j.then_jobs ?? []).map((l) => l.jobId) : [];
  };
  return items.map(({ links, owner }) => {
    const errors: FieldError[] = [];
    (links ?? []).forEach((link, i) => {
      const target = byId.get(link.jobId);
      if (target?.kind !== 'callback') errors.push({ path: `then.${i}.jobId`, message: `no job ${link.jobId}` });
      else if (target.status === 'canceled') errors.push({ path: `then.${i}.jobId`, message: `job ${link.jobId} is canceled` });
    });
    if (owner && links?.length && errors.length === 0) {
      const cycle = findCycle(
        owner.id,
        links.map((l) => l.jobId),
        linksOf,
      );
      if (cycle) {
        const named = describeCycle(cycle, (id) => (id === owner.id ? owner.name : byId.get(id)?.name));
        errors.push({ path: 'then', message: `the chain comes back to a job already in it: ${named}` });
      }
    }
    return errors;
  });
}

/**
 * Refuses a `then` (`links`) whose links name no usable job of the tenant or close a cycle (`chainErrors`).
 * @param owner the job it is set on; null for a job being created
 * @throws ApiError `validation` naming `then.<i>.jobId` or `then`
 */
export async function assertChainAllowed(
  deps: AppDeps,
  tenantId: string,
  links: readonly ChainLink[] | null | undefined,
  owner: ChainOwner | null,
): Promise<void> {
  if (!links?.length) return;
  const [errors] = await chainErrors(deps, tenantId, [{ links, owner }]);
  if (errors!.length > 0) throw validationError(errors!);
}

/**
 * Refuses a job's `calendar` that names no calendar of the tenant, or under which its schedule never fires (every
 * occurrence on a day the calendar skips) (API.md "Richer schedules").
 * @param calendar the job's calendar as set (null or undefined: none, nothing to check)
 * @param schedule the job's schedule, normalized (absent: only the calendar's existence is checked)
 * @param nowMs the time of the change (epoch ms)
 * @throws ApiError `validation` naming `calendar.key`, or `calendar` when nothing would fire
 */
export async function assertCalendarExists(
  deps: AppDeps,
  tenantId: string,
  calendar: CalendarRef | null | undefined,
  schedule?: Schedule,
  nowMs = 0,
): Promise<void> {
  if (!calendar) return;
  const cal = (await calendarsByKey(deps.store.db, tenantId, [calendar.key])).get(calendar.key);
  if (!cal) throw validationError([calendarMissing(calendar.key)]);
  if (!schedule) return;
  const rule = {
    jobId: '',
    schedule,
    calendar: cal,
    roll: calendar.roll,
    jitterMs: 0,
    jitterMode: 'stable' as const,
    maxRuns: null,
    scheduledRuns: 0,
  };
  const first = planAfter(rule, nowMs - 1);
  if (first !== null && first.firesAtMs === null) {
    throw validationError([
      { path: 'calendar', message: `every occurrence of the schedule falls on a day calendar "${calendar.key}" skips` },
    ]);
  }
}

/** The field error of a `calendar.key` that names no calendar of the tenant. */
export function calendarMissing(key: string): FieldError {
  return { path: 'calendar.key', message: `no calendar "${key}": create it first with PUT /v1/calendars/${key}` };
}

/** The field error of a `flowControlKey` that names no flow control of the tenant. */
export function flowControlMissing(key: string): FieldError {
  return { path: 'flowControlKey', message: `no flow control "${key}": create it first with PUT /v1/flow-controls/${key}` };
}

/**
 * @param nowMs registration time (epoch ms): relative schedules are resolved against it
 * @param known problems the caller found already (a `PUT`'s key), answered with the body's
 * @throws ApiError `validation` naming every bad field
 */
export async function toJobSpec(body: JobBody, deps: AppDeps, nowMs: number, known: FieldError[] = []): Promise<JobSpec> {
  const errors = [
    ...known,
    ...scheduleFieldErrors(body.schedule, nowMs),
    ...(await validateCallback(
      body.callback,
      { hasAuthToken: Boolean(body.callback.authToken), payload: body.payload, body: body.body },
      deps,
    )),
    ...(await resultRouteErrors(body, deps)),
  ];
  if (errors.length > 0) throw validationError(errors);

  const auth = body.callback.auth ? splitAuth(body.callback.auth) : null;
  return {
    name: body.name ?? null,
    key: body.key ?? null,
    schedule: normalizeSchedule(body.schedule, nowMs),
    callback: {
      url: body.callback.url,
      method: body.callback.method,
      headers: body.callback.headers,
      successStatusCodes: body.callback.successStatusCodes as StatusCodeSpec[],
      timeoutMs: body.callback.timeoutMs,
      ...(body.callback.successBody ? { successBody: body.callback.successBody as SuccessBody } : {}),
      ...(auth ? { auth: auth.auth } : {}),
      ...(body.callback.contentType ? { contentType: body.callback.contentType } : {}),
      ...(body.callback.jwtAudience ? { jwtAudience: body.callback.jwtAudience } : {}),
    },
    authToken: body.callback.authToken ?? null,
    authSecret: auth?.secret ?? null,
    payload: body.payload ?? null,
    body: body.body ?? null,
    flowControlKey: body.flowControlKey ?? null,
    retry: resolveRetryPolicy(body.retry),
    relevancyWindowMs: body.relevancyWindowMs ?? null,
    deliveryMode: body.deliveryMode ?? 'at-least-once',
    overlapPolicy: body.overlapPolicy ?? 'allow',
    catchUp: body.catchUp ?? 'one',
    jitterMs: body.jitterMs ?? 0,
    metadata: body.metadata ?? {},
    pauseAfterFailures: body.pauseAfterFailures ?? 0,
    completion: normalizeCompletion(body.completion),
    onSuccess: body.onSuccess ?? null,
    onFailure: body.onFailure ?? null,
    calendar: body.calendar ?? null,
    maxRuns: body.maxRuns ?? null,
    jitterMode: body.jitterMode ?? 'stable',
    then: body.then?.length ? body.then : null,
  };
}
