/**
 * The operations endpoints, without tenant auth (API.md "Operations"): `GET /healthz` (process up), `GET /readyz`
 * (database reachable) and `GET /metrics` (Prometheus text behind `CHIME_METRICS_TOKEN`). Served by every role: the
 * API app mounts them, and a dispatcher-only process serves them alone.
 */

import { sql } from 'drizzle-orm';
import { type Context, Hono } from 'hono';
import { timingSafeEqualStrings } from '../store/credentials.ts';
import type { Database } from '../store/db.ts';
import { ApiError, problemResponse } from './problems.ts';

/** Prometheus exposition of a process's metrics. */
export type MetricsExposition = { contentType: string; render(): Promise<string> };

export type OpsOptions = {
  database: Pick<Database, 'db'>;
  /** Absent: the runtime collects none (Workers), and `/metrics` is 404. */
  metrics?: MetricsExposition;
  /** The bearer token `/metrics` requires; null or absent: `/metrics` is 404 (its labels name tenants' destinations). */
  metricsToken?: string | null;
};

/** The three operations routes over `opts`; errors answer as problem+json (503 when the database is unreachable). */
export function opsRoutes(opts: OpsOptions): Hono {
  const ops = new Hono();
  ops.get('/healthz', (c) => c.json({ status: 'ok' }));
  ops.get('/readyz', async (c) => {
    try {
      await opts.database.db.execute(sql`select 1`);
      return c.json({ status: 'ready' });
    } catch {
      return problemResponse(c, new ApiError('unavailable', 'the database is not reachable'));
    }
  });
  ops.get('/metrics', async (c) => {
    const refused = metricsRefusal(c, opts);
    if (refused) return problemResponse(c, refused);
    return c.body(await opts.metrics!.render(), 200, { 'content-type': opts.metrics!.contentType });
  });
  return ops;
}

/**
 * Why a scrape is refused, or null: `404` when metrics are off (no token configured, or none collected), so an
 * unconfigured process does not even say it has them; `401` for a missing or wrong bearer token. The token is
 * compared in constant time (`timingSafeEqualStrings`).
 */
function metricsRefusal(c: Context, opts: OpsOptions): ApiError | null {
  if (!opts.metrics || !opts.metricsToken) return new ApiError('not_found', 'metrics are off: set CHIME_METRICS_TOKEN to serve them');
  const header = c.req.header('authorization') ?? '';
  const given = /^Bearer (.+)$/i.exec(header)?.[1] ?? '';
  if (given && timingSafeEqualStrings(given, opts.metricsToken)) return null;
  return new ApiError('unauthorized', 'send the metrics token as Authorization: Bearer <CHIME_METRICS_TOKEN>', undefined, {
    'www-authenticate': 'Bearer',
  });
}
