/** `/v1/usage`: the tenant's runs per UTC day by outcome, the fire lag of recent runs, and its open jobs. */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { tenantUsage } from '../../store/usage.ts';
import type { AppEnv } from '../env.ts';
import { problemResponses } from './common.ts';

/** `?days=`: how many UTC days, today included (1..90, default 14). */
const UsageQuery = z.object({
  days: z.coerce.number().int().min(1).max(90).default(14).openapi({ example: 14 }),
});

const Count = z.number().int().min(0);

/** The body of `GET /v1/usage` (store/usage.ts `Usage`; the console's `Usage` type). */
export const UsageSchema = z
  .object({
    from: z
      .string()
      .openapi({ description: 'Start of the oldest day covered (midnight UTC), RFC 3339', example: '2026-11-11T00:00:00.000Z' }),
    to: z.string().openapi({ description: 'End of the span covered: now, RFC 3339 UTC', example: '2026-11-24T15:04:05.000Z' }),
    daily: z
      .array(
        z.object({
          date: z.string().openapi({ description: 'The UTC day', example: '2026-11-24' }),
          succeeded: Count,
          failed: Count,
          expired: Count,
          skipped: Count,
          attempts: Count.openapi({ description: 'Attempts (HTTP requests) started that day' }),
        }),
      )
      .openapi({ description: 'Every day of the span, oldest first, zeros included; runs count on the UTC day they finished' }),
    fireLagMs: z.object({ p50: Count, p99: Count }).nullable().openapi({
      description: 'Percentiles of startedAt - scheduledFor (ms, at least 0) of the runs started in the last 24 h; null when none',
    }),
    jobs: z.object({ active: Count, paused: Count }),
  })
  .openapi('Usage');

/** `GET /v1/usage`: the tenant's runs per UTC day by outcome, fire lag and open jobs (store/usage.ts). */
export function usageRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/usage',
      summary: "The tenant's runs per day by outcome, fire lag, and active and paused jobs",
      description:
        'Counts per UTC day of the runs that finished that day (and of the attempts started that day), for the last `days` days ' +
        'up to now, oldest first, every day present. Notification deliveries are not counted.',
      request: { query: UsageQuery },
      responses: {
        200: { description: 'Usage', content: { 'application/json': { schema: UsageSchema } } },
        ...problemResponses(400, 401),
      },
    }),
    async (c) => {
      const { days } = c.req.valid('query');
      return c.json(await tenantUsage(c.var.deps.store, c.var.tenantId, days), 200);
    },
  );
  return app;
}
