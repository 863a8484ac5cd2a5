/**
 * Changing jobs: `PATCH /v1/jobs/:jobId` (pause, resume, edit), `DELETE` (cancel), `POST …/trigger`,
 * `PUT /v1/jobs/by-key/:key` (upsert), `POST /v1/runs/:runId/replay`.
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { CalendarRoll } from '../../domain/calendar.ts';
import { normalizeCompletion } from '../../domain/completion.ts';
import { isUuid } from '../../domain/ids.ts';
import { normalizeSchedule, type Schedule } from '../../domain/schedule.ts';
import type { RunTrigger } from '../../domain/states.ts';
import { CATCH_UP_POLICIES, DELIVERY_MODES, JITTER_MODES, OVERLAP_POLICIES } from '../../domain/states.ts';
import { sha256Hex } from '../../store/credentials.ts';
import { triggerRunIdempotently } from '../../store/idempotency.ts';
import { cancelJob, type JobChanges, triggerRun, updateJob } from '../../store/job-lifecycle.ts';
import { createJob, getJobByKey, JobKeyTakenError } from '../../store/jobs.ts';
import { getRun } from '../../store/runs.ts';
import type { AppEnv } from '../env.ts';
import { everyFieldHook } from '../every-field-hook.ts';
import { assertCalendarExists, assertChainAllowed, assertFlowControlExists, fieldOf, jobRuleErrors, toJobSpec } from '../job-input.ts';
import { patchedCallback, patchedRequestBody, patchedRetry, patchRuleErrors } from '../job-patch.ts';
import { emptyBody } from '../json-guard.ts';
import { ApiError, type FieldError, validationError } from '../problems.ts';
import {
  CalendarRefSchema,
  CallbackBodySchema,
  CallbackPatchSchema,
  CompletionSchema,
  FlowControlKeySchema,
  IdempotencyKeyHeaders,
  JobBodySchema,
  JobKeySchema,
  JobSchema,
  MAX_JITTER_MS,
  MAX_METADATA_PAIRS,
  MAX_PAUSE_AFTER_FAILURES,
  MAX_RELEVANCY_WINDOW_MS,
  MAX_RUNS,
  ResultRouteSchema,
  RetryFieldsSchema,
  ScheduleSchema,
  ThenSchema,
} from '../schemas.ts';
import { jobView } from '../views.ts';
import { creationLimits, problemResponses } from './common.ts';
import { findJob } from './jobs.ts';

const JobPatchSchema = z
  .strictObject({
    paused: z.boolean().optional(),
    name: z.string().min(1).max(200).nullable().optional(),
    schedule: ScheduleSchema.optional(),
    callback: CallbackPatchSchema.optional(),
    payload: z.unknown().optional(),
    /** Sent as is instead of `payload` (setting one drops the other); null: back to `payload`. */
    body: CallbackBodySchema.nullable().optional(),
    flowControlKey: FlowControlKeySchema.nullable().optional(),
    /** Merged with the job's policy, then checked as a whole (`patchRuleErrors`). */
    retry: RetryFieldsSchema.optional(),
    relevancyWindowMs: z.number().int().min(0).max(MAX_RELEVANCY_WINDOW_MS).nullable().optional(),
    deliveryMode: z.enum(DELIVERY_MODES).optional(),
    overlapPolicy: z.enum(OVERLAP_POLICIES).optional(),
    catchUp: z.enum(CATCH_UP_POLICIES).optional(),
    jitterMs: z.number().int().min(0).max(MAX_JITTER_MS).optional(),
    pauseAfterFailures: z.number().int().min(0).max(MAX_PAUSE_AFTER_FAILURES).optional(),
    completion: CompletionSchema.optional(),
    /** null: no longer routed. */
    onSuccess: ResultRouteSchema.nullable().optional(),
    onFailure: ResultRouteSchema.nullable().optional(),
    /** null: no calendar. Re-plans the pending occurrence. */
    calendar: CalendarRefSchema.nullable().optional(),
    /** null: no limit. A limit at or below the scheduled runs made so far completes the job. */
    maxRuns: z.number().int().min(1).max(MAX_RUNS).nullable().optional(),
    jitterMode: z.enum(JITTER_MODES).optional(),
    /** null: no chain. */
    then: ThenSchema.nullable().optional(),
    metadata: z
      .record(z.string().min(1).max(64), z.string().max(512))
      .refine((m) => Object.keys(m).length <= MAX_METADATA_PAIRS, `at most ${MAX_METADATA_PAIRS} pairs`)
      .optional(),
  })
  .openapi('JobPatch');

