/** The typed Hono environment: services reach handlers through `c.var.deps`, built once at start-up. */
import type { Context, MiddlewareHandler } from 'hono';
import type { WebAssets } from '../console/assets.ts';
import type { ChangeSource } from '../domain/audit.ts';
import type { QuotaOverrides } from '../domain/quotas.ts';
import type { StoreContext } from '../store/context.ts';
import type { Database } from '../store/db.ts';
import type { MetricsExposition } from './ops.ts';
import type { RequestRecord } from './requests.ts';

/** Resolves a callback host at registration and refuses non-public addresses (Node: DNS; Workers: none). */
export type ResolveHost = (hostname: string) => Promise<{ ok: true } | { ok: false; reason: string }>;

/**
 * The default per-tenant quotas of the API (config.ts `limits`: CHIME_QUOTA_REQUESTS_PER_SECOND or
 * CHIME_RATE_LIMIT_PER_SECOND, CHIME_RATE_LIMIT_BURST, CHIME_QUOTA_MAX_JOBS or CHIME_MAX_ACTIVE_JOBS); a tenant's
 * overrides (`tenants.quotas`) take precedence (src/domain/quotas.ts).
 */
export type ApiLimits = {
  /**
   * Requests per second each tenant may make to all API processes together (token bucket refill rate, divided among
   * the live processes: `apiProcesses`); 0 = no rate limit.
   */
  ratePerSecond: number;
  /** Requests a tenant may make at once after being idle (the bucket's capacity, divided likewise); at least 1. */
  burst: number;
  /** Most jobs a tenant may have `active` or `paused` at once; 0 = no quota. */
  maxActiveJobs: number;
  /** Callbacks a tenant's runs may make per UTC day (the dispatcher holds it; shown in the admin view); 0 = no quota. */
  callbacksPerDay?: number;
};

export type AppConfig = {
  /** Bearer token allowed to create tenants; null = only the CLI creates tenants (unless signup is open). */
  adminToken: string | null;
  signup: 'open' | 'closed';
  allowPrivateDestinations: boolean;
  version: string;
  /** Bearer token `GET /metrics` requires (CHIME_METRICS_TOKEN); null or absent: `/metrics` answers 404. */
  metricsToken?: string | null;
  /** Per-tenant limits; absent = none (embedders and tests that do not limit). */
  limits?: ApiLimits;
  /**
   * Most jobs one `POST /v1/jobs/bulk` may match (more → 400, nothing changed); absent = MAX_BULK_JOBS (10,000, as
   * API.md says). Not read from the environment: a lower bound lets tests reach the limit without 10,001 jobs.
   */
  maxBulkJobs?: number;
};

export type AppDeps = {
  store: StoreContext;
  database: Pick<Database, 'db'>;
  config: AppConfig;
  resolveHost?: ResolveHost;
  /** Prometheus exposition of the process's metrics for `GET /metrics` (absent: 404, e.g. on Workers). */
  metrics?: MetricsExposition;
  /** Called with unexpected errors (5xx) and the request's id; the response never carries them. */
  onUnexpectedError?: (err: unknown, request: { requestId?: string }) => void;
  /** Called once per answered request (the access log, the request metrics: src/api/requests.ts). */
  onRequest?: (record: RequestRecord) => void;
  /**
   * The client's network address of a request, for per-address limits (Node: the socket's peer, from
   * @hono/node-server's getConnInfo; forwarded headers are not trusted). Absent or undefined: all such requests
   * share one limit.
   */
  clientAddress?: (c: Context) => string | undefined;
  /** Called with what an operator should hear of (a refused admin token), to log at warn; never with a secret. */
  onSecurityWarning?: (fields: Record<string, unknown>, message: string) => void;
  /**
   * How many API processes share this database now (src/store/api-presence.ts), each giving a tenant 1/N of its
   * request rate; absent: 1 (the embedded database, Workers and tests in one process).
   */
  apiProcesses?: () => number;
  /** The built console and API-reference assets (absent: `/console` and `/docs` answer 503 saying how to build). */
  assets?: WebAssets;
  /**
   * Tracing (README "Traces"): `requestMiddleware` runs right after the request context and makes the request's
   * server span, setting `c.var.traceParent` (src/otel.ts). Absent (Workers, tracing off): no span.
   */
  tracing?: { requestMiddleware: MiddlewareHandler<AppEnv> };
};

export type AppEnv = {
  Variables: {
    deps: AppDeps;
    tenantId: string;
    keyId: string;
    keyPrefix: string;
    scopes: readonly string[];
    requestId: string;
    /** The tenant's quota overrides, read with its key (authenticateApiKey). */
    quotas: QuotaOverrides;
    /** The W3C `traceparent` of the request's server span, when tracing is on. */
    traceParent?: string;
  };
};

/** `deps` whose store writes its changes' audit entries as made by `source` (one request's view of the services). */
export function withSource(deps: AppDeps, source: ChangeSource): AppDeps {
  return { ...deps, store: { ...deps.store, source } };
}
