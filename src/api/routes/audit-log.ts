/** `GET /v1/audit-log`: the tenant's audit entries, newest first (API.md "Access control and audit"). */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { AUDIT_ACTIONS } from '../../domain/audit.ts';
import { type AuditRow, listAuditLog } from '../../store/audit-log.ts';
import type { AppEnv } from '../env.ts';
import { InstantSchema, PageQuery } from '../schemas.ts';
import { problemResponses } from './common.ts';

const AuditLogQuery = z.object({
  action: z.enum(AUDIT_ACTIONS).optional(),
  keyId: z.uuid().optional(),
  since: InstantSchema.optional(),
  until: InstantSchema.optional(),
  ...PageQuery,
});

const ActorSchema = z.union([
  z.object({ type: z.literal('api_key'), keyId: z.string(), prefix: z.string() }),
  z.object({ type: z.literal('admin') }),
  z.object({ type: z.literal('system'), reason: z.string() }),
]);

/** One audit entry as `GET /v1/audit-log` lists it (API.md "Access control and audit"); `at` RFC 3339 UTC with ms. */
export const AuditEntrySchema = z
  .object({
    entryId: z.string(),
    at: z.string(),
    actor: ActorSchema,
    action: z.enum(AUDIT_ACTIONS),
    target: z.object({ type: z.string(), id: z.string() }),
    requestId: z.string().nullable(),
    changes: z.array(z.string()).optional().openapi({ description: 'The names of the fields an update changed, never their values' }),
  })
  .openapi('AuditEntry');

/** An audit row as the API shows it (`AuditEntry`). */
export function auditEntryView(r: AuditRow): z.infer<typeof AuditEntrySchema> {
  const actor =
    r.actorType === 'api_key'
      ? { type: 'api_key' as const, keyId: r.keyId ?? '', prefix: r.keyPrefix ?? '' }
      : r.actorType === 'system'
        ? { type: 'system' as const, reason: r.reason ?? '' }
        : { type: 'admin' as const };
  return {
    entryId: r.id,
    at: r.at.toISOString(),
    actor,
    action: r.action as z.infer<typeof AuditEntrySchema>['action'],
    target: { type: r.targetType, id: r.targetId },
    requestId: r.requestId,
    ...(r.changes ? { changes: r.changes } : {}),
  };
}

/** `GET /v1/audit-log` (scope `audit:read`): the calling tenant's entries, newest first, filtered and paged. */
export function auditLogRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/audit-log',
      summary: 'Who changed what: the audit log, newest first',
      description:
        'One entry per change, written in the transaction of the change. `since` (inclusive) and `until` (exclusive) bound `at`; reads are not audited.',
      request: { query: AuditLogQuery },
      responses: {
        200: {
          description: 'A page of entries',
          content: { 'application/json': { schema: z.object({ entries: z.array(AuditEntrySchema), nextCursor: z.string().nullable() }) } },
        },
        ...problemResponses(400, 401, 403),
      },
    }),
    async (c) => {
      const { since, until, ...rest } = c.req.valid('query');
      const { items, nextCursor } = await listAuditLog(c.var.deps.store, c.var.tenantId, {
        ...rest,
        since: since === undefined ? undefined : new Date(since),
        until: until === undefined ? undefined : new Date(until),
      });
      return c.json({ entries: items.map(auditEntryView), nextCursor }, 200);
    },
  );
  return app;
}
