/**
 * Sends one callback request through an undici Agent (`request`, not `fetch`: several times cheaper here) and
 * reports what happened as a value, never an exception. Redirects are never followed (undici's `request` does not
 * follow them; a 3xx is an ordinary failed status unless the job lists it as success).
 */
import { Agent, type Dispatcher } from 'undici';
import { ERROR_CLASS, type HttpResult, NOT_SENT_ERROR_CODES } from '../domain/attempt-outcome.ts';
import { parseRetryAfter } from '../domain/retry.ts';
import { createGuardedConnector } from './guard.ts';

/** Bytes of the response body kept in the attempt log (API.md: 4 KiB). */
export const RESPONSE_EXCERPT_BYTES = 4096;
/** Bytes of a response body read (then discarded) to keep the connection reusable; past this it is closed. */
export const RESPONSE_DRAIN_LIMIT_BYTES = 64 * 1024;
/** Idle keep-alive of pooled connections to receivers, in ms. */
export const KEEP_ALIVE_TIMEOUT_MS = 30_000;

export type CallbackRequest = {
  url: string;
  method: Dispatcher.HttpMethod;
  headers: Record<string, string>;
  /** null for GET. */
  body: string | null;
  timeoutMs: number;
  /**
   * Bytes of the response body to keep beyond the excerpt (up to RESPONSE_DRAIN_LIMIT_BYTES), for a `successBody`
   * rule or a result delivery; absent: the excerpt only, so memory per request in flight stays small.
   */
  keepBodyBytes?: number;
};

export type Deliver = (req: CallbackRequest, nowMs: () => number) => Promise<HttpResult>;

/** The undici Agent for callbacks: keep-alive pools, guarded connect (SSRF, DNS rebinding) unless allowed. */
export function createCallbackAgent(opts: { allowPrivate: boolean; connectTimeoutMs?: number }): Agent {
  return new Agent({
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    connect: createGuardedConnector({ allowPrivate: opts.allowPrivate, connect: { timeout: opts.connectTimeoutMs ?? 10_000 } }),
  });
}

/**
 * Builds the delivery function over `agent`.
 *
 * The hot path of every callback, so it talks to undici's `dispatch` (Dispatcher.md, "DispatchHandler") with one
 * small handler object instead of `request`: no response stream, no async iterator, no `AbortSignal.timeout` per
 * request (a measurable share of the dispatcher's CPU in the drain benchmark's profile). The whole request, from queueing
 * for a connection to the last body byte, is bounded by one timer of `timeoutMs`; a request still waiting for its
 * connection when the time is up ends then, as a timeout that sent nothing, and is dropped when its turn comes.
 * @returns a function that resolves to a response (status, Retry-After in ms, first RESPONSE_EXCERPT_BYTES of the
 *   body as text) or a classified error; it never rejects
 */
export function createDeliver(agent: Dispatcher): Deliver {
  const targets = new TargetCache();
  return (req, nowMs) =>
    new Promise<HttpResult>((resolve) => {
      let target: Target;
      try {
        target = targets.get(req.url);
      } catch (err) {
        resolve(classifyError(err));
        return;
      }
      const handler = new CallbackHandler(resolve, nowMs, req.timeoutMs, Math.min(req.keepBodyBytes ?? 0, RESPONSE_DRAIN_LIMIT_BYTES));
      agent.dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: req.method,
          headers: req.headers,
          body: req.body,
          headersTimeout: req.timeoutMs,
          bodyTimeout: req.timeoutMs,
        },
        handler,
      );
    });
}

/** A callback URL split as `dispatch` wants it. */
type Target = { origin: string; path: string };

/** Most parsed callback URLs kept; past it the cache starts over (jobs of a tenant mostly share a few URLs). */
const TARGET_CACHE_SIZE = 10_000;

/** Parsed callback URLs by their text: WHATWG URL parsing once per URL, not once per attempt. */
class TargetCache {
  private readonly byUrl = new Map<string, Target>();
  /** @throws TypeError (ERR_INVALID_URL) for a URL that does not parse */
  get(url: string): Target {
    let t = this.byUrl.get(url);
    if (t === undefined) {
      const u = new URL(url);
      t = { origin: u.origin, path: `${u.pathname}${u.search}` };
      if (this.byUrl.size >= TARGET_CACHE_SIZE) this.byUrl.clear();
      this.byUrl.set(url, t);
    }
    return t;
  }
}

/** An error named like the one `AbortSignal.timeout` raises, so `classifyError` reads it as a timeout. */
function timeoutError(ms: number): Error {
  const e = new Error(`callback did not complete within ${ms} ms`);
  e.name = 'TimeoutError';
  return e;
}

