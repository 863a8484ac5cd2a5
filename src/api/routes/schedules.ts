/** `POST /v1/schedules/preview`: the next occurrences of a schedule, under a calendar when given, without making a job. */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { type Calendar, type CalendarRoll, nextCalendarOccurrence, rollOccurrence } from '../../domain/calendar.ts';
import { nextOccurrence, normalizeSchedule, occurrences, type Schedule } from '../../domain/schedule.ts';
import { calendarsByKey } from '../../store/calendars.ts';
import type { AppEnv } from '../env.ts';
import { everyFieldHook } from '../every-field-hook.ts';
import { calendarMissing, fieldOf, scheduleFieldErrors } from '../job-input.ts';
import { validationError } from '../problems.ts';
import { CalendarRefSchema, ScheduleSchema } from '../schemas.ts';
import { problemResponses } from './common.ts';

const PreviewBodySchema = z.strictObject({
  schedule: ScheduleSchema,
  calendar: CalendarRefSchema.optional(),
  count: z.number().int().min(1).max(50).default(10),
});

const iso = (t: number): string => new Date(t).toISOString();

/** Most occurrences the schedule's calendar moved or skipped that a preview lists. */
const MAX_MOVES = 100;

/**
 * Where the calendar moved or skipped the schedule's occurrences up to `untilMs` (epoch ms): each occurrence after
 * `afterMs` that does not fire as it is, with where it fires (null: skipped), at most MAX_MOVES.
 */
function movesOf(s: Schedule, cal: Calendar, roll: CalendarRoll, afterMs: number, untilMs: number) {
  const moves: { occurrence: string; firesAt: string | null }[] = [];
  for (let t = nextOccurrence(s, afterMs); t !== null && t <= untilMs && moves.length < MAX_MOVES; t = nextOccurrence(s, t)) {
    const at = rollOccurrence(cal, roll, t);
    if (at !== t) moves.push({ occurrence: iso(t), firesAt: at === null ? null : iso(at) });
  }
  return moves;
}

export function scheduleRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/schedules/preview',
      summary: 'The next occurrences of a schedule (no job made)',
      description:
        'With `calendar`, the occurrences are where they fire under it, and `calendar` in the answer lists the occurrences ' +
        'it moved (`firesAt`) or skipped (`firesAt: null`) up to the last one shown.',
      request: {
        body: { required: true, content: { 'application/json': { schema: PreviewBodySchema } } },
      },
      responses: {
        200: {
          description: 'Occurrences, RFC 3339 UTC',
          content: {
            'application/json': {
              schema: z.object({
                occurrences: z.array(z.string()),
                calendar: z.array(z.object({ occurrence: z.string(), firesAt: z.string().nullable() })).optional(),
              }),
            },
          },
        },
        ...problemResponses(400, 401),
      },
    }),
    async (c) => {
      const { schedule, calendar, count } = c.req.valid('json');
      const now = c.var.deps.store.clock.now();
      const errors = scheduleFieldErrors(schedule, now);
      const cal = calendar ? (await calendarsByKey(c.var.deps.store.db, c.var.tenantId, [calendar.key])).get(calendar.key) : undefined;
      if (calendar && !cal) errors.push(calendarMissing(calendar.key));
      if (errors.length > 0) throw validationError(errors);
      const s = normalizeSchedule(schedule, now);
      if (!calendar || !cal) return c.json({ occurrences: occurrences(s, now - 1, count).map(iso) }, 200);
      const times: number[] = [];
      for (let t = nextCalendarOccurrence(s, cal, calendar.roll, now - 1); t !== null && times.length < count; ) {
        times.push(t);
        t = nextCalendarOccurrence(s, cal, calendar.roll, t);
      }
      const until = times.length > 0 ? times[times.length - 1]! : now;
      return c.json({ occurrences: times.map(iso), calendar: movesOf(s, cal, calendar.roll, now - 1, until) }, 200);
    },
    // A bad count and a schedule that never fires: one 400 naming both.
    everyFieldHook(PreviewBodySchema, async (raw, c) => {
      const schedule = ScheduleSchema.safeParse(fieldOf(raw, 'schedule'));
      return schedule.success ? scheduleFieldErrors(schedule.data, c.var.deps.store.clock.now()) : [];
    }),
  );
  return app;
}
