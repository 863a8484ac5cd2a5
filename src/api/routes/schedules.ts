/** `POST /v1/schedules/preview`: the next occurrences of a schedule, without making a job. */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { normalizeSchedule, occurrences, scheduleIssues } from '../../domain/schedule.ts';
import type { AppEnv } from '../env.ts';
import { validationError } from '../problems.ts';
import { ScheduleSchema } from '../schemas.ts';
import { problemResponses } from './common.ts';

export function scheduleRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/schedules/preview',
      summary: 'The next occurrences of a schedule (no job made)',
      request: {
        body: { required: true, content: { 'application/json': { schema: z.strictObject({ schedule: ScheduleSchema, count: z.number().int().min(1).max(50).default(10) }) } } },
      },
      responses: {
        200: { description: 'Occurrences, RFC 3339 UTC', content: { 'application/json': { schema: z.object({ occurrences: z.array(z.string()) }) } } },
        ...problemResponses(400, 401),
      },
    }),
    (c) => {
      const { schedule, count } = c.req.valid('json');
      const now = c.var.deps.store.clock.now();
      const issues = scheduleIssues(schedule, now);
      if (issues.length > 0) throw validationError(issues.map((i) => ({ path: `schedule.${i.path}`, message: i.message })));
      const times = occurrences(normalizeSchedule(schedule, now), now - 1, count);
      return c.json({ occurrences: times.map((t) => new Date(t).toISOString()) }, 200);
    },
  );
  return app;
}