const JobIdParam = z.object({ jobId: z.string() });
const Accepted = {
  202: { description: 'Accepted: a run due now', content: { 'application/json': { schema: z.object({ runId: z.string() }) } } },
};

export function jobLifecycleRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: 'patch',
      path: '/v1/jobs/{jobId}',
      summary: 'Pause, resume or change a job',
      request: { params: JobIdParam, body: { required: true, content: { 'application/json': { schema: JobPatchSchema } } } },
      responses: {
        200: { description: 'The job', content: { 'application/json': { schema: JobSchema } } },
        ...problemResponses(400, 401, 404, 409),
      },
    }),
    async (c) => {
      const deps = c.var.deps;
      const job = await findJob(c);
      const body = c.req.valid('json');
      const now = deps.store.clock.now();
      const errors = await patchRuleErrors(body, job, deps, now);
      if (errors.length > 0) throw validationError(errors);
      const changes: JobChanges = {};
      if (body.schedule) changes.schedule = normalizeSchedule(body.schedule, now);
      if (body.callback) {
        const patched = patchedCallback(job, body.callback);
        changes.callback = patched.callback;
        if (body.callback.authToken !== undefined) changes.authToken = body.callback.authToken;
        if (patched.authSecret !== undefined) changes.authSecret = patched.authSecret;
      }
      Object.assign(changes, patchedRequestBody(body));
      if (body.retry) changes.retry = patchedRetry(job, body.retry);
      // A replacement, not a merge: `{ "mode": "async" }` alone means the default timeout and no heartbeat. It applies
      // to attempts that start after the change; a run already awaiting keeps its deadlines.
      if (body.completion) changes.completion = normalizeCompletion(body.completion);
      for (const k of [
        'paused',
        'name',
        'flowControlKey',
        'relevancyWindowMs',
        'deliveryMode',
        'overlapPolicy',
        'catchUp',
        'jitterMs',
        'metadata',
        'pauseAfterFailures',
        'onSuccess',
        'onFailure',
        'calendar',
        'maxRuns',
        'jitterMode',
      ] as const) {
        if (body[k] !== undefined) (changes as Record<string, unknown>)[k] = body[k];
      }
      if (body.then !== undefined) changes.then = body.then?.length ? body.then : null;
      await assertFlowControlExists(deps, c.var.tenantId, changes.flowControlKey);
      await assertCalendarExists(
        deps,
        c.var.tenantId,
        changes.calendar === undefined
          ? job.calendarKey
            ? { key: job.calendarKey, roll: job.calendarRoll as CalendarRoll }
            : null
          : changes.calendar,
        (changes.schedule ?? job.schedule) as Schedule,
        now,
      );
      await assertChainAllowed(deps, c.var.tenantId, changes.then, {
        id: job.id,
        name: changes.name !== undefined ? changes.name : job.name,
      });
      const updated = await updateJob(deps.store, c.var.tenantId, job.id, changes);
      return c.json(jobView(updated!), 200);
    },
    // Bad fields and a schedule that never fires or a refused callback: one 400 naming them all, as on create.
    everyFieldHook(JobPatchSchema, async (raw, c) => {
      const job = await findJob(c).catch((err: unknown) => {
        if (err instanceof ApiError) return null; // no such job: the rules that need it are left out
        throw err;
      });
      return patchRuleErrors(raw, job, c.var.deps, c.var.deps.store.clock.now());
    }),
  );

  app.openapi(
    createRoute({
      method: 'delete',
      path: '/v1/jobs/{jobId}',
      middleware: [emptyBody()] as const,
      summary: 'Cancel a job (its waiting runs are canceled; history is kept)',
      request: { params: JobIdParam },
      responses: { 204: { description: 'Canceled' }, ...problemResponses(401, 404) },
    }),
    async (c) => {
      const job = await findJob(c);
      await cancelJob(c.var.deps.store, c.var.tenantId, job.id);
      return c.body(null, 204);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/jobs/{jobId}/trigger',
      middleware: [emptyBody()] as const,
      summary: 'Run a job now, outside its schedule (also when paused)',
      request: { params: JobIdParam, headers: IdempotencyKeyHeaders },
      responses: { ...Accepted, ...problemResponses(401, 404, 409) },
    }),
    async (c) => {
      const job = await findJob(c);
      return c.json({ runId: await startRun(c, job.id, 'manual') }, 202);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/runs/{runId}/replay',
      middleware: [emptyBody()] as const,
      summary: 'A new run with the same job and payload (for dead letters: a dead letter replayed is dismissed)',
      request: { params: z.object({ runId: z.string() }), headers: IdempotencyKeyHeaders },
      responses: { ...Accepted, ...problemResponses(401, 404, 409) },
    }),
    async (c) => {
      const { runId } = c.req.valid('param');
      const found = isUuid(runId) ? await getRun(c.var.deps.store, c.var.tenantId, runId) : null;
      if (!found) throw new ApiError('not_found', `no run ${runId}`);
      return c.json({ runId: await startRun(c, found.run.jobId, 'replay', found.run.id) }, 202);
    },
  );

  app.openapi(
    createRoute({
      method: 'put',
      path: '/v1/jobs/by-key/{key}',
      summary: 'Create or replace the job with this key',
      request: {
        params: z.object({ key: JobKeySchema }),
        body: { required: true, content: { 'application/json': { schema: JobBodySchema } } },
      },
      responses: {
        200: { description: 'Replaced', content: { 'application/json': { schema: JobSchema } } },
        201: { description: 'Created', content: { 'application/json': { schema: JobSchema } } },
        ...problemResponses(400, 401, 409, 413),
      },
    }),
    async (c) => {
      const deps = c.var.deps;
      const { key } = c.req.valid('param');
      const body = c.req.valid('json');
      const now = deps.store.clock.now();
      const spec = await toJobSpec({ ...body, key }, deps, now, keyMismatch(body.key, key));
      await assertFlowControlExists(deps, c.var.tenantId, spec.flowControlKey);
      await assertCalendarExists(deps, c.var.tenantId, spec.calendar, spec.schedule, now);
      for (let attempt = 0; attempt < 2; attempt++) {
        const existing = await getJobByKey(deps.store, c.var.tenantId, key);
        if (existing) {
          await assertChainAllowed(deps, c.var.tenantId, spec.then, { id: existing.id, name: spec.name });
          const { key: _k, authToken, ...fields } = spec;
          const updated = await updateJob(
            deps.store,
            c.var.tenantId,
            existing.id,
            { ...fields, authToken: authToken ?? null, replace: true },
            creationLimits(deps, c.var.quotas),
          );
          return c.json(jobView(updated!), 200);
        }
        await assertChainAllowed(deps, c.var.tenantId, spec.then, null);
        try {
          return c.json(jobView(await createJob(deps.store, c.var.tenantId, spec, now, creationLimits(deps, c.var.quotas))), 201);
        } catch (err) {
          if (!(err instanceof JobKeyTakenError)) throw err; // a concurrent PUT created it: replace that one
        }
      }
      throw new ApiError('conflict', `the job with key "${key}" is being changed concurrently; retry`);
    },
    // A bad key in the path and bad fields in the body: one 400 naming them all.
    everyFieldHook(JobBodySchema, async (raw, c) => {
      const pathKey = JobKeySchema.safeParse(c.req.param('key'));
      const known = pathKey.success ? keyMismatch(fieldOf(raw, 'key'), pathKey.data) : [];
      return [...known, ...(await jobRuleErrors(raw, c.var.deps, c.var.deps.store.clock.now()))];
    }),
  );
  return app;
}

