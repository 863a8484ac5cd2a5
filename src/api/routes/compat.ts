/**
 * The compatibility routes of API.md: the minimal contract some clients already speak, as a thin adapter over the
 * same validation and store functions as `/v1`, with the same auth, limits and problem details.
 *
 *   POST  /jobs { name, cronExpr, handlerUrl, payload?, timeout?, retries? } → 201 { jobId }
 *   GET   /jobs/:jobId/runs?limit=50 → { runs: [{ runId, status, startedAt, finishedAt, error }] }
 *   POST  /jobs/:jobId/trigger → 202 { runId }
 *   PATCH /jobs/:jobId { paused } → 200 { jobId, paused }
 *
 * Mapping: `cronExpr` → a UTC `cron` schedule, `handlerUrl` → `callback.url` (POST), `timeout` (ms) →
 * `callback.timeoutMs`, `retries` (after the first attempt) → `retry.maxAttempts = retries + 1`. Errors name the
 * fields as the client sent them (`cronExpr`, not `schedule.expression`).
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { DEFAULT_TIMEOUT_MS, type JobSpec, MAX_TIMEOUT_MS, MIN_TIMEOUT_MS } from '../../domain/job.ts';
import { MAX_ATTEMPTS_LIMIT } from '../../domain/retry.ts';
import { JOB_STATUS } from '../../domain/states.ts';
import { updateJob } from '../../store/job-lifecycle.ts';
import { createJob } from '../../store/jobs.ts';
import { listRuns } from '../../store/runs.ts';
import type { AppEnv } from '../env.ts';
import { everyFieldHook } from '../every-field-hook.ts';
import { jobRuleErrors, toJobSpec, validFields } from '../job-input.ts';
import { emptyBody } from '../json-guard.ts';
import { ApiError, type FieldError, validationError } from '../problems.ts';
import type { JobBody } from '../schemas.ts';
import { creationLimits, problemResponses } from './common.ts';
import { startRun } from './job-lifecycle.ts';
import { findJob } from './jobs.ts';

const int = (min: number, max: number) => z.number().int().min(min).max(max);

const CompatJobBody = z
  .strictObject({
    name: z.string().min(1).max(200),
    // The minimal contract's cron has 5 fields: the 6-field form (seconds) is /v1's only.
    cronExpr: z
      .string()
      .min(1)
      .max(200)
      .refine((e) => e.trim().split(/\s+/).length !== 6, 'expected 5 fields (minute hour day-of-month month day-of-week)')
      .openapi({ example: '0 0 * * *', description: '5-field cron, UTC' }),
    handlerUrl: z.string().min(1).max(2048).openapi({ example: 'https://example.com/hooks/report' }),
    payload: z.unknown().optional(),
    timeout: int(MIN_TIMEOUT_MS, MAX_TIMEOUT_MS).optional().openapi({ description: 'ms', example: DEFAULT_TIMEOUT_MS }),
    retries: int(0, MAX_ATTEMPTS_LIMIT - 1)
      .optional()
      .openapi({ description: 'retries after the first attempt' }),
  })
  .openapi('CompatJobInput');
type CompatJobBody = z.infer<typeof CompatJobBody>;

const CompatRun = z
  .object({
    runId: z.uuid(),
    status: z.string(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    error: z.string().nullable(),
  })
  .openapi('CompatRun');

const JobIdParam = z.object({ jobId: z.string() });
const tags = ['compatibility'];

/** Where a `/v1` job field's errors are reported in the compatibility body, by path prefix (first match wins). */
const FIELD_NAMES: [prefix: string, name: keyof CompatJobBody][] = [
  ['schedule', 'cronExpr'],
  ['callback.timeoutMs', 'timeout'],
  ['callback', 'handlerUrl'],
  ['retry', 'retries'],
  ['payload', 'payload'],
  ['name', 'name'],
];

/** Renames the paths of `/v1` field errors to the compatibility body's field names. */
export function compatFieldErrors(errors: FieldError[]): FieldError[] {
  return errors.map((e) => {
    const hit = FIELD_NAMES.find(([prefix]) => e.path === prefix || e.path.startsWith(`${prefix}.`));
    return hit ? { path: hit[1], message: e.message } : e;
  });
}

/** The `/v1` job body of a compatibility body. */
export function toV1JobBody(b: CompatJobBody): JobBody {
  return {
    name: b.name,
    schedule: { type: 'cron', expression: b.cronExpr },
    callback: { url: b.handlerUrl, method: 'POST', headers: {}, successStatusCodes: ['2xx'], timeoutMs: b.timeout ?? DEFAULT_TIMEOUT_MS },
    payload: b.payload,
    retry: b.retries === undefined ? undefined : { maxAttempts: b.retries + 1 },
  };
}

