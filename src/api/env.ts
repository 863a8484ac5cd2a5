/** The typed Hono environment: services reach handlers through `c.var.deps`, built once at start-up. */
import type { Context } from 'hono';
import type { WebAssets } from '../console/assets.ts';
import type { StoreContext } from '../store/context.ts';
import type { Database } from '../store/db.ts';
import type { MetricsExposition } from './ops.ts';
import type { RequestRecord } from './requests.ts';

/** Resolves a callback host at registration and refuses non-public addresses (Node: DNS; Workers: none). */
export type ResolveHost = (hostname: string) => Promise<{ ok: true } | { ok: false; reason: string }>;

/**
 * Per-tenant limits of the API (config.ts `limits`, from CHIME_RATE_LIMIT_PER_SECOND, CHIME_RATE_LIMIT_BURST,
 * CHIME_MAX_ACTIVE_JOBS).
 */
export type ApiLimits = {
  /** Requests per second each tenant may make to one API process (token bucket refill rate); 0 = no rate limit. */
  ratePerSecond: number;
  /** Requests a tenant may make at once after being idle (the bucket's capacity); at least 1 when limiting. */
  burst: number;
  /** Most jobs a tenant may have `active` or `paused` at once; 0 = no quota. */
  maxActiveJobs: number;
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
  /** The built console and API-reference assets (absent: `/console` and `/docs` answer 503 saying how to build). */
  assets?: WebAssets;
};

export type AppEnv = {
  Variables: { deps: AppDeps; tenantId: string; keyId: string; keyPrefix: string; scopes: readonly string[]; requestId: string };
};