/** The body's `key` of a `PUT /v1/jobs/by-key/:key`, which must be absent or the path's. */
function keyMismatch(bodyKey: unknown, pathKey: string): FieldError[] {
  return bodyKey !== undefined && bodyKey !== pathKey
    ? [{ path: 'key', message: `must be absent or equal the path's key "${pathKey}"` }]
    : [];
}

/**
 * A run of the tenant's job `jobId` due now (a trigger or a replay), once per `Idempotency-Key` when the request
 * has one: a repeat of the same request answers the first run's id (API.md "Jobs").
 * @param replayOf the run a replay repeats: a dead letter is dismissed with it (`insertTriggeredRun`)
 * @returns the run id
 * @throws ApiError 404 (no such job), 409 (canceled job, or the key was used for another request)
 */
export async function startRun(c: Context<AppEnv>, jobId: string, trigger: RunTrigger, replayOf?: string): Promise<string> {
  const { store } = c.var.deps;
  const key = c.req.header('idempotency-key');
  if (!key) {
    const runId = await triggerRun(store, c.var.tenantId, jobId, trigger, replayOf);
    if (!runId) throw new ApiError('not_found', `no job ${jobId}`);
    return runId;
  }
  const requestHash = sha256Hex(`${c.req.method} ${c.req.path}`);
  const r = await triggerRunIdempotently(store, c.var.tenantId, key, requestHash, jobId, trigger, replayOf);
  if (r.kind === 'not_found') throw new ApiError('not_found', `no job ${jobId}`);
  if (r.kind === 'mismatch') throw new ApiError('conflict', 'this Idempotency-Key was used with another request in the last 24 h');
  return r.runId;
}
