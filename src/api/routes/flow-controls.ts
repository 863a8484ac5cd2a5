/**
 * `/v1/flow-controls` (API.md "Destination control"): a tenant's named limits on the requests of the jobs that name
 * them (`flowControlKey`), held across every dispatcher together. Create or replace, read with their state, list,
 * delete (refused while open jobs name it).
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { FLOW_LIMITS } from '../../domain/flow-control.ts';
import { deleteFlowControl, FlowControlInUseError, getFlowControl, listFlowControls, putFlowControl } from '../../store/flow-controls.ts';
import type { AppEnv } from '../env.ts';
import { emptyBody } from '../json-guard.ts';
import { ApiError, validationError } from '../problems.ts';
import { problemResponses } from './common.ts';

const { rateLimit, periodMs, parallelism } = FLOW_LIMITS;

const RateSchema = z
  .strictObject({
    limit: z.number().int().min(rateLimit.min).max(rateLimit.max),
    periodMs: z.number().int().min(periodMs.min).max(periodMs.max),
  })
  .openapi('FlowRate', { description: 'At most `limit` requests started in any window of `periodMs`' });

const FlowControlInput = z
  .strictObject({
    rate: RateSchema.optional(),
    parallelism: z.number().int().min(parallelism.min).max(parallelism.max).optional(),
    paused: z.boolean().optional(),
  })
  .openapi('FlowControlInput', { description: 'Replaces the settings: what is absent is none (paused: false)' });

export const FlowControlSchema = z
  .object({
    key: z.string(),
    rate: RateSchema.nullable(),
    parallelism: z.number().nullable(),
    paused: z.boolean(),
    inFlight: z.number().openapi({ description: 'Runs of its jobs holding a slot now (in flight, or about to start)' }),
    waiting: z.number().openapi({ description: 'Runs of its jobs that are due and held back' }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('FlowControl');

const KeyParam = z.object({ key: z.string() });

/** The path's key, checked. @throws ApiError validation naming `key` */
function keyOf(key: string): string {
  if (!FLOW_LIMITS.keyPattern.test(key)) {
    throw validationError([{ path: 'key', message: 'must be 1 to 100 of A-Z a-z 0-9 . _ : -' }]);
  }
  return key;
}

/** The `/v1/flow-controls` routes. */
export function flowControlRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: 'put',
      path: '/v1/flow-controls/{key}',
      summary: 'Create or replace a flow control',
      description:
        'Limits the requests of every job whose flowControlKey names it, across all dispatchers together: at most ' +
        '`parallelism` in flight, at most `rate.limit` started in any window of `rate.periodMs`. Runs held back stay due ' +
        'and start in due order as capacity frees; a paused flow control holds all its runs. Retries count.',
      request: { params: KeyParam, body: { required: true, content: { 'application/json': { schema: FlowControlInput } } } },
      responses: {
        200: { description: 'Replaced', content: { 'application/json': { schema: FlowControlSchema } } },
        201: { description: 'Created', content: { 'application/json': { schema: FlowControlSchema } } },
        ...problemResponses(400, 401),
      },
    }),
    async (c) => {
      const key = keyOf(c.req.valid('param').key);
      const body = c.req.valid('json');
      const { flowControl, created } = await putFlowControl(c.var.deps.store, c.var.tenantId, key, {
        rate: body.rate ?? null,
        parallelism: body.parallelism ?? null,
        paused: body.paused ?? false,
      });
      return c.json(flowControl, created ? 201 : 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/flow-controls',
      summary: "The tenant's flow controls, by key, with their state",
      request: {
        query: z.object({
          limit: z.coerce.number().int().min(1).max(100).default(50),
          cursor: z.string().optional().openapi({ description: 'The last key of the previous page' }),
        }),
      },
      responses: {
        200: {
          description: 'A page of flow controls',
          content: {
            'application/json': { schema: z.object({ flowControls: z.array(FlowControlSchema), nextCursor: z.string().nullable() }) },
          },
        },
        ...problemResponses(400, 401),
      },
    }),
    async (c) => {
      const { items, nextCursor } = await listFlowControls(c.var.deps.store, c.var.tenantId, c.req.valid('query'));
      return c.json({ flowControls: items, nextCursor }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/flow-controls/{key}',
      summary: 'A flow control with its state (`inFlight`, `waiting`)',
      request: { params: KeyParam },
      responses: {
        200: { description: 'The flow control', content: { 'application/json': { schema: FlowControlSchema } } },
        ...problemResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const key = keyOf(c.req.valid('param').key);
      const found = await getFlowControl(c.var.deps.store, c.var.tenantId, key);
      if (!found) throw new ApiError('not_found', `no flow control ${key}`);
      return c.json(found, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'delete',
      path: '/v1/flow-controls/{key}',
      middleware: [emptyBody()] as const,
      summary: 'Delete a flow control (refused with 409 while open jobs name it)',
      request: { params: KeyParam },
      responses: { 204: { description: 'Deleted' }, ...problemResponses(400, 401, 404, 409) },
    }),
    async (c) => {
      const key = keyOf(c.req.valid('param').key);
      try {
        if (!(await deleteFlowControl(c.var.deps.store, c.var.tenantId, key))) throw new ApiError('not_found', `no flow control ${key}`);
      } catch (err) {
        if (err instanceof FlowControlInUseError) throw new ApiError('conflict', err.message);
        throw err;
      }
      return c.body(null, 204);
    },
  );
  return app;
}
