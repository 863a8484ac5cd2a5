/**
 * Sends one callback request with the runtime's `fetch` (Cloudflare Workers; also Node's global fetch, for tests),
 * with the semantics of the Node dispatcher's undici delivery (src/dispatch/deliver.ts): redirects are never
 * followed (a 3xx is an ordinary status), one deadline of `timeoutMs` covers the response and the body excerpt,
 * the first RESPONSE_EXCERPT_BYTES of the body are kept, and failures are values with an error class, never
 * exceptions. The request's headers are sent as built: its job's custom headers have passed the header rule
 * (src/domain/callback-headers.ts, in `buildCallbackRequest`), which accepts only what `fetch` sends unchanged (no
 * leading or trailing whitespace, which `Headers` strips; no control or non-ASCII characters, refused or re-encoded).
 *
 * Destination guard: Workers have no DNS API, so a name cannot be resolved and checked here. URLs are checked on
 * their face before every attempt (`checkCallbackUrl`: IP literals must be public, local names are refused). A name
 * that resolves to a private address is not caught here; what makes that tolerable is where the request leaves
 * from: a Worker's subrequests go out from Cloudflare's network, which has no route into the operator's private
 * network or to its loopback (unless the operator connects one, e.g. through a Tunnel). On Node the guarded
 * connector checks every resolved address (src/dispatch/guard.ts). `CHIME_ALLOW_PRIVATE_DESTINATIONS=true` lifts
 * the check (local `wrangler dev` against a receiver on 127.0.0.1).
 */

import type { Deliver } from '../dispatch/deliver.ts';
import { ERROR_CLASS, type HttpResult, NOT_SENT_ERROR_CODES } from '../domain/attempt-outcome.ts';
import { checkCallbackUrl } from '../domain/destination.ts';
import { parseRetryAfter } from '../domain/retry.ts';

/** Bytes of the response body kept in the attempt log (as RESPONSE_EXCERPT_BYTES in src/dispatch/deliver.ts). */
export const FETCH_EXCERPT_BYTES = 4096;
/** Most bytes of a body kept for `keepBodyBytes` (as RESPONSE_DRAIN_LIMIT_BYTES in src/dispatch/deliver.ts). */
const FETCH_KEEP_LIMIT_BYTES = 64 * 1024;

/** The `fetch` signature this module needs (the global one fits). */
export type FetchFn = (input: string, init: RequestInit) => Promise<Response>;

export type FetchDeliverOptions = {
  /** Skip the destination check (CHIME_ALLOW_PRIVATE_DESTINATIONS). */
  allowPrivate: boolean;
  /** The fetch to send with; default the global `fetch`, looked up at call time. */
  fetch?: FetchFn;
};

/**
 * Builds a `Deliver` over `fetch`.
 * @returns a function that resolves to a response (status, Retry-After in ms, the body's first
 *   FETCH_EXCERPT_BYTES as UTF-8 text) or a classified error; it never rejects
 */
export function createFetchDeliver(opts: FetchDeliverOptions): Deliver {
  const send: FetchFn = opts.fetch ?? ((input, init) => fetch(input, init));
  return async (req, nowMs) => {
    const check = checkCallbackUrl(req.url, { allowPrivate: opts.allowPrivate });
    if (!check.ok) {
      return {
        kind: 'error',
        errorClass: ERROR_CLASS.refusedDestination,
        message: `refused destination: ${check.reason}`,
        maybeSent: false,
      };
    }
    const signal = AbortSignal.timeout(req.timeoutMs);
    try {
      const res = await send(req.url, { method: req.method, headers: req.headers, body: req.body, redirect: 'manual', signal });
      const keep = Math.min(req.keepBodyBytes ?? 0, FETCH_KEEP_LIMIT_BYTES);
      const read = await readBody(res, signal, Math.max(FETCH_EXCERPT_BYTES, keep));
      const headers: Record<string, string> = {};
      // `Headers` joins repeated headers with ", " (set-cookie aside, which the log drops anyway).
      res.headers.forEach((value, name) => {
        headers[name.toLowerCase()] = value;
      });
      const result: HttpResult = {
        kind: 'response',
        status: res.status,
        retryAfterMs: parseRetryAfter(res.headers.get('retry-after'), nowMs()),
        bodyExcerpt: new TextDecoder().decode(read.bytes.subarray(0, FETCH_EXCERPT_BYTES)),
        headers,
      };
      if (keep > 0) {
        result.body = read.bytes.subarray(0, keep);
        result.bodyTruncated = read.more || read.bytes.length > keep;
      }
      return result;
    } catch (err) {
      return classifyFetchError(err);
    }
  };
}

/**
 * Reads up to `limit` bytes of the body, racing every read against `signal` (not every runtime's fetch aborts
 * a body stream with the request's signal), then cancels the rest without waiting (which also frees the subrequest).
 * @returns the bytes read (at most `limit`), and `more` when the body did not end within them (or was cut short)
 */
async function readBody(res: Response, signal: AbortSignal, limit: number): Promise<{ bytes: Uint8Array; more: boolean }> {
  if (!res.body) return { bytes: new Uint8Array(0), more: false };
  const reader = res.body.getReader();
  const aborted = new Promise<'aborted'>((resolve) => {
    if (signal.aborted) resolve('aborted');
    else signal.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
  const chunks: Uint8Array[] = [];
  let size = 0;
  let done = false;
  try {
    while (size < limit) {
      const r = await Promise.race([reader.read(), aborted]);
      if (r === 'aborted') break;
      if (r.done) {
        done = true;
        break;
      }
      chunks.push(r.value);
      size += r.value.byteLength;
    }
  } catch {
    // A body cut short (timeout, reset) still leaves the status we already have.
  }
  if (!done) void reader.cancel().catch(() => {});
  const all = new Uint8Array(Math.min(size, limit));
  let at = 0;
  for (const c of chunks) {
    const part = c.subarray(0, all.length - at);
    all.set(part, at);
    at += part.length;
    if (at >= all.length) break;
  }
  return { bytes: all, more: !done };
}

/**
 * Maps a `fetch` rejection to an attempt error class. `maybeSent` is false only when no byte can have left:
 * a known connect-phase code on `cause` (Node), or workerd's wording for a refused connection. Anything else,
 * timeouts included, may have reached the receiver (docs/design.md invariant 4: at-most-once never re-sends it).
 */
export function classifyFetchError(err: unknown): HttpResult {
  const e = err instanceof Error ? err : new Error(String(err));
  const cause = (e as { cause?: unknown }).cause as { code?: string; message?: string } | undefined;
  const code = (e as { code?: string }).code ?? cause?.code ?? '';
  const detail = cause?.message && !e.message.includes(cause.message) ? `${e.message}: ${cause.message}` : e.message;
  const message = code && !detail.includes(code) ? `${detail} (${code})` : detail;
  if (code in NOT_SENT_ERROR_CODES) return { kind: 'error', errorClass: NOT_SENT_ERROR_CODES[code]!, message, maybeSent: false };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') {
    return { kind: 'error', errorClass: ERROR_CLASS.timeout, message: `timed out: ${message}`, maybeSent: true };
  }
  if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED)/.test(code)) {
    return { kind: 'error', errorClass: ERROR_CLASS.tls, message, maybeSent: false };
  }
  return { kind: 'error', errorClass: ERROR_CLASS.connection, message, maybeSent: true };
}
