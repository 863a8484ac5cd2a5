/**
 * `/v1/calendars` (API.md "Richer schedules"): a tenant's business days (weekend days and holidays in the calendar's
 * time zone), which jobs name by `calendar.key` to skip or move occurrences on other days. Create or replace (which
 * re-plans the jobs using it), read, list, delete (refused while open jobs use it).
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { DEFAULT_WEEKEND_DAYS, MAX_HOLIDAYS } from '../../domain/calendar.ts';
import { isTimeZone } from '../../domain/schedule.ts';
import { CalendarInUseError, deleteCalendar, getCalendar, listCalendars, putCalendar } from '../../store/calendars.ts';
import type { AppEnv } from '../env.ts';
import { everyFieldHook } from '../every-field-hook.ts';
import { emptyBody } from '../json-guard.ts';
import { ApiError, type FieldError, validationError } from '../problems.ts';
import { CalendarKeySchema } from '../schemas.ts';
import { problemResponses } from './common.ts';

/** A local date, `YYYY-MM-DD`, that exists (no 2026-02-30). */
const LocalDateSchema = z.string().refine((d) => {
  const t = /^\d{4}-\d{2}-\d{2}$/.test(d) ? Date.parse(`${d}T00:00:00Z`) : Number.NaN;
  return Number.isFinite(t) && new Date(t).toISOString().slice(0, 10) === d;
}, 'a local date that exists, YYYY-MM-DD');

const CalendarInput = z
  .strictObject({
    name: z.string().min(1).max(200).optional(),
    timezone: z.string().min(1).max(64),
    weekendDays: z
      .array(z.number().int().min(0).max(6))
      .max(6)
      .refine((d) => new Set(d).size === d.length, 'each day once')
      .optional()
      .openapi({ description: 'Days of the week that are not business days, 0 = Sunday … 6 = Saturday; default [0, 6]' }),
    holidays: z
      .array(LocalDateSchema)
      .max(MAX_HOLIDAYS)
      .openapi({ description: `Local dates (YYYY-MM-DD), at most ${MAX_HOLIDAYS}` }),
  })
  .openapi('CalendarInput', { description: 'Replaces the calendar: what is absent is the default (no name, weekend [0, 6])' });

/** A calendar as the API shows it (`GET /v1/calendars/:key`, the list, `PUT`'s answer): `jobs` counts the open jobs using it. */
export const CalendarSchema = z
  .object({
    key: z.string(),
    name: z.string().nullable(),
    timezone: z.string(),
    weekendDays: z.array(z.number()),
    holidays: z.array(z.string()),
    jobs: z.number().openapi({ description: 'Open jobs (active or paused) that use it' }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('Calendar');

const KeyParam = z.object({ key: z.string() });

/** The path's key, checked. @throws ApiError validation naming `key` */
function keyOf(key: string): string {
  const r = CalendarKeySchema.safeParse(key);
  if (!r.success) throw validationError([{ path: 'key', message: r.error.issues[0]?.message ?? 'invalid key' }]);
  return key;
}

/** What the schema cannot check: the time zone exists. */
function calendarRuleErrors(raw: unknown): FieldError[] {
  const tz = raw !== null && typeof raw === 'object' ? (raw as { timezone?: unknown }).timezone : undefined;
  return typeof tz === 'string' && tz.length > 0 && !isTimeZone(tz)
    ? [{ path: 'timezone', message: `unknown IANA time zone "${tz}"` }]
    : [];
}

/** The `/v1/calendars` routes. */
export function calendarRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: 'put',
      path: '/v1/calendars/{key}',
      summary: 'Create or replace a calendar',
      description:
        "An occurrence of a job naming this calendar that falls on a weekend day or holiday (in the calendar's time zone) " +
        'is skipped or moved to the next or previous business day, as the job says. A change re-plans the pending run of ' +
        'every active job that uses it.',
      request: { params: KeyParam, body: { required: true, content: { 'application/json': { schema: CalendarInput } } } },
      responses: {
        200: { description: 'Replaced', content: { 'application/json': { schema: CalendarSchema } } },
        201: { description: 'Created', content: { 'application/json': { schema: CalendarSchema } } },
        ...problemResponses(400, 401),
      },
    }),
    async (c) => {
      const key = keyOf(c.req.valid('param').key);
      const body = c.req.valid('json');
      const errors = calendarRuleErrors(body);
      if (errors.length > 0) throw validationError(errors);
      const { calendar, created } = await putCalendar(c.var.deps.store, c.var.tenantId, key, {
        name: body.name ?? null,
        timezone: body.timezone,
        weekendDays: [...new Set(body.weekendDays ?? DEFAULT_WEEKEND_DAYS)].sort((a, b) => a - b),
        holidays: [...new Set(body.holidays)].sort(),
      });
      return c.json(calendar, created ? 201 : 200);
    },
    // A bad date and an unknown zone: one 400 naming both.
    everyFieldHook(CalendarInput, async (raw) => calendarRuleErrors(raw)),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/calendars',
      summary: "The tenant's calendars, by key",
      request: {
        query: z.object({
          limit: z.coerce.number().int().min(1).max(100).default(50),
          cursor: z.string().optional().openapi({ description: 'The last key of the previous page' }),
        }),
      },
      responses: {
        200: {
          description: 'A page of calendars',
          content: { 'application/json': { schema: z.object({ calendars: z.array(CalendarSchema), nextCursor: z.string().nullable() }) } },
        },
        ...problemResponses(400, 401),
      },
    }),
    async (c) => {
      const { items, nextCursor } = await listCalendars(c.var.deps.store, c.var.tenantId, c.req.valid('query'));
      return c.json({ calendars: items, nextCursor }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/calendars/{key}',
      summary: 'A calendar',
      request: { params: KeyParam },
      responses: {
        200: { description: 'The calendar', content: { 'application/json': { schema: CalendarSchema } } },
        ...problemResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const key = keyOf(c.req.valid('param').key);
      const found = await getCalendar(c.var.deps.store, c.var.tenantId, key);
      if (!found) throw new ApiError('not_found', `no calendar ${key}`);
      return c.json(found, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'delete',
      path: '/v1/calendars/{key}',
      middleware: [emptyBody()] as const,
      summary: 'Delete a calendar (refused with 409 while open jobs use it)',
      request: { params: KeyParam },
      responses: { 204: { description: 'Deleted' }, ...problemResponses(400, 401, 404, 409) },
    }),
    async (c) => {
      const key = keyOf(c.req.valid('param').key);
      try {
        if (!(await deleteCalendar(c.var.deps.store, c.var.tenantId, key))) throw new ApiError('not_found', `no calendar ${key}`);
      } catch (err) {
        if (err instanceof CalendarInUseError) throw new ApiError('conflict', err.message);
        throw err;
      }
      return c.body(null, 204);
    },
  );
  return app;
}
