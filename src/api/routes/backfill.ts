/**
 * `POST /v1/jobs/:jobId/backfill` (API.md "Richer schedules"): runs for a job's past occurrences in [from, to) that have
 * none yet, oldest first, at most `limit` per call (src/store/backfill.ts).
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { DEFAULT_BACKFILL_LIMIT, MAX_BACKFILL_LIMIT, MAX_BACKFILL_OCCURRENCES } from '../../domain/backfill.ts';
import { isUuid } from '../../domain/ids.ts';
import { BackfillRangeError, backfillJob } from '../../store/backfill.ts';
import type { AppEnv } from '../env.ts';
import { everyFieldHook } from '../every-field-hook.ts';
import { ApiError, type FieldError, validationError } from '../problems.ts';
import { InstantSchema } from '../schemas.ts';
import { problemResponses } from './common.ts';

const BackfillInput = z
  .strictObject({
    from: InstantSchema.openapi({ description: 'The first instant of the range (inclusive)' }),
    to: InstantSchema.openapi({ description: 'The end of the range (exclusive), not after now' }),
    limit: z
      .number()
      .int()
      .min(1)
      .max(MAX_BACKFILL_LIMIT)
      .optional()
      .openapi({ description: `Most runs this call creates (default ${DEFAULT_BACKFILL_LIMIT})` }),
  })
  .openapi('BackfillInput');

const BackfillResultSchema = z
  .object({
    created: z.number().openapi({ description: 'Runs created by this call' }),
    runIds: z.array(z.uuid()).openapi({ description: 'Their ids, oldest occurrence first' }),
    remaining: z.number().openapi({ description: 'Occurrences of the range still without a run: call again for them' }),
  })
  .openapi('BackfillResult');

/** The range's rules beyond the schema, for the fields that pass it: from < to <= now. */
function rangeErrors(raw: unknown, nowMs: number): FieldError[] {
  const body = raw !== null && typeof raw === 'object' ? (raw as { from?: unknown; to?: unknown }) : {};
  const at = (v: unknown) => (InstantSchema.safeParse(v).success ? Date.parse(v as string) : null);
  const from = at(body.from);
  const to = at(body.to);
  if (to === null) return [];
  if (from !== null && from >= to) return [{ path: 'to', message: 'must be after from' }];
  if (to > nowMs) return [{ path: 'to', message: 'must not be after now (a backfill is of the past)' }];
  return [];
}

/** The backfill route. */
export function backfillRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/jobs/{jobId}/backfill',
      summary: "Runs for a job's past occurrences that have none",
      description:
        'A run (trigger `backfill`, `scheduledFor` the occurrence) for each occurrence of the job in [from, to), as its ' +
        'calendar makes it fire, that has no run yet, oldest first, at most `limit` per call: a second call for the same ' +
        "range creates nothing. Sent now, under the job's overlap policy: with `skip` or `buffer-one` one after another. " +
        `A range of more than ${MAX_BACKFILL_OCCURRENCES} occurrences is refused.`,
      request: {
        params: z.object({ jobId: z.string() }),
        body: { required: true, content: { 'application/json': { schema: BackfillInput } } },
      },
      responses: {
        202: { description: 'The runs created', content: { 'application/json': { schema: BackfillResultSchema } } },
        ...problemResponses(400, 401, 404, 409),
      },
    }),
    async (c) => {
      const { store } = c.var.deps;
      const { jobId } = c.req.valid('param');
      const body = c.req.valid('json');
      const errors = rangeErrors(body, store.clock.now());
      if (errors.length > 0) throw validationError(errors);
      const range = { fromMs: Date.parse(body.from), toMs: Date.parse(body.to), limit: body.limit ?? DEFAULT_BACKFILL_LIMIT };
      try {
        const result = isUuid(jobId) ? await backfillJob(store, c.var.tenantId, jobId, range) : null;
        if (!result) throw new ApiError('not_found', `no job ${jobId}`);
        return c.json(result, 202);
      } catch (err) {
        if (err instanceof BackfillRangeError) throw validationError([{ path: 'to', message: err.message }]);
        throw err;
      }
    },
    // A malformed `from` and a `to` in the future: one 400 naming both.
    everyFieldHook(BackfillInput, async (raw, c) => rangeErrors(raw, c.var.deps.store.clock.now())),
  );
  return app;
}
