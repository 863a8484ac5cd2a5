/**
 * `@chime/receiver/hono`: a Hono (https://hono.dev) middleware that verifies Chime callbacks before the handler.
 * Only types are imported from `hono` (erased at build time), so hono is not a runtime dependency of the package
 * and its main entry loads no framework.
 *
 * ```ts
 * import { Hono } from 'hono';
 * import { chimeWebhook, type ChimeWebhookEnv } from '@chime/receiver/hono';
 *
 * const app = new Hono<ChimeWebhookEnv>();
 * app.post('/hooks/report', chimeWebhook({ secrets: [process.env.CHIME_SECRET!], jwksUrl: 'https://chime.example.com/.well-known/jwks.json', url: 'https://me.example.com/hooks/report' }), async (c) => {
 *   const { id } = c.get('chimeWebhook'); // the run id: deduplicate on it
 *   const payload = await c.req.json();
 *   return c.json({ received: true });
 * });
 * ```
 */
import type { MiddlewareHandler } from 'hono';
import { type ChimeCompletion, completionOf } from './completion.ts';
import type { VerifiedWebhook } from './result.ts';
import { checkVerifyAllOptions, helperUrl, type VerifyAllOptions, verifyAll } from './verify-all.ts';

/**
 * Options of `chimeWebhook`: those of `verifyAll` (`secrets`; `jwksUrl` or `jwks` to verify `Chime-Signature` too;
 * `toleranceSeconds`, `clockToleranceSeconds`, in seconds) and `url`.
 */
export type ChimeWebhookOptions = Omit<VerifyAllOptions, 'nowMs'> & {
  /**
   * The URL this route is called at, exactly as the job's `callback.url` says (the JWT's `sub`). Required with
   * `jwksUrl` or `jwks`: the request URL the server sees (`c.req.url`, built from the `Host` header on Node) is the
   * caller's to choose, so a callback captured on its way to another receiver of the same path would pass.
   */
  url?: string | URL;
};

/**
 * The context variables the middleware sets: `c.get('chimeWebhook')` is `{ ok: true, id, timestamp }`;
 * `c.get('chimeCompletion')` is the attempt's completion handle (`completionOf`: `url`, `token`, `complete(result)`,
 * `heartbeat(progress?)`) for an async job's attempt, null otherwise.
 */
export type ChimeWebhookVariables = { chimeWebhook: VerifiedWebhook; chimeCompletion: ChimeCompletion | null };
/** A Hono `Env` with `ChimeWebhookVariables`: `new Hono<ChimeWebhookEnv>()` types `c.get('chimeWebhook')`. */
export type ChimeWebhookEnv = { Variables: ChimeWebhookVariables };

/**
 * A middleware that reads the raw body (`await c.req.text()`; Hono keeps it, so the handler can still call
 * `c.req.json()`), verifies it with `verifyAll` and then either sets `c.set('chimeWebhook', { ok: true, id,
 * timestamp })` and calls the next handler, or answers `401` with JSON `{ "reason": "…" }` (the reasons of
 * `verifyWebhook` and `verifyChimeSignature`). A non-2xx answer makes Chime retry the attempt.
 *
 * @throws TypeError at once, when made, on a configuration error (no or a malformed secret, a bad `jwksUrl`, no
 *   `url` with `jwksUrl` or `jwks`, a `url` that is not an absolute http(s) URL)
 */
export function chimeWebhook(opts: ChimeWebhookOptions): MiddlewareHandler<ChimeWebhookEnv> {
  const url = helperUrl('chimeWebhook', opts?.url, checkVerifyAllOptions(opts));
  return async (c, next) => {
    const body = await c.req.text();
    const result = await verifyAll({ headers: c.req.raw.headers, body, url }, opts);
    if (!result.ok) return c.json({ reason: result.reason }, 401);
    c.set('chimeWebhook', result);
    c.set('chimeCompletion', completionOf(c.req.raw.headers));
    await next();
  };
}
