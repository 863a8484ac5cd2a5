/** `/v1/runs` (the tenant's runs feed), `/v1/runs/:runId` (with its attempt log) and `/v1/dead-letters`. */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { isUuid } from '../../domain/ids.ts';
import { RUN_STATUSES } from '../../domain/states.ts';
import { getRun, listDeadLetters, listTenantRuns } from '../../store/runs.ts';
import type { AppEnv } from '../env.ts';
import { ApiError } from '../problems.ts';
import { AttemptSchema, InstantSchema, PageQuery, RunSchema } from '../schemas.ts';
import { attemptView, runView } from '../views.ts';
import { problemResponses } from './common.ts';

/**
 * `GET /v1/runs`: a malformed `jobId` is a 400 naming it; a well-formed one of no job of the tenant (another tenant's,
 * or none at all) answers an empty list alike, so the answer never tells whether the id exists elsewhere.
 */
const TenantRunsQuery = z.object({
  status: z.enum(RUN_STATUSES).optional(),
  jobId: z.uuid().optional(),
  since: InstantSchema.optional(),
  until: InstantSchema.optional(),
  ...PageQuery,
});

export function runRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/runs',
      summary: "Every run of the tenant's jobs, newest first",
      description: '`since` (inclusive) and `until` (exclusive) bound `scheduledFor`. A `jobId` of no job of the tenant matches no run.',
      request: { query: TenantRunsQuery },
      responses: {
        200: {
          description: 'A page of runs',
          content: { 'application/json': { schema: z.object({ runs: z.array(RunSchema), nextCursor: z.string().nullable() }) } },
        },
        ...problemResponses(400, 401),
      },
    }),
    async (c) => {
      const { since, until, ...rest } = c.req.valid('query');
      const { items, nextCursor } = await listTenantRuns(c.var.deps.store, c.var.tenantId, {
        ...rest,
        since: since === undefined ? undefined : new Date(since),
        until: until === undefined ? undefined : new Date(until),
      });
      return c.json({ runs: items.map(runView), nextCursor }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/runs/{runId}',
      summary: 'Read a run and every attempt of it',
      request: { params: z.object({ runId: z.string() }) },
      responses: {
        200: {
          description: 'The run',
          content: { 'application/json': { schema: RunSchema.extend({ attemptLog: z.array(AttemptSchema) }) } },
        },
        ...problemResponses(401, 404),
      },
    }),
    async (c) => {
      const { runId } = c.req.valid('param');
      const found = isUuid(runId) ? await getRun(c.var.deps.store, c.var.tenantId, runId) : null;
      if (!found) throw new ApiError('not_found', `no run ${runId}`);
      return c.json({ ...runView(found.run), attemptLog: found.attempts.map(attemptView) }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/dead-letters',
      summary: 'Runs that ended failed (retries exhausted), newest first',
      request: { query: z.object(PageQuery) },
      responses: {
        200: {
          description: 'A page of failed runs',
          content: { 'application/json': { schema: z.object({ runs: z.array(RunSchema), nextCursor: z.string().nullable() }) } },
        },
        ...problemResponses(400, 401),
      },
    }),
    async (c) => {
      const { items, nextCursor } = await listDeadLetters(c.var.deps.store, c.var.tenantId, c.req.valid('query'));
      return c.json({ runs: items.map(runView), nextCursor }, 200);
    },
  );
  return app;
}
