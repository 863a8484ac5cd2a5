/**
 * Tenants and their credentials: `POST /v1/tenants` (admin token, or open signup), `GET /v1/tenant`,
 * `/v1/api-keys`, `POST /v1/signing-secrets/rotate`.
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { AuditActor } from '../../domain/audit.ts';
import { isUuid } from '../../domain/ids.ts';
import { ALL_SCOPES, SCOPES, scopesBeyond } from '../../domain/scopes.ts';
import { createApiKey, listApiKeys, revokeApiKey } from '../../store/api-keys.ts';
import { timingSafeEqualStrings } from '../../store/credentials.ts';
import { rotateSigningSecret } from '../../store/signing-secrets.ts';
import { createTenant, getTenant } from '../../store/tenants.ts';
import { type AppEnv, withSource } from '../env.ts';
import { emptyBody } from '../json-guard.ts';
import { ApiError } from '../problems.ts';
import { FailedAttempts, UNKNOWN_ADDRESS } from '../rate-limit.ts';
import { InstantSchema } from '../schemas.ts';
import { problemResponses } from './common.ts';

export const TenantSchema = z.object({ tenantId: z.string(), name: z.string(), createdAt: z.string() }).openapi('Tenant');
/** A key's scopes (domain/scopes.ts): `*`, or named scopes. */
const ScopesSchema = z.array(z.enum([ALL_SCOPES, ...SCOPES]));
/** `GET /v1/tenant`: the tenant, and the key that asked (what the console may show it). */
export const CallerTenantSchema = TenantSchema.extend({
  apiKey: z.object({ keyId: z.string(), prefix: z.string(), scopes: ScopesSchema }),
}).openapi('CallerTenant');
export const ApiKeySchema = z
  .object({
    keyId: z.string(),
    name: z.string(),
    prefix: z.string(),
    createdAt: z.string(),
    expiresAt: z.string().nullable(),
    lastUsedAt: z.string().nullable(),
    scopes: ScopesSchema,
  })
  .openapi('ApiKey');
/** The body of `POST /v1/signing-secrets/rotate`: the new secret (shown once) and when the previous one stops signing. */
export const SigningSecretRotationSchema = z.object({ signingSecret: z.string(), previousValidUntil: z.string() });

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * Routes that authenticate themselves (the admin token or open signup): mounted before the API key check.
 * @param adminFailures failed admin-token attempts per client address, shared with the other admin routes
 *   (admin-tenants.ts), for as long as this app lives
 */
export function signupRoutes(adminFailures: FailedAttempts = new FailedAttempts()): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/tenants',
      summary: 'Create a tenant (admin token, or anyone when signup is open)',
      security: [{ bearer: [] }],
      request: {
        body: { required: true, content: { 'application/json': { schema: z.strictObject({ name: z.string().min(1).max(200) }) } } },
      },
      responses: {
        201: {
          description: 'The tenant; its API key and signing secret are shown only here',
          content: { 'application/json': { schema: z.object({ tenant: TenantSchema, apiKey: z.string(), signingSecret: z.string() }) } },
        },
        ...problemResponses(400, 401),
      },
    }),
    async (c) => {
      const { config } = c.var.deps;
      if (config.signup !== 'open') requireAdminToken(c, adminFailures);
      const actor: AuditActor = config.signup === 'open' ? { type: 'system', reason: 'open_signup' } : { type: 'admin' };
      const { store } = withSource(c.var.deps, { actor, requestId: c.var.requestId, traceParent: c.var.traceParent });
      const { tenant, apiKey, signingSecret } = await createTenant(store, c.req.valid('json').name);
      return c.json({ tenant: { ...tenant, createdAt: tenant.createdAt.toISOString() }, apiKey, signingSecret }, 201);
    },
  );
  return app;
}

/**
 * The admin-token check of `POST /v1/tenants` and the `/v1/admin/` routes (admin-tenants.ts). An address whose failed attempts
 * spent its budget (`FailedAttempts`, rate-limit.ts) is refused before its token is looked at; a missing or wrong
 * token counts against its address. Each refusal goes to `deps.onSecurityWarning` with the client address, never the
 * token presented.
 * @throws ApiError `rate_limited` (429, with Retry-After in seconds) or `unauthorized` (401)
 */
export function requireAdminToken(c: Context<AppEnv>, failures: FailedAttempts, what = 'creating a tenant'): void {
  const { config, store, clientAddress, onSecurityWarning } = c.var.deps;
  const address = clientAddress?.(c) ?? UNKNOWN_ADDRESS;
  const nowMs = store.clock.now();
  const allowed = failures.check(address, nowMs);
  if (!allowed.ok) {
    const wait = allowed.retryAfterSeconds;
    onSecurityWarning?.(
      { clientAddress: address, path: c.req.path, retryAfterSeconds: wait },
      'admin token attempt refused: too many failed attempts from this address',
    );
    throw new ApiError('rate_limited', `too many failed admin-token attempts from this address; retry in ${wait} s`, undefined, {
      'retry-after': String(wait),
    });
  }
  const presented = bearer(c.req.header('authorization'));
  if (config.adminToken && presented && timingSafeEqualStrings(presented, config.adminToken)) return;
  failures.fail(address, nowMs);
  const reason = !presented ? 'no bearer token' : config.adminToken ? 'wrong token' : 'no admin token is configured';
  onSecurityWarning?.({ clientAddress: address, path: c.req.path, reason }, 'admin token refused');
  throw new ApiError('unauthorized', `${what} needs the admin token (CHIME_ADMIN_TOKEN)`, undefined, {
    'www-authenticate': 'Bearer',
  });
}

