/**
 * `/v1/notification-endpoints` (API.md "Notification endpoints"): register, list and delete the endpoints where a
 * tenant hears of its jobs' failures, and read an endpoint's deliveries.
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { EVENT_TYPES, MAX_NOTIFICATION_ENDPOINTS } from '../../domain/events.ts';
import { isUuid } from '../../domain/ids.ts';
import {
  createNotificationEndpoint,
  deleteNotificationEndpoint,
  getNotificationEndpoint,
  listDeliveries,
  listNotificationEndpoints,
  type NotificationEndpointRow,
} from '../../store/notifications.ts';
import type { RunRow } from '../../store/runs.ts';
import { deliveryState } from '../../store/views.ts';
import type { AppEnv } from '../env.ts';
import { destinationIssue } from '../job-input.ts';
import { emptyBody } from '../json-guard.ts';
import { ApiError, validationError } from '../problems.ts';
import { PageQuery } from '../schemas.ts';
import { problemResponses } from './common.ts';

const EndpointInput = z
  .strictObject({
    url: z.string().min(1).max(2048),
    events: z
      .array(z.enum(EVENT_TYPES))
      .min(1)
      .max(EVENT_TYPES.length)
      .refine((e) => new Set(e).size === e.length, 'each event type once'),
    description: z.string().min(1).max(500).optional(),
  })
  .openapi('NotificationEndpointInput');

const EndpointSchema = z
  .object({
    endpointId: z.uuid(),
    url: z.string(),
    events: z.array(z.enum(EVENT_TYPES)),
    description: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi('NotificationEndpoint');

const DeliverySchema = z
  .object({
    deliveryId: z.uuid(),
    eventId: z.uuid(),
    type: z.enum(EVENT_TYPES),
    status: z.string(),
    attempts: z.number(),
    createdAt: z.string(),
    nextAttemptAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    responseStatus: z.number().nullable(),
    error: z.string().nullable(),
  })
  .openapi('NotificationDelivery');

const EndpointIdParam = z.object({ endpointId: z.string() });

function endpointView(e: NotificationEndpointRow) {
  return {
    endpointId: e.id,
    url: e.url,
    events: e.events as (typeof EVENT_TYPES)[number][],
    description: e.description,
    createdAt: e.createdAt.toISOString(),
  };
}

function deliveryView(r: RunRow) {
  return {
    deliveryId: r.id,
    eventId: r.eventId!,
    type: (r.payload as { type: (typeof EVENT_TYPES)[number] }).type,
    ...deliveryState(r),
  };
}

/** The path's endpoint of the caller's tenant. @throws ApiError not_found (also for another tenant's) */
async function findEndpoint(c: { req: { param(name: 'endpointId'): string }; var: AppEnv['Variables'] }): Promise<NotificationEndpointRow> {
  const id = c.req.param('endpointId');
  const found = isUuid(id) ? await getNotificationEndpoint(c.var.deps.store, c.var.tenantId, id) : null;
  if (!found) throw new ApiError('not_found', `no notification endpoint ${id}`);
  return found;
}

/** The `/v1/notification-endpoints` routes: register, list, delete, and an endpoint's deliveries. */
export function notificationRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/notification-endpoints',
      summary: `Register a notification endpoint (at most ${MAX_NOTIFICATION_ENDPOINTS} per tenant)`,
      description:
        'Each event of a subscribed type is POSTed to the URL, signed like a callback (Standard Webhooks headers with the ' +
        "tenant's signing secret, webhook-id = the event id, and Chime-Signature), at least once with backoff for 24 h.",
      request: { body: { required: true, content: { 'application/json': { schema: EndpointInput } } } },
      responses: {
        201: { description: 'Registered', content: { 'application/json': { schema: EndpointSchema } } },
        ...problemResponses(400, 401, 409),
      },
    }),
    async (c) => {
      const body = c.req.valid('json');
      const refused = await destinationIssue(body.url, c.var.deps);
      if (refused) throw validationError([{ path: 'url', message: refused }]);
      const row = await createNotificationEndpoint(c.var.deps.store, c.var.tenantId, {
        url: body.url,
        events: body.events,
        description: body.description ?? null,
      });
      return c.json(endpointView(row), 201);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/notification-endpoints',
      summary: "The tenant's notification endpoints",
      responses: {
        200: { description: 'Endpoints', content: { 'application/json': { schema: z.object({ endpoints: z.array(EndpointSchema) }) } } },
        ...problemResponses(401),
      },
    }),
    async (c) => c.json({ endpoints: (await listNotificationEndpoints(c.var.deps.store, c.var.tenantId)).map(endpointView) }, 200),
  );

  app.openapi(
    createRoute({
      method: 'delete',
      path: '/v1/notification-endpoints/{endpointId}',
      middleware: [emptyBody()] as const,
      summary: 'Delete a notification endpoint (its waiting deliveries are canceled)',
      request: { params: EndpointIdParam },
      responses: { 204: { description: 'Deleted' }, ...problemResponses(401, 404) },
    }),
    async (c) => {
      const e = await findEndpoint(c);
      await deleteNotificationEndpoint(c.var.deps.store, c.var.tenantId, e.id);
      return c.body(null, 204);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/notification-endpoints/{endpointId}/deliveries',
      summary: "An endpoint's recent deliveries, newest first, with their status and last error",
      request: { params: EndpointIdParam, query: z.object(PageQuery) },
      responses: {
        200: {
          description: 'A page of deliveries',
          content: { 'application/json': { schema: z.object({ deliveries: z.array(DeliverySchema), nextCursor: z.string().nullable() }) } },
        },
        ...problemResponses(400, 401, 404),
      },
    }),
    async (c) => {
      const e = await findEndpoint(c);
      const { items, nextCursor } = await listDeliveries(c.var.deps.store, e, c.req.valid('query'));
      return c.json({ deliveries: items.map(deliveryView), nextCursor }, 200);
    },
  );
  return app;
}
