/**
 * `GET /v1/jobs/:jobId/result-deliveries` (API.md "Receiver control and result routing"): the job's runs' results
 * posted to its `onSuccess` / `onFailure`, each with its delivery state (store/queue/receiver-effects.ts).
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { RUN_STATUSES } from '../../domain/states.ts';
import { listResultDeliveries } from '../../store/runs.ts';
import { resultDeliveryView } from '../../store/views.ts';
import type { AppEnv } from '../env.ts';
import { PageQuery } from '../schemas.ts';
import { problemResponses } from './common.ts';
import { findJob } from './jobs.ts';

/** One result delivery: its id and `webhook-id` (`eventId`), the run it reports (`runId`), where to, and how it went. */
export const ResultDeliverySchema = z
  .object({
    deliveryId: z.uuid(),
    eventId: z.uuid().nullable(),
    runId: z.uuid().nullable(),
    type: z.enum(['run.succeeded', 'run.failed']),
    url: z.string(),
    status: z.enum(RUN_STATUSES),
    attempts: z.number(),
    createdAt: z.string(),
    nextAttemptAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    responseStatus: z.number().nullable(),
    error: z.string().nullable(),
  })
  .openapi('ResultDelivery');

/** The result-deliveries route of a job. */
export function resultDeliveryRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/jobs/{jobId}/result-deliveries',
      summary: "A job's result deliveries (to onSuccess / onFailure), newest first, with their status and last error",
      request: { params: z.object({ jobId: z.string() }), query: z.object(PageQuery) },
      responses: {
        200: {
          description: 'A page of result deliveries',
          content: {
            'application/json': { schema: z.object({ deliveries: z.array(ResultDeliverySchema), nextCursor: z.string().nullable() }) },
          },
        },
        ...problemResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const job = await findJob(c);
      const { items, nextCursor } = await listResultDeliveries(c.var.deps.store, c.var.tenantId, job.id, c.req.valid('query'));
      return c.json({ deliveries: items.map(resultDeliveryView), nextCursor }, 200);
    },
  );
  return app;
}
