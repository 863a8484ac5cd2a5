/**
 * The HTTP API (API.md), as a Hono app built by a factory so the same code serves Node and Cloudflare Workers.
 * No Node-only imports here or below: services arrive through `deps`.
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { authenticateApiKey } from '../store/api-keys.ts';
import { BulkLimitError } from '../store/bulk.ts';
import { errorChain } from '../store/db.ts';
import { JobStateError } from '../store/job-lifecycle.ts';
import { CalendarMissingError, JobKeyTakenError, QuotaExceededError } from '../store/jobs.ts';
import { publicJwks } from '../store/jwt-keys.ts';
import { EndpointLimitError } from '../store/notifications.ts';
import { BATCH_PATH, bodyLimitOf, limitBody } from './body-limit.ts';
import { consoleRoutes } from './console.ts';
import { type AppDeps, type AppEnv, withSource } from './env.ts';
import { jsonGuard, requireJsonMediaType } from './json-guard.ts';
import { opsRoutes } from './ops.ts';
import { ApiError, problemResponse, schemaFieldErrors, validationError } from './problems.ts';
import { FailedAttempts, rateLimit, TokenBuckets } from './rate-limit.ts';
import { requestContext, requestIdOf } from './requests.ts';
import { requireScope } from './route-scopes.ts';
import { ADMIN_PREFIX, adminTenantRoutes } from './routes/admin-tenants.ts';
import { auditLogRoutes } from './routes/audit-log.ts';
import { backfillRoutes } from './routes/backfill.ts';
import { batchRoutes } from './routes/batch.ts';
import { bulkRoutes } from './routes/bulk.ts';
import { calendarRoutes } from './routes/calendars.ts';
import { errorCodes } from './routes/common.ts';
import { compatRoutes } from './routes/compat.ts';
import { completionRoutes, isCompletionPath } from './routes/completion.ts';
import { flowControlRoutes } from './routes/flow-controls.ts';
import { jobLifecycleRoutes } from './routes/job-lifecycle.ts';
import { jobRoutes } from './routes/jobs.ts';
import { notificationRoutes } from './routes/notifications.ts';
import { resultDeliveryRoutes } from './routes/result-deliveries.ts';
import { runRoutes } from './routes/runs.ts';
import { scheduleRoutes } from './routes/schedules.ts';
import { bearer, signupRoutes, tenantRoutes } from './routes/tenants.ts';
import { usageRoutes } from './routes/usage.ts';

/** Builds the app over `deps`; nothing global, so tests can build as many as they like. */
export function createApp(deps: AppDeps): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw validationError(schemaFieldErrors(result.error.issues));
    },
  });

  app.use(
    '*',
    requestContext(deps.onRequest, () => performance.now()),
  );
  // The request's server span (README "Traces"), inside the request context so that it knows the request id.
  if (deps.tracing) app.use('*', deps.tracing.requestMiddleware);
  app.use('*', async (c, next) => {
    c.set('deps', deps);
    await next();
  });
  app.use(
    '*',
    limitBody(
      (c) => bodyLimitOf(c.req.method, c.req.path),
      (c, max) => {
        throw new ApiError('payload_too_large', `${c.req.path === BATCH_PATH ? 'batch ' : ''}request bodies are limited to ${max} bytes`);
      },
    ),
  );

  // Operations: no tenant auth.
  app.route('/', opsRoutes({ database: deps.database, metrics: deps.metrics, metricsToken: deps.config.metricsToken }));
  app.get('/.well-known/jwks.json', async (c) => {
    c.header('cache-control', 'public, max-age=300');
    return c.json(await publicJwks(deps.store));
  });

  app.use('/v1/tenants', requireJsonMediaType(), jsonGuard());
  // The admin token's routes (tenant sign-up, operating tenants) share one count of failed attempts per address.
  const adminFailures = new FailedAttempts();
  app.route('/', signupRoutes(adminFailures));
  app.use(`${ADMIN_PREFIX}*`, requireJsonMediaType(), jsonGuard());
  app.route('/', adminTenantRoutes(adminFailures));
  // Tenant routes (/v1 and the compatibility routes): API key, then the tenant's rate limit, then the body check.
  const requireApiKey: MiddlewareHandler<AppEnv> = async (c, next) => {
    // Sign-up and the admin routes authenticate themselves; the completion routes take an attempt's completion token.
    if (c.req.path === '/v1/tenants' || c.req.path.startsWith(ADMIN_PREFIX) || isCompletionPath(c.req.path)) return next();
    const key = bearer(c.req.header('authorization'));
    const auth = key ? await authenticateApiKey(deps.store, key) : null;
    if (!auth) {
      throw new ApiError(
        'unauthorized',
        key ? 'the API key is unknown, revoked or expired' : 'send an API key as Authorization: Bearer <key>',
        undefined,
        {
          'www-authenticate': 'Bearer',
        },
      );
    }
    c.set('tenantId', auth.tenantId);
    c.set('keyId', auth.keyId);
    c.set('keyPrefix', auth.prefix);
    c.set('scopes', auth.scopes);
    c.set('quotas', auth.quotas);
    // A suspended tenant's keys are refused, but only once they are known to be its keys: a wrong key stays a 401.
    if (auth.tenantStatus === 'suspended') {
      throw new ApiError('tenant_suspended', 'this tenant is suspended by the operator; its API keys are refused until it is resumed');
    }
    // The request's changes carry who made them, for their audit entries (and a created job its trace).
    c.set(
      'deps',
      withSource(deps, {
        actor: { type: 'api_key', keyId: auth.keyId, prefix: auth.prefix },
        requestId: c.var.requestId,
        traceParent: c.var.traceParent,
      }),
    );
    await next();
  };
  const limits = deps.config.limits;
  // Always, with limits: a tenant's override may set a rate when the default sets none. Each tenant's bucket holds its
  // share of the rate among the live API processes (rate-limit.ts).
  const buckets = limits ? new TokenBuckets(1, 1) : null;
  for (const path of ['/v1/*', '/jobs/*']) {
    app.use(path, requireApiKey);
    app.use(path, requireScope());
    if (buckets && limits) app.use(path, rateLimit(buckets, deps.store.clock, limits, deps.apiProcesses));
    app.use(path, requireJsonMediaType());
    app.use(path, jsonGuard({ except: [BATCH_PATH] })); // the batch route checks each job on its own
  }
  app.route('/', tenantRoutes());
  app.route('/', batchRoutes());
  app.route('/', bulkRoutes());
  app.route('/', jobRoutes());
  app.route('/', jobLifecycleRoutes());
  app.route('/', backfillRoutes());
  app.route('/', scheduleRoutes());
  app.route('/', runRoutes());
  app.route('/', completionRoutes());
  app.route('/', usageRoutes());
  app.route('/', notificationRoutes());
  app.route('/', flowControlRoutes());
  app.route('/', calendarRoutes());
  app.route('/', resultDeliveryRoutes());
  app.route('/', auditLogRoutes());
  app.route('/', compatRoutes());

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
  app.doc31('/openapi.json', {
    openapi: '3.1.0',
    info: { title: 'Chime', version: deps.config.version, description: 'Cron-as-a-service for HTTP callbacks' },
    security: [{ bearer: [] }],
  });

  app.route('/', consoleRoutes(deps.assets));

  const routes = app.routes.map((r) => ({ method: r.method, re: pathPattern(r.path) }));
  app.notFound((c) => {
    const allowed = routes.filter((r) => r.method !== 'ALL' && r.re.test(c.req.path)).map((r) => r.method);
    if (allowed.length > 0) {
      return problemResponse(
        c,
        new ApiError('method_not_allowed', `${c.req.method} is not allowed here; use ${[...new Set(allowed)].join(', ')}`, undefined, {
          allow: [...new Set(allowed)].join(', '),
        }),
      );
    }
    return problemResponse(c, new ApiError('not_found', `no route ${c.req.method} ${c.req.path}`));
  });
  app.onError((err, c) => problemResponse(c, toApiError(err, deps, requestIdOf(c))));
  return app;
}

