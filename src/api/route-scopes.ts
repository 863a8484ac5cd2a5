/**
 * The one table of which scope each tenant route needs (API.md "Access control and audit"), and the middleware that
 * enforces it after the API key is known. Every route under an API key is in the table: test/api/scopes.test.ts
 * walks the OpenAPI document and the app's routes and fails on one that is not. A route missing here is refused
 * (fail closed) and reported as a bug.
 */
import type { MiddlewareHandler } from 'hono';
import { holdsScope, type Scope } from '../domain/scopes.ts';
import type { AppEnv } from './env.ts';
import { ApiError } from './problems.ts';
import { answeringRoute } from './requests.ts';

/** Any valid key may call it (who am I). */
export const ANY_KEY = 'any-key';

/** `METHOD /path/:param` (Hono's route pattern) → the scope it needs. */
export const ROUTE_SCOPES: Readonly<Record<string, Scope | typeof ANY_KEY>> = {
  'GET /v1/tenant': ANY_KEY,
  'POST /v1/api-keys': 'keys:manage',
  'GET /v1/api-keys': 'keys:manage',
  'DELETE /v1/api-keys/:keyId': 'keys:manage',
  'POST /v1/signing-secrets/rotate': 'keys:manage',

  'GET /v1/jobs': 'jobs:read',
  'GET /v1/jobs/:jobId': 'jobs:read',
  'GET /v1/jobs/by-key/:key': 'jobs:read',
  'POST /v1/schedules/preview': 'jobs:read',
  'POST /v1/jobs': 'jobs:write',
  'POST /v1/jobs/batch': 'jobs:write',
  'POST /v1/jobs/bulk': 'jobs:write',
  'PUT /v1/jobs/by-key/:key': 'jobs:write',
  'PATCH /v1/jobs/:jobId': 'jobs:write',
  'DELETE /v1/jobs/:jobId': 'jobs:write',
  'POST /v1/jobs/:jobId/trigger': 'jobs:write',
  'POST /v1/jobs/:jobId/backfill': 'jobs:write',

  'GET /v1/jobs/:jobId/runs': 'runs:read',
  'GET /v1/jobs/:jobId/result-deliveries': 'runs:read',
  'GET /v1/runs': 'runs:read',
  'GET /v1/runs/:runId': 'runs:read',
  'GET /v1/dead-letters': 'runs:read',
  'GET /v1/audit-log': 'audit:read',
  'POST /v1/runs/:runId/replay': 'runs:write',
  'DELETE /v1/dead-letters/:runId': 'runs:write',
  'POST /v1/dead-letters/replay': 'runs:write',

  'GET /v1/usage': 'usage:read',

  'POST /v1/notification-endpoints': 'notifications:manage',
  'GET /v1/notification-endpoints': 'notifications:manage',
  'DELETE /v1/notification-endpoints/:endpointId': 'notifications:manage',
  'GET /v1/notification-endpoints/:endpointId/deliveries': 'notifications:manage',

  'PUT /v1/flow-controls/:key': 'flow-controls:manage',
  'GET /v1/flow-controls': 'flow-controls:manage',
  'GET /v1/flow-controls/:key': 'flow-controls:manage',
  'DELETE /v1/flow-controls/:key': 'flow-controls:manage',

  'PUT /v1/calendars/:key': 'calendars:manage',
  'GET /v1/calendars': 'calendars:manage',
  'GET /v1/calendars/:key': 'calendars:manage',
  'DELETE /v1/calendars/:key': 'calendars:manage',

  // The compatibility routes (API.md "Compatibility routes") need what their /v1 counterparts need.
  'POST /jobs': 'jobs:write',
  'PATCH /jobs/:jobId': 'jobs:write',
  'POST /jobs/:jobId/trigger': 'jobs:write',
  'GET /jobs/:jobId/runs': 'runs:read',
};

/**
 * Refuses a request whose key lacks the scope its route needs: `403` `insufficient_scope` naming it. A path no route
 * matches goes on (to its 404 or 405).
 * @throws ApiError('insufficient_scope'); Error for a route missing from ROUTE_SCOPES (a bug: answered 500)
 */
export function requireScope(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // Only POST /v1/tenants passes the key check without a key (it authenticates itself).
    if (c.var.scopes === undefined) return next();
    const route = answeringRoute(c);
    if (!route) return next();
    const needed = ROUTE_SCOPES[`${route.method} ${route.path}`];
    if (needed === undefined) throw new Error(`route ${route.method} ${route.path} has no scope in ROUTE_SCOPES`);
    if (needed !== ANY_KEY && !holdsScope(c.var.scopes, needed)) {
      throw new ApiError('insufficient_scope', `this API key lacks the scope ${needed}, which ${route.method} ${route.path} needs`);
    }
    await next();
  };
}
