/**
 * Operating tenants with the admin token (API.md "Access control and audit", "Operating tenants"):
 * `GET /v1/admin/tenants` (every tenant with its open jobs and quotas), `PATCH /v1/admin/tenants/:tenantId` (suspend,
 * resume, set quota overrides) and `DELETE /v1/admin/tenants/:tenantId` (the tenant and everything it owns).
 *
 * These routes take the admin token (CHIME_ADMIN_TOKEN), never an API key: they are mounted before the API key check
 * (src/api/app.ts) and are not in ROUTE_SCOPES. The token is checked by route middleware, before the request is
 * validated, so that a caller without it learns nothing from the answers (`401`, and `429` once its address has spent
 * its failed attempts, counted with `POST /v1/tenants`'s).
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { isUuid } from '../../domain/ids.ts';
import { effectiveQuotas, MAX_QUOTA, type QuotaDefaults, TENANT_STATUSES } from '../../domain/quotas.ts';
import { deleteTenant, listTenants, type TenantAdminView, updateTenant } from '../../store/tenants.ts';
import { type AppConfig, type AppEnv, withSource } from '../env.ts';
import { emptyBody } from '../json-guard.ts';
import { ApiError } from '../problems.ts';
import type { FailedAttempts } from '../rate-limit.ts';
import { PageQuery } from '../schemas.ts';
import { problemResponses } from './common.ts';
import { requireAdminToken } from './tenants.ts';

/** Where the admin routes live: the API key check leaves these paths alone. */
export const ADMIN_PREFIX = '/v1/admin/';

const QuotaValue = z.number().int().min(0).max(MAX_QUOTA);
/** The quotas in force: a positive whole number, or null for no limit. */
const QuotasSchema = z.object({
  maxJobs: QuotaValue.nullable(),
  requestsPerSecond: QuotaValue.nullable(),
  callbacksPerDay: QuotaValue.nullable(),
});

/**
 * A tenant as the operator sees it (`GET /v1/admin/tenants`): its status, open jobs, the quotas in force (`null`: no
 * limit) and its own overrides of the configured defaults.
 */
export const AdminTenantSchema = z
  .object({
    tenantId: z.string(),
    name: z.string(),
    createdAt: z.string(),
    status: z.enum(TENANT_STATUSES),
    /** Its jobs `active` and `paused`. */
    jobs: z.object({ active: z.number().int(), paused: z.number().int() }),
    /** The quotas in force: its overrides, else the configured defaults (null: no limit). */
    quotas: QuotasSchema,
    /** Only the quotas the operator set for this tenant (0: no limit). */
    quotaOverrides: z.object({
      maxJobs: QuotaValue.optional(),
      requestsPerSecond: QuotaValue.optional(),
      callbacksPerDay: QuotaValue.optional(),
    }),
  })
  .openapi('AdminTenant');

/**
 * The body of `PATCH /v1/admin/tenants/:tenantId`: each field optional; a quota set to a whole number overrides the
 * configured default for this tenant (0: no limit), set to null it follows the default again.
 */
const TenantPatchSchema = z.strictObject({
  status: z.enum(TENANT_STATUSES).optional(),
  quotas: z
    .strictObject({
      maxJobs: QuotaValue.nullable().optional(),
      requestsPerSecond: QuotaValue.nullable().optional(),
      callbacksPerDay: QuotaValue.nullable().optional(),
    })
    .optional(),
});

const TenantIdParam = z.object({ tenantId: z.string() });

/** The configured defaults of the quotas (config `limits`; absent: none). */
export function quotaDefaultsOf(config: Pick<AppConfig, 'limits'>): QuotaDefaults {
  const l = config.limits;
  return { maxJobs: l?.maxActiveJobs ?? 0, requestsPerSecond: l?.ratePerSecond ?? 0, callbacksPerDay: l?.callbacksPerDay ?? 0 };
}