function pathPattern(path: string): RegExp {
  const escaped = path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\\\{[^}]+\\\}|:[^/]+/g, '[^/]+');
  return new RegExp(`^${escaped}/?$`);
}

/**
 * Maps anything thrown to an ApiError: the one place where the store's refusals become HTTP problems (routes throw
 * ApiError for what they decide themselves). Unexpected errors are reported to `onUnexpectedError`, never shown.
 */
function toApiError(err: unknown, deps: AppDeps, requestId: string | undefined): ApiError {
  if (err instanceof ApiError) return err;
  const refused = storeRefusal(err);
  if (refused) return refused;
  if (err instanceof HTTPException) {
    if (err.status === 400) return new ApiError('malformed_json', err.message);
    if (err.status === 413) return new ApiError('payload_too_large', err.message);
    if (err.status === 415) return new ApiError('unsupported_media_type', 'send the body as Content-Type: application/json');
    return new ApiError(err.status === 404 ? 'not_found' : 'validation', err.message);
  }
  if (isDatabaseUnavailable(err))
    return new ApiError('unavailable', 'the database is not reachable; try again shortly', undefined, { 'retry-after': '1' });
  deps.onUnexpectedError?.(err, { requestId });
  return new ApiError('internal', 'an unexpected error occurred');
}

/** A refusal by the store (its typed errors) as the problem it is for the client; null for anything else. */
function storeRefusal(err: unknown): ApiError | null {
  if (err instanceof QuotaExceededError) return new ApiError('quota_exceeded', err.message);
  if (err instanceof JobStateError || err instanceof EndpointLimitError) return new ApiError('conflict', err.message);
  if (err instanceof JobKeyTakenError) {
    return new ApiError('conflict', err.key === null ? err.message : `${err.message}; use PUT /v1/jobs/by-key/:key to replace it`);
  }
  if (err instanceof CalendarMissingError) return validationError([{ path: 'calendar.key', message: err.message }]);
  if (err instanceof BulkLimitError) {
    return validationError([
      { path: 'filter', message: `matches ${err.matched} jobs; at most ${err.max} per call: narrow it (nothing was changed)` },
    ]);
  }
  return null;
}

/**
 * Connection-level failures of either driver (the server is down or restarting, no server of the URL accepts writes,
 * a connection timed out or was found dead: src/store/postgres.ts), a session ended by the server for idling in a
 * transaction (25P03), a statement over `statement_timeout` (57014), and a server that has become read-only (25006:
 * a standby, as a failover begins).
 */
function isDatabaseUnavailable(err: unknown): boolean {
  return (
    errorCodes(err).some((code) =>
      /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|CONNECTION_|CONNECT_TIMEOUT|57P0[123]|57014|08\d\d\d|25006|25P03)/.test(code),
    ) ||
    // A Citus coordinator that cannot reach the worker holding the rows answers XX000 with one of these messages.
    errorChain(err).some((e) => /connection to the remote node .* failed|failure on connection marked as essential/.test(String(e.message)))
  );
}

export type { AppDeps, Context };
