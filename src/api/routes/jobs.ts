/** `/v1/jobs`: register, list and read jobs; a job's runs. */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { isUuid } from '../../domain/ids.ts';
import { JOB_STATUSES, RUN_STATUSES } from '../../domain/states.ts';
import { sha256Hex } from '../../store/credentials.ts';
import { createJobIdempotently } from '../../store/idempotency.ts';
import { createJob, getJob, getJobByKey, listJobs } from '../../store/jobs.ts';
import { listRuns } from '../../store/runs.ts';
import type { AppEnv } from '../env.ts';
import { everyFieldHook } from '../every-field-hook.ts';
import { assertCalendarExists, assertChainAllowed, assertFlowControlExists, jobRuleErrors, toJobSpec } from '../job-input.ts';
import { metadataFilter, parseMetadataFilter, SearchQueryField } from '../job-search.ts';
import { ApiError, schemaFieldErrors, validationError } from '../problems.ts';
import { IdempotencyKeyHeaders, JobBodySchema, JobKeySchema, JobSchema, PageQuery, RunSchema } from '../schemas.ts';
import { jobView, runView } from '../views.ts';
import { creationLimits, problemResponses } from './common.ts';

const JobIdParam = z.object({ jobId: z.string().openapi({ param: { name: 'jobId', in: 'path' } }) });

export function jobRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/jobs',
      summary: 'Register a job',
      request: {
        headers: IdempotencyKeyHeaders,
        body: { required: true, content: { 'application/json': { schema: JobBodySchema } } },
      },
      responses: {
        201: { description: 'Created: the job and its first run are committed', content: { 'application/json': { schema: JobSchema } } },
        200: {
          description: 'The job first created with this Idempotency-Key and body',
          content: { 'application/json': { schema: JobSchema } },
        },
        ...problemResponses(400, 401, 409, 413),
      },
    }),
    async (c) => {
      const deps = c.var.deps;
      const now = deps.store.clock.now();
      const body = c.req.valid('json');
      const spec = await toJobSpec(body, deps, now);
      await assertFlowControlExists(deps, c.var.tenantId, spec.flowControlKey);
      await assertCalendarExists(deps, c.var.tenantId, spec.calendar, spec.schedule, now);
      await assertChainAllowed(deps, c.var.tenantId, spec.then, null);
      const idempotencyKey = c.req.valid('header')['idempotency-key'];
      if (idempotencyKey) {
        const r = await createJobIdempotently(
          deps.store,
          c.var.tenantId,
          idempotencyKey,
          sha256Hex(JSON.stringify(body)),
          spec,
          now,
          creationLimits(deps, c.var.quotas),
        );
        if (r.kind === 'mismatch')
          throw new ApiError('conflict', 'this Idempotency-Key was used with another request body in the last 24 h');
        return c.json(jobView(r.job), r.kind === 'created' ? 201 : 200);
      }
      const job = await createJob(deps.store, c.var.tenantId, spec, now, creationLimits(deps, c.var.quotas));
      return c.json(jobView(job), 201);
    },
    // A bad Idempotency-Key, bad fields and a schedule that never fires: one 400 naming them all.
    everyFieldHook(JobBodySchema, (raw, c) => jobRuleErrors(raw, c.var.deps, c.var.deps.store.clock.now())),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/jobs',
      summary: 'List jobs, newest first; search by name or key (q) and by metadata (metadata.<key>=<value>)',
      description:
        'Every given filter must match. `q`: a case-insensitive substring of the name or key. `metadata.<key>=<value>` ' +
        '(any number of different keys, at most 20): jobs whose metadata holds each pair, e.g. `?metadata.team=ops&metadata.env=prod`.',
      request: { query: z.object({ status: z.enum(JOB_STATUSES).optional(), q: SearchQueryField.optional(), ...PageQuery }) },
      responses: {
        200: {
          description: 'A page of jobs',
          content: { 'application/json': { schema: z.object({ jobs: z.array(JobSchema), nextCursor: z.string().nullable() }) } },
        },
        ...problemResponses(400, 401),
      },
    }),
    async (c) => {
      const q = c.req.valid('query');
      // metadata.<key> parameters are named by the tenant's keys, so no schema field holds them (job-search.ts).
      const metadata = metadataFilter(c.req.queries());
      const { items, nextCursor } = await listJobs(c.var.deps.store, c.var.tenantId, { ...q, metadata });
      return c.json({ jobs: items.map(jobView), nextCursor }, 200);
    },
    // A bad q or limit and a bad metadata.<key> in one request: one 400 naming them all.
    (result, c) => {
      if (!result.success)
        throw validationError([...schemaFieldErrors(result.error.issues), ...parseMetadataFilter(c.req.queries()).errors]);
      return undefined;
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/jobs/{jobId}',
      summary: 'Read a job',
      request: { params: JobIdParam },
      responses: { 200: { description: 'The job', content: { 'application/json': { schema: JobSchema } } }, ...problemResponses(401, 404) },
    }),
    async (c) => {
      const job = await findJob(c);
      return c.json(jobView(job), 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/jobs/by-key/{key}',
      summary: "Read the job with this key (the tenant's own name for it)",
      request: { params: z.object({ key: JobKeySchema }) },
      responses: {
        200: { description: 'The job', content: { 'application/json': { schema: JobSchema } } },
        ...problemResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const { key } = c.req.valid('param');
      const job = await getJobByKey(c.var.deps.store, c.var.tenantId, key);
      if (!job) throw new ApiError('not_found', `no job with key "${key}"`);
      return c.json(jobView(job), 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/jobs/{jobId}/runs',
      summary: "List a job's runs, newest first",
      request: { params: JobIdParam, query: z.object({ status: z.enum(RUN_STATUSES).optional(), ...PageQuery }) },
      responses: {
        200: {
          description: 'A page of runs',
          content: { 'application/json': { schema: z.object({ runs: z.array(RunSchema), nextCursor: z.string().nullable() }) } },
        },
        ...problemResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const job = await findJob(c);
      const { items, nextCursor } = await listRuns(c.var.deps.store, c.var.tenantId, job.id, c.req.valid('query'));
      return c.json({ runs: items.map(runView), nextCursor }, 200);
    },
  );

  return app;
}

/** The path's job of the caller's tenant. @throws ApiError not_found (also for another tenant's job) */
export async function findJob(c: { req: { param(name: 'jobId'): string }; var: AppEnv['Variables'] }) {
  const jobId = c.req.param('jobId');
  const job = isUuid(jobId) ? await getJob(c.var.deps.store, c.var.tenantId, jobId) : null;
  if (!job) throw new ApiError('not_found', `no job ${jobId}`);
  return job;
}