/**
 * One callback's undici handler (new handler API, undici 7): keeps the status and the first RESPONSE_EXCERPT_BYTES of
 * the body, reads on up to RESPONSE_DRAIN_LIMIT_BYTES so the connection can be reused, and aborts (closing the
 * connection) past that or when the attempt's time is up. Settles its promise exactly once.
 */
class CallbackHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private timedOut: Error | null = null;
  private readonly timer: NodeJS.Timeout;
  private status = 0;
  private retryAfter: string | undefined;
  private headers: Record<string, string> = {};
  private chunks: Buffer[] = [];
  private size = 0;
  private settled = false;

  constructor(
    private readonly resolve: (r: HttpResult) => void,
    private readonly nowMs: () => number,
    timeoutMs: number,
    /** Bytes of the body to keep whole (0: the excerpt only). */
    private readonly keepBytes = 0,
  ) {
    this.timer = setTimeout(() => {
      this.timedOut = timeoutError(timeoutMs);
      if (this.controller) return this.controller.abort(this.timedOut);
      // Still waiting for a connection: nothing was written (undici starts a request before its first byte), so the
      // attempt ends now, as not sent; the request is dropped when its turn comes (onRequestStart).
      this.settle({
        kind: 'error',
        errorClass: ERROR_CLASS.timeout,
        message: `timed out: ${this.timedOut.message}, still waiting for a connection`,
        maybeSent: false,
      });
    }, timeoutMs);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.timedOut) controller.abort(this.timedOut);
  }

  onResponseStart(_c: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    // 1xx informational answers come before the final one: only the last status counts.
    this.status = statusCode;
    const ra = headers['retry-after'];
    this.retryAfter = Array.isArray(ra) ? ra[0] : ra;
    this.headers = {};
    for (const [name, v] of Object.entries(headers))
      if (v !== undefined) this.headers[name.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.size < Math.max(RESPONSE_EXCERPT_BYTES, this.keepBytes)) this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.size > RESPONSE_DRAIN_LIMIT_BYTES) {
      // Enough read: answer with what we have and drop the connection rather than read the rest.
      this.respond();
      controller.abort(new Error('response body over the drain limit'));
    }
  }

  onResponseEnd(): void {
    this.respond();
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (this.settled) return;
    // A body cut short after the headers still leaves the status we already have (as reading a stream would).
    if (this.status !== 0 && !this.timedOut) {
      this.respond();
      return;
    }
    this.settle(classifyError(this.timedOut ?? err));
  }

  private respond(): void {
    if (this.settled) return;
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const excerpt = all.subarray(0, RESPONSE_EXCERPT_BYTES);
    const result: HttpResult = {
      kind: 'response',
      status: this.status,
      retryAfterMs: parseRetryAfter(this.retryAfter, this.nowMs()),
      bodyExcerpt: excerpt.toString('utf8'),
      headers: this.headers,
    };
    if (this.keepBytes > 0) {
      // A copy: `all` may be a pooled chunk of undici's.
      result.body = new Uint8Array(all.subarray(0, this.keepBytes));
      result.bodyTruncated = this.size > this.keepBytes;
    }
    this.settle(result);
  }

  private settle(r: HttpResult): void {
    this.settled = true;
    clearTimeout(this.timer);
    this.chunks = [];
    this.resolve(r);
  }
}

/** Maps an undici/Node error to an attempt error class; `maybeSent` is false only when no byte can have left. */
export function classifyError(err: unknown): HttpResult {
  const e = (err instanceof Error ? err : new Error(String(err))) as Error & { code?: string; cause?: unknown };
  const code = e.code ?? (e.cause as { code?: string } | undefined)?.code ?? '';
  const message = `${e.message}${code && !e.message.includes(code) ? ` (${code})` : ''}`;
  if (code in NOT_SENT_ERROR_CODES) return { kind: 'error', errorClass: NOT_SENT_ERROR_CODES[code]!, message, maybeSent: false };
  if (e.name === 'TimeoutError' || e.name === 'AbortError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return { kind: 'error', errorClass: ERROR_CLASS.timeout, message: `timed out: ${message}`, maybeSent: true };
  }
  if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED)/.test(code)) {
    // The TLS handshake failed before any request byte was written.
    return { kind: 'error', errorClass: ERROR_CLASS.tls, message, maybeSent: false };
  }
  return { kind: 'error', errorClass: ERROR_CLASS.connection, message, maybeSent: true };
}