/** Routes of the authenticated tenant. */
export function tenantRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/tenant',
      summary: "The caller's tenant",
      responses: {
        200: { description: 'The tenant and the calling key', content: { 'application/json': { schema: CallerTenantSchema } } },
        ...problemResponses(401),
      },
    }),
    async (c) => {
      const t = await getTenant(c.var.deps.store, c.var.tenantId);
      if (!t) throw new ApiError('not_found', 'tenant not found');
      const apiKey = { keyId: c.var.keyId, prefix: c.var.keyPrefix, scopes: c.var.scopes as z.infer<typeof ScopesSchema> };
      return c.json({ ...t, createdAt: t.createdAt.toISOString(), apiKey }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/api-keys',
      summary: 'Create an API key (the key is shown once)',
      request: {
        body: {
          required: true,
          content: {
            'application/json': {
              schema: z.strictObject({
                name: z.string().min(1).max(200),
                expiresAt: InstantSchema.optional(),
                /** Default: the calling key's own scopes (`*` for a tenant's first key). */
                scopes: ScopesSchema.min(1).optional(),
              }),
            },
          },
        },
      },
      responses: {
        201: { description: 'The key', content: { 'application/json': { schema: ApiKeySchema.extend({ key: z.string() }) } } },
        ...problemResponses(400, 401, 403),
      },
    }),
    async (c) => {
      const body = c.req.valid('json');
      const { store } = c.var.deps;
      const expiresAt = body.expiresAt ? new Date(body.expiresAt) : null;
      if (expiresAt && expiresAt.getTime() <= store.clock.now()) {
        throw new ApiError('validation', 'expiresAt: must be in the future', [{ path: 'expiresAt', message: 'must be in the future' }]);
      }
      const scopes = body.scopes ?? c.var.scopes;
      const beyond = scopesBeyond(c.var.scopes, scopes);
      if (beyond.length > 0) {
        throw new ApiError('insufficient_scope', `a key can grant at most its own scopes; this one lacks ${beyond.join(', ')}`);
      }
      const k = await createApiKey(store, c.var.tenantId, { name: body.name, expiresAt, scopes });
      return c.json({ ...k, createdAt: k.createdAt.toISOString(), expiresAt: iso(k.expiresAt), lastUsedAt: null }, 201);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/api-keys',
      summary: "The tenant's API keys, without secrets",
      responses: {
        200: { description: 'Keys', content: { 'application/json': { schema: z.object({ apiKeys: z.array(ApiKeySchema) }) } } },
        ...problemResponses(401),
      },
    }),
    async (c) => {
      const keys = await listApiKeys(c.var.deps.store, c.var.tenantId);
      return c.json(
        {
          apiKeys: keys.map((k) => ({
            ...k,
            createdAt: k.createdAt.toISOString(),
            expiresAt: iso(k.expiresAt),
            lastUsedAt: iso(k.lastUsedAt),
          })),
        },
        200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: 'delete',
      path: '/v1/api-keys/{keyId}',
      middleware: [emptyBody()] as const,
      summary: 'Revoke an API key (effective at once)',
      request: { params: z.object({ keyId: z.string() }) },
      responses: { 204: { description: 'Revoked' }, ...problemResponses(401, 404) },
    }),
    async (c) => {
      const { keyId } = c.req.valid('param');
      const ok = isUuid(keyId) && (await revokeApiKey(c.var.deps.store, c.var.tenantId, keyId));
      if (!ok) throw new ApiError('not_found', `no API key ${keyId}`);
      return c.body(null, 204);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/signing-secrets/rotate',
      middleware: [emptyBody()] as const,
      summary: 'Rotate the signing secret (both sign for 24 h)',
      responses: {
        201: { description: 'The new secret', content: { 'application/json': { schema: SigningSecretRotationSchema } } },
        ...problemResponses(401),
      },
    }),
    async (c) => {
      const r = await rotateSigningSecret(c.var.deps.store, c.var.tenantId);
      return c.json({ signingSecret: r.signingSecret, previousValidUntil: r.previousValidUntil.toISOString() }, 201);
    },
  );
  return app;
}

/** The token of an `Authorization: Bearer <token>` header (RFC 6750 §2.1), or null. */
export function bearer(header: string | undefined): string | null {
  const m = header?.match(/^Bearer\s+(\S+)\s*$/i);
  return m ? m[1]! : null;
}