/** The four compatibility routes; mount after the API key check (they are tenant routes like `/v1`). */
export function compatRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: 'post',
      path: '/jobs',
      tags,
      summary: 'Register a cron job (compatibility form of POST /v1/jobs)',
      request: { body: { required: true, content: { 'application/json': { schema: CompatJobBody } } } },
      responses: {
        201: {
          description: 'Created: the job and its first run are committed',
          content: { 'application/json': { schema: z.object({ jobId: z.uuid() }) } },
        },
        ...problemResponses(400, 401, 409, 413, 429),
      },
    }),
    async (c) => {
      const deps = c.var.deps;
      const now = deps.store.clock.now();
      let spec: JobSpec;
      try {
        spec = await toJobSpec(toV1JobBody(c.req.valid('json')), deps, now);
      } catch (err) {
        if (err instanceof ApiError && err.code === 'validation' && err.errors) throw validationError(compatFieldErrors(err.errors));
        throw err;
      }
      const job = await createJob(deps.store, c.var.tenantId, spec, now, creationLimits(deps, c.var.quotas));
      return c.json({ jobId: job.id }, 201);
    },
    // A bad timeout and a cron expression that never fires: one 400 naming both, as /v1 does.
    everyFieldHook(CompatJobBody, async (raw, c) => {
      const ok = validFields(CompatJobBody.shape, raw);
      const partial = {
        schedule: ok.cronExpr === undefined ? undefined : { type: 'cron', expression: ok.cronExpr },
        callback: { url: ok.handlerUrl },
      };
      return compatFieldErrors(await jobRuleErrors(partial, c.var.deps, c.var.deps.store.clock.now()));
    }),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/jobs/{jobId}/runs',
      tags,
      summary: "A job's runs, newest first (compatibility form of GET /v1/jobs/:jobId/runs)",
      request: { params: JobIdParam, query: z.object({ limit: z.coerce.number().int().min(1).max(100).default(50) }) },
      responses: {
        200: { description: 'The newest runs', content: { 'application/json': { schema: z.object({ runs: z.array(CompatRun) }) } } },
        ...problemResponses(400, 401, 404, 429),
      },
    }),
    async (c) => {
      const job = await findJob(c);
      const { items } = await listRuns(c.var.deps.store, c.var.tenantId, job.id, { limit: c.req.valid('query').limit });
      const iso = (d: Date | null) => (d ? d.toISOString() : null);
      return c.json(
        {
          runs: items.map((r) => ({
            runId: r.id,
            status: r.status,
            startedAt: iso(r.startedAt),
            finishedAt: iso(r.finishedAt),
            error: r.error,
          })),
        },
        200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/jobs/{jobId}/trigger',
      middleware: [emptyBody()] as const,
      tags,
      summary: 'Run a job now (compatibility form of POST /v1/jobs/:jobId/trigger)',
      request: { params: JobIdParam },
      responses: {
        202: { description: 'Accepted: a run due now', content: { 'application/json': { schema: z.object({ runId: z.uuid() }) } } },
        ...problemResponses(401, 404, 409, 429),
      },
    }),
    async (c) => {
      const job = await findJob(c);
      const runId = await startRun(c, job.id, 'manual');
      return c.json({ runId }, 202);
    },
  );

  app.openapi(
    createRoute({
      method: 'patch',
      path: '/jobs/{jobId}',
      tags,
      summary: 'Pause or resume a job (compatibility form of PATCH /v1/jobs/:jobId)',
      request: {
        params: JobIdParam,
        body: {
          required: true,
          content: { 'application/json': { schema: z.strictObject({ paused: z.boolean() }).openapi('CompatJobPatch') } },
        },
      },
      responses: {
        200: {
          description: 'The job is paused or active',
          content: { 'application/json': { schema: z.object({ jobId: z.uuid(), paused: z.boolean() }) } },
        },
        ...problemResponses(400, 401, 404, 409, 429),
      },
    }),
    async (c) => {
      const job = await findJob(c);
      const { paused } = c.req.valid('json');
      const updated = await updateJob(c.var.deps.store, c.var.tenantId, job.id, { paused });
      return c.json({ jobId: job.id, paused: updated!.status === JOB_STATUS.paused }, 200);
    },
  );
  return app;
}