function adminTenantView(t: TenantAdminView, defaults: QuotaDefaults): z.infer<typeof AdminTenantSchema> {
  return {
    tenantId: t.tenantId,
    name: t.name,
    createdAt: t.createdAt.toISOString(),
    status: t.status,
    jobs: t.jobs,
    quotas: effectiveQuotas(t.quotaOverrides, defaults),
    quotaOverrides: t.quotaOverrides,
  };
}

/**
 * The admin routes.
 * @param failures failed admin-token attempts per client address, shared with `POST /v1/tenants`
 */
export function adminTenantRoutes(failures: FailedAttempts): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  const adminOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
    requireAdminToken(c, failures, 'operating tenants');
    await next();
  };
  /** The tenant of `:tenantId`, or 404 (also for a malformed id: no tenant has it). */
  const tenantIdOf = (tenantId: string): string => {
    if (!isUuid(tenantId)) throw new ApiError('not_found', `no tenant ${tenantId}`);
    return tenantId;
  };

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/admin/tenants',
      middleware: [adminOnly] as const,
      summary: 'Every tenant, with its open jobs, status and quotas (admin token)',
      security: [{ bearer: [] }],
      request: { query: z.object(PageQuery) },
      responses: {
        200: {
          description: 'A page of tenants, oldest first',
          content: { 'application/json': { schema: z.object({ tenants: z.array(AdminTenantSchema), nextCursor: z.string().nullable() }) } },
        },
        ...problemResponses(400, 401, 429),
      },
    }),
    async (c) => {
      const { items, nextCursor } = await listTenants(c.var.deps.store, c.req.valid('query'));
      const defaults = quotaDefaultsOf(c.var.deps.config);
      return c.json({ tenants: items.map((t) => adminTenantView(t, defaults)), nextCursor }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'patch',
      path: '/v1/admin/tenants/{tenantId}',
      middleware: [adminOnly] as const,
      summary: 'Suspend or resume a tenant, or set its quotas (admin token)',
      description:
        "A suspended tenant's API keys are answered 403 tenant_suspended and its due runs are held (not sent, not lost) " +
        'until it is resumed. A quota set to a number overrides the configured default for this tenant (0: no limit); ' +
        'set to null, the default applies again.',
      security: [{ bearer: [] }],
      request: {
        params: TenantIdParam,
        body: { required: true, content: { 'application/json': { schema: TenantPatchSchema } } },
      },
      responses: {
        200: { description: 'The tenant after the change', content: { 'application/json': { schema: AdminTenantSchema } } },
        ...problemResponses(400, 401, 404, 429),
      },
    }),
    async (c) => {
      const tenantId = tenantIdOf(c.req.valid('param').tenantId);
      const body = c.req.valid('json');
      // The operator's change: the store records its audit entries as made by the admin (tenants.ts `updateTenant`).
      const { store } = withSource(c.var.deps, { actor: { type: 'admin' }, requestId: c.var.requestId, traceParent: c.var.traceParent });
      const t = await updateTenant(store, tenantId, { status: body.status, quotas: body.quotas });
      if (!t) throw new ApiError('not_found', `no tenant ${tenantId}`);
      return c.json(adminTenantView(t, quotaDefaultsOf(c.var.deps.config)), 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'delete',
      path: '/v1/admin/tenants/{tenantId}',
      middleware: [adminOnly, emptyBody()] as const,
      summary: 'Delete a tenant and everything it owns (admin token)',
      security: [{ bearer: [] }],
      request: { params: TenantIdParam },
      responses: { 204: { description: 'Deleted' }, ...problemResponses(401, 404, 429) },
    }),
    async (c) => {
      const tenantId = tenantIdOf(c.req.valid('param').tenantId);
      if (!(await deleteTenant(c.var.deps.store, tenantId))) throw new ApiError('not_found', `no tenant ${tenantId}`);
      return c.body(null, 204);
    },
  );
  return app;
}
