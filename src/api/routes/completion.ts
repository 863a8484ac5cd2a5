/**
 * The receiver's routes of async completion (API.md "Long-running jobs: completion reported by the receiver"):
 * `POST /v1/runs/:runId/completion` (the end of an attempt) and `POST /v1/runs/:runId/heartbeat`. Authenticated by the
 * attempt's completion token alone (`Authorization: Bearer <Chime-Completion-Token>`), never an API key: the API-key
 * middleware lets these paths through (`isCompletionPath`, src/api/app.ts), and no tenant rate limit applies (a
 * forged token is refused before any query: src/store/completion-token.ts). No audit entry: a report is the
 * receiver's, not a tenant's change.
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { jsonBytes, MAX_OUTPUT_BYTES, MAX_PROGRESS_BYTES, REPORTED_STATUSES } from '../../domain/completion.ts';
import { isUuid } from '../../domain/ids.ts';
import { type CompletionRefusal, recordHeartbeat, reportCompletion } from '../../store/completion.ts';
import type { AppEnv } from '../env.ts';
import { ApiError } from '../problems.ts';
import { RunSchema } from '../schemas.ts';
import { runView } from '../views.ts';
import { problemResponses } from './common.ts';
import { bearer } from './tenants.ts';

/** The paths of the completion routes: the API-key check skips them (their token is their credential). */
const COMPLETION_PATH = /^\/v1\/runs\/[^/]+\/(completion|heartbeat)\/?$/;

/** Whether `path` is one of the completion routes' (`/v1/runs/:runId/completion`, `/v1/runs/:runId/heartbeat`). */
export function isCompletionPath(path: string): boolean {
  return COMPLETION_PATH.test(path);
}

const ReportSchema = z
  .strictObject({
    status: z.enum(REPORTED_STATUSES),
    output: z
      .unknown()
      .refine((v) => v === undefined || jsonBytes(v) <= MAX_OUTPUT_BYTES, `at most ${MAX_OUTPUT_BYTES} bytes as JSON`)
      .optional(),
    error: z.string().max(1000).optional(),
  })
  .openapi('CompletionReport');

const HeartbeatSchema = z
  .strictObject({
    progress: z
      .unknown()
      .refine((v) => v === undefined || jsonBytes(v) <= MAX_PROGRESS_BYTES, `at most ${MAX_PROGRESS_BYTES} bytes as JSON`)
      .optional(),
  })
  .openapi('Heartbeat');

const RunIdParam = z.object({ runId: z.string() });
const TOKEN_AUTH = [{ completionToken: [] }];

/** The refusal as its problem: 401 (with `WWW-Authenticate`), 404 or 409. */
function refusal(r: CompletionRefusal): ApiError {
  if (r.refused === 'unauthorized') return new ApiError('unauthorized', r.detail, undefined, { 'www-authenticate': 'Bearer' });
  return new ApiError(r.refused === 'not_found' ? 'not_found' : 'conflict', r.detail);
}

/** The token of the request, or a 401 when it sends none. */
function tokenOf(header: string | undefined): string {
  const token = bearer(header);
  if (!token) {
    throw new ApiError('unauthorized', "send the attempt's Chime-Completion-Token as Authorization: Bearer <token>", undefined, {
      'www-authenticate': 'Bearer',
    });
  }
  return token;
}

/**
 * `POST /v1/runs/:runId/completion` and `/heartbeat` (API.md "Long-running jobs"): authenticated by the attempt's
 * completion token alone (401 for a bad or stale one, 409 for an attempt no longer awaited), mounted outside the API-key
 * check.
 */
export function completionRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openAPIRegistry.registerComponent('securitySchemes', 'completionToken', {
    type: 'http',
    scheme: 'bearer',
    description: "An async job's attempt's Chime-Completion-Token (valid for that attempt only); no API key",
  });

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/runs/{runId}/completion',
      summary: "Report the end of an async job's attempt (the receiver, with the attempt's completion token)",
      description:
        "`succeeded` ends the run `succeeded`; `failed` fails the attempt with `error` and the retry policy decides. `output` (≤ 16 KiB as JSON) becomes the run's `output`. A second report of the attempt → 409 (the first stands); a wrong or stale token → 401.",
      security: TOKEN_AUTH,
      request: { params: RunIdParam, body: { required: true, content: { 'application/json': { schema: ReportSchema } } } },
      responses: {
        200: { description: 'The run, as it now is', content: { 'application/json': { schema: RunSchema } } },
        ...problemResponses(400, 401, 404, 409),
      },
    }),
    async (c) => {
      const token = tokenOf(c.req.header('authorization'));
      const { runId } = c.req.valid('param');
      if (!isUuid(runId)) throw refusal({ refused: 'unauthorized', detail: 'the completion token is not valid for this run' });
      const body = c.req.valid('json');
      const r = await reportCompletion(c.var.deps.store, runId, token, {
        status: body.status,
        ...(body.output === undefined ? {} : { output: body.output }),
        ...(body.error === undefined ? {} : { error: body.error }),
      });
      if ('refused' in r) throw refusal(r);
      return c.json(runView(r), 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/runs/{runId}/heartbeat',
      summary: "Tell Chime an async job's attempt is still at work (the receiver, with the attempt's completion token)",
      description:
        'Postpones the heartbeat deadline (now + `completion.heartbeatTimeoutMs`); `progress` (≤ 1 KiB as JSON) is shown on the run. A wrong or stale token → 401; an attempt no longer awaited → 409.',
      security: TOKEN_AUTH,
      request: { params: RunIdParam, body: { required: false, content: { 'application/json': { schema: HeartbeatSchema } } } },
      responses: {
        200: {
          description:
            'The deadlines: the report is due by `completionDeadline`, the next heartbeat by `heartbeatDeadline` (null: none needed)',
          content: {
            'application/json': { schema: z.object({ completionDeadline: z.string(), heartbeatDeadline: z.string().nullable() }) },
          },
        },
        ...problemResponses(400, 401, 404, 409),
      },
    }),
    async (c) => {
      const token = tokenOf(c.req.header('authorization'));
      const { runId } = c.req.valid('param');
      if (!isUuid(runId)) throw refusal({ refused: 'unauthorized', detail: 'the completion token is not valid for this run' });
      const body = (c.req.valid('json') as z.infer<typeof HeartbeatSchema> | undefined) ?? {};
      const r = await recordHeartbeat(c.var.deps.store, runId, token, body.progress);
      if ('refused' in r) throw refusal(r);
      return c.json(
        {
          completionDeadline: new Date(r.completionDeadlineMs).toISOString(),
          heartbeatDeadline: r.heartbeatDeadlineMs === null ? null : new Date(r.heartbeatDeadlineMs).toISOString(),
        },
        200,
      );
    },
  );
  return app;
}
