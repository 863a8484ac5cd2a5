/**
 * Bulk actions (API.md "Tenant operations"): `DELETE /v1/dead-letters/:runId` (dismiss), `POST /v1/dead-letters/replay`
 * (replay many, 1,000 per call) and `POST /v1/jobs/bulk` (pause, resume or cancel up to 10,000 jobs by filter, or
 * `config.maxBulkJobs`). Each is one transaction in store/bulk.ts.
 *
 * Routing: `POST /v1/dead-letters/replay` and `DELETE /v1/dead-letters/{runId}` differ by method, so `replay` is never
 * taken for a run id: `DELETE /v1/dead-letters/replay` is a 404 (not a UUID), `POST /v1/dead-letters/<id>` a 405.
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { isUuid } from '../../domain/ids.ts';
import { JOB_STATUSES } from '../../domain/states.ts';
import { bulkJobAction, dismissDeadLetter, MAX_BULK_JOBS, MAX_REPLAY_PER_CALL, replayDeadLetters } from '../../store/bulk.ts';
import type { JobFilter } from '../../store/job-filter.ts';
import type { AppEnv } from '../env.ts';
import { emptyBody } from '../json-guard.ts';
import { ApiError, validationError } from '../problems.ts';
import { InstantSchema, MAX_METADATA_PAIRS } from '../schemas.ts';
import { problemResponses } from './common.ts';

/** Most job ids one bulk filter may list (its body stays under the 64 KiB limit). */
export const MAX_BULK_JOB_IDS = 1_000;

const ReplayBodySchema = z
  .strictObject({
    runIds: z.array(z.uuid()).min(1).max(MAX_REPLAY_PER_CALL).optional(),
    jobId: z.uuid().optional(),
    since: InstantSchema.optional().openapi({ description: 'dead letters scheduled at or after this instant' }),
    until: InstantSchema.optional().openapi({ description: 'dead letters scheduled before this instant' }),
  })
  .openapi('DeadLetterReplay');

const ReplayResultSchema = z
  .object({
    replayed: z.number().int(),
    runIds: z.array(z.uuid()).openapi({ description: 'the new runs, in the order of their dead letters (oldest first)' }),
    remaining: z.number().int().openapi({ description: 'matching dead letters left for the next call' }),
  })
  .openapi('DeadLetterReplayResult');

const JobFilterSchema = z
  .strictObject({
    jobIds: z.array(z.uuid()).min(1).max(MAX_BULK_JOB_IDS).optional(),
    status: z.enum(JOB_STATUSES).optional(),
    q: z.string().max(200).optional().openapi({ description: 'case-insensitive substring of the name or key' }),
    metadata: z
      .record(z.string().min(1).max(64), z.string().max(512))
      .refine((m) => Object.keys(m).length <= MAX_METADATA_PAIRS, `at most ${MAX_METADATA_PAIRS} pairs`)
      .optional()
      .openapi({ description: 'pairs the job must all hold' }),
  })
  .openapi('JobFilter');

const BulkJobsBodySchema = z
  .strictObject({ action: z.enum(['pause', 'resume', 'cancel']), filter: JobFilterSchema })
  .openapi('BulkJobAction');

/** The bulk routes: dismiss a dead letter, replay dead letters, and pause/resume/cancel jobs by filter. */
export function bulkRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: 'delete',
      path: '/v1/dead-letters/{runId}',
      middleware: [emptyBody()] as const,
      summary: 'Dismiss a dead letter: no longer listed or replayed in bulk; the run and its attempts are kept',
      request: { params: z.object({ runId: z.string() }) },
      responses: { 204: { description: 'Dismissed: the run now has dismissedAt' }, ...problemResponses(401, 404) },
    }),
    async (c) => {
      const { runId } = c.req.valid('param');
      const dismissed = isUuid(runId) && (await dismissDeadLetter(c.var.deps.store, c.var.tenantId, runId));
      if (!dismissed) throw new ApiError('not_found', `no dead letter ${runId}`);
      return c.body(null, 204);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/dead-letters/replay',
      summary: `Replay up to ${MAX_REPLAY_PER_CALL} dead letters, oldest first`,
      description:
        `Each matching dead letter gets a new run of its job due now (trigger \`replay\`, as \`POST /v1/runs/:runId/replay\`) and is ` +
        `dismissed, so that the next call goes on with the rest: call again while \`remaining\` is above 0. All given fields must ` +
        `match; an empty body (or \`{}\`) means every dead letter of the tenant. \`since\` (inclusive) and \`until\` (exclusive) ` +
        `bound \`scheduledFor\`. Dead letters of canceled jobs are not matched (a canceled job takes no new run): they stay ` +
        `listed until dismissed. One transaction per call.`,
      request: { body: { required: false, content: { 'application/json': { schema: ReplayBodySchema } } } },
      responses: {
        202: { description: 'Replayed', content: { 'application/json': { schema: ReplayResultSchema } } },
        ...problemResponses(400, 401),
      },
    }),
    async (c) => {
      const body = c.req.valid('json') ?? {};
      const result = await replayDeadLetters(c.var.deps.store, c.var.tenantId, {
        runIds: body.runIds,
        jobId: body.jobId,
        since: body.since === undefined ? undefined : new Date(body.since),
        until: body.until === undefined ? undefined : new Date(body.until),
      });
      return c.json(result, 202);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/jobs/bulk',
      summary: `Pause, resume or cancel up to ${MAX_BULK_JOBS} jobs matching a filter`,
      description:
        'Each matching job is changed as `PATCH /v1/jobs/:jobId {"paused": true|false}` or `DELETE /v1/jobs/:jobId` would ' +
        'change it; jobs the action does not apply to (pausing a paused job, resuming an active one, canceling a canceled ' +
        'one) are matched but not changed. The filter must name something (`jobIds`, `status`, a non-empty `q` or ' +
        `\`metadata\`); more than ${MAX_BULK_JOBS} matching jobs is a 400 and nothing changes. One transaction.`,
      request: { body: { required: true, content: { 'application/json': { schema: BulkJobsBodySchema } } } },
      responses: {
        200: {
          description: 'Done',
          content: {
            'application/json': {
              schema: z.object({ matched: z.number().int(), changed: z.number().int() }).openapi('BulkJobActionResult'),
            },
          },
        },
        ...problemResponses(400, 401),
      },
    }),
    async (c) => {
      const { action, filter: f } = c.req.valid('json');
      // Empty parts restrict nothing (as `?q=` on the list); a filter with nothing left would mean every job.
      const filter: JobFilter = {
        ...(f.jobIds ? { jobIds: f.jobIds } : {}),
        ...(f.status ? { status: f.status } : {}),
        ...(f.q ? { q: f.q } : {}),
        ...(f.metadata && Object.keys(f.metadata).length > 0 ? { metadata: f.metadata } : {}),
      };
      if (Object.keys(filter).length === 0) {
        throw validationError([
          {
            path: 'filter',
            message: 'name at least one of jobIds, status, q, metadata (non-empty): an empty filter would match every job',
          },
        ]);
      }
      const maxJobs = c.var.deps.config.maxBulkJobs ?? MAX_BULK_JOBS;
      return c.json(await bulkJobAction(c.var.deps.store, c.var.tenantId, action, filter, { maxJobs }), 200);
    },
  );
  return app;
}
