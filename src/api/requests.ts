/**
 * What the API knows of each request beyond its handler (API.md "Access control and audit"): its request id, taken
 * from the client's `X-Request-Id` when it is 1..128 visible ASCII characters, else new; echoed in the response and
 * carried by every problem body; and one record when it is answered, for the access log and the request metrics.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { AppEnv } from './env.ts';

/** The header a request id travels in, both ways. */
export const REQUEST_ID_HEADER = 'x-request-id';
/** A client's request id is kept when it is 1..128 visible ASCII characters (no space, nothing a log could split on). */
const CLIENT_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;
/** The route of a request no route matched, so that the metrics' label set stays bounded. */
export const UNMATCHED_ROUTE = 'unmatched';

/** One answered request: what the access log writes and the request metrics count. Never a key, a token or a body. */
export type RequestRecord = {
  method: string;
  /** The matched route's pattern (`/v1/jobs/:jobId`), or UNMATCHED_ROUTE. */
  route: string;
  status: number;
  /** From the request's arrival to its response's headers, in ms. */
  durationMs: number;
  requestId: string;
  /** The authenticated tenant and API key, when the request had a valid one. */
  tenantId?: string;
  keyId?: string;
};

/** The request id for a request whose `X-Request-Id` header is `header`: the client's when acceptable, else a new UUID. */
export function requestIdFor(header: string | undefined): string {
  return header !== undefined && CLIENT_REQUEST_ID.test(header) ? header : crypto.randomUUID();
}

/**
 * The route that answers `c`: the last matched route of a method (middleware is registered for 'ALL'), as Hono
 * registered it (`{ method, path: '/v1/jobs/:jobId' }`); undefined when no route matches. The router matches the
 * whole chain before the first middleware runs, so middleware can ask before the handler runs.
 */
export function answeringRoute(c: Context): { method: string; path: string } | undefined {
  return matchedRoutes(c)
    .filter((r) => r.method !== 'ALL')
    .at(-1);
}

/** The request id of `c` (set by `requestContext`), if any. */
export function requestIdOf(c: Context): string | undefined {
  return (c.var as { requestId?: string }).requestId;
}

/**
 * The first middleware of the app: sets `requestId`, answers with it in `X-Request-Id`, and once the response is
 * made (an error's problem included) calls `onRequest` with the request's record.
 * @param now the clock for the duration, in ms (a monotonic one: `performance.now`)
 */
export function requestContext(onRequest: ((r: RequestRecord) => void) | undefined, now: () => number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = now();
    const requestId = requestIdFor(c.req.header(REQUEST_ID_HEADER));
    c.set('requestId', requestId);
    await next();
    c.header(REQUEST_ID_HEADER, requestId);
    if (!onRequest) return;
    onRequest({
      method: c.req.method,
      route: answeringRoute(c)?.path ?? UNMATCHED_ROUTE,
      status: c.res.status,
      durationMs: now() - started,
      requestId,
      ...(c.var.tenantId ? { tenantId: c.var.tenantId } : {}),
      ...(c.var.keyId ? { keyId: c.var.keyId } : {}),
    });
  };
}
