/** `POST /v1/schedules/preview`: the next occurrences of a schedule, without making a job. */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { normalizeSchedule, occurrences } from '../../domain/schedule.ts';
import type { AppEnv } from '../env.ts';
import { everyFieldHook } from '../every-field-hook.ts';
import { fieldOf, scheduleFieldErrors } from '../job-input.ts';
import { validationError } from '../problems.ts';
import { ScheduleSchema } from '../schemas.ts';
import { problemResponses } from './common.ts';

const PreviewBodySchema = z.strictObject({ schedule: ScheduleSchema, count: z.number().int().min(1).max(50).default(10) });

export function scheduleRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/schedules/preview',
      summary: 'The next occurrences of a schedule (no job made)',
      request: {
        body: { required: true, content: { 'application/json': { schema: PreviewBodySchema } } },
      },
      responses: {
        200: {
          description: 'Occurrences, RFC 3339 UTC',
          content: { 'application/json': { schema: z.object({ occurrences: z.array(z.string()) }) } },
        },
        ...problemResponses(400, 401),
      },
    }),
    (c) => {
      const { schedule, count } = c.req.valid('json');
      const now = c.var.deps.store.clock.now();
      const errors = scheduleFieldErrors(schedule, now);
      if (errors.length > 0) throw validationError(errors);
      const times = occurrences(normalizeSchedule(schedule, now), now - 1, count);
      return c.json({ occurrences: times.map((t) => new Date(t).toISOString()) }, 200);
    },
    // A bad count and a schedule that never fires: one 400 naming both.
    everyFieldHook(PreviewBodySchema, async (raw, c) => {
      const schedule = ScheduleSchema.safeParse(fieldOf(raw, 'schedule'));
      return schedule.success ? scheduleFieldErrors(schedule.data, c.var.deps.store.clock.now()) : [];
    }),
  );
  return app;
}
