/** `/v1/runs/:runId` (with its attempt log) and `/v1/dead-letters`. */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { isUuid } from '../../domain/ids.ts';
import { getRun, listDeadLetters } from '../../store/runs.ts';
import type { AppEnv } from '../env.ts';
import { ApiError } from '../problems.ts';
import { AttemptSchema, PageQuery, RunSchema } from '../schemas.ts';
import { attemptView, runView } from '../views.ts';
import { problemResponses } from './common.ts';

export function runRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/runs/{runId}',
      summary: 'Read a run and every attempt of it',
      request: { params: z.object({ runId: z.string() }) },
      responses: {
        200: { description: 'The run', content: { 'application/json': { schema: RunSchema.extend({ attemptLog: z.array(AttemptSchema) }) } } },
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
        200: { description: 'A page of failed runs', content: { 'application/json': { schema: z.object({ runs: z.array(RunSchema), nextCursor: z.string().nullable() }) } } },
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
