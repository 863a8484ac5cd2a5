/**
 * Request body limits that look at the declared length before the body.
 *
 * Hono's `bodyLimit` starts by reading `c.req.raw.body`. On Node, @hono/node-server hands the app a lightweight
 * request that reads its body straight off the socket for `text()`/`json()`; touching `.body` instead builds a full
 * WHATWG Request (an AbortController, `Readable.toWeb`, a ReadableStream) and sends every later read through web
 * streams: about a seventh of the API's CPU per `POST /v1/jobs`. A body with a Content-Length and no
 * Transfer-Encoding is exactly that long (RFC 9112 §6.3; Node's HTTP parser holds the client to it), so the header
 * decides; only a body of undeclared length (chunked) is counted as it is read, by Hono's `bodyLimit`.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';

/**
 * What a request says about its body, from its headers alone (RFC 9112 §6.3).
 * @returns 'none' (no body: no Content-Length or a zero one, no Transfer-Encoding), the declared length in bytes, or
 *   'unknown' (Transfer-Encoding, so the length is known only once read)
 */
export function declaredBodyLength(c: Context): number | 'none' | 'unknown' {
  if (c.req.header('transfer-encoding') !== undefined) return 'unknown';
  const length = c.req.header('content-length');
  if (length === undefined) {
    // Node's HTTP server gives a request without either header no body; a Request built in process (`app.request`,
    // Workers) may still carry one whose length no header states.
    return c.req.method === 'GET' || c.req.method === 'HEAD' ? 'none' : 'unknown';
  }
  const n = Number(length);
  return Number.isSafeInteger(n) && n > 0 ? n : n === 0 ? 'none' : 'unknown';
}

/**
 * Middleware: answers through `onError` (which throws or returns the response) when the body is over `maxBytes(c)`
 * bytes; by the Content-Length header when there is one, else by counting the body as Hono's `bodyLimit` reads it.
 * @param maxBytes the limit for this request, in bytes
 */
export function limitBody(
  maxBytes: (c: Context) => number,
  onError: (c: Context, maxBytes: number) => Response | Promise<Response>,
): MiddlewareHandler {
  return async (c, next) => {
    const max = maxBytes(c);
    const declared = declaredBodyLength(c);
    if (declared === 'none') return next();
    if (declared !== 'unknown') return declared > max ? onError(c, max) : next();
    return bodyLimit({ maxSize: max, onError: (ctx) => onError(ctx, max) })(c, next);
  };
}

/** Largest request body, in bytes (API.md "Conventions"). */
export const MAX_BODY_BYTES = 64 * 1024;
/** Largest body of `POST /v1/jobs/batch`, in bytes. */
export const MAX_BATCH_BODY_BYTES = 1024 * 1024;
/** Largest body of a job route (create, replace by key, change), in bytes: a 256 KiB `body` and the rest of the job. */
export const MAX_JOB_BODY_BYTES = 320 * 1024;
/** The one route whose body may be MAX_BATCH_BODY_BYTES. */
export const BATCH_PATH = '/v1/jobs/batch';

/**
 * The body limit of a request, in bytes (API.md "Conventions", "Destination control"): MAX_BATCH_BODY_BYTES for
 * `POST /v1/jobs/batch`, MAX_JOB_BODY_BYTES for `POST /v1/jobs`, `PUT /v1/jobs/by-key/:key` and
 * `PATCH /v1/jobs/:jobId` (a job's `body` may be 256 KiB), MAX_BODY_BYTES for every other.
 */
export function bodyLimitOf(method: string, path: string): number {
  if (path === BATCH_PATH) return MAX_BATCH_BODY_BYTES;
  const jobRoute =
    (method === 'POST' && path === '/v1/jobs') ||
    (method === 'PUT' && path.startsWith('/v1/jobs/by-key/')) ||
    (method === 'PATCH' && /^\/v1\/jobs\/[^/]+$/.test(path));
  return jobRoute ? MAX_JOB_BODY_BYTES : MAX_BODY_BYTES;
}
