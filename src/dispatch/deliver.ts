/**
 * Sends one callback request through an undici Agent (`request`, not `fetch`: several times cheaper here) and
 * reports what happened as a value, never an exception. Redirects are never followed (undici's `request` does not
 * follow them; a 3xx is an ordinary failed status unless the job lists it as success).
 */
import { Agent, type Dispatcher } from 'undici';
import { ERROR_CLASS, NOT_SENT_ERROR_CODES, type HttpResult } from '../domain/attempt-outcome.ts';
import { parseRetryAfter } from '../domain/retry.ts';
import { createGuardedConnector } from './guard.ts';

/** Bytes of the response body kept in the attempt log. */
export const RESPONSE_EXCERPT_BYTES = 1024;
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
 * @returns a function that resolves to a response (status, Retry-After in ms, first RESPONSE_EXCERPT_BYTES of the
 *   body as text) or a classified error; it never rejects
 */
export function createDeliver(agent: Dispatcher): Deliver {
  return async (req, nowMs) => {
    try {
      const url = new URL(req.url);
      const res = await agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: req.method,
        headers: req.headers,
        body: req.body,
        signal: AbortSignal.timeout(req.timeoutMs),
        headersTimeout: req.timeoutMs,
        bodyTimeout: req.timeoutMs,
      });
      const bodyExcerpt = await readExcerpt(res.body);
      const retryAfter = res.headers['retry-after'];
      return {
        kind: 'response',
        status: res.statusCode,
        retryAfterMs: parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, nowMs()),
        bodyExcerpt,
      };
    } catch (err) {
      return classifyError(err);
    }
  };
}

async function readExcerpt(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      if (size < RESPONSE_EXCERPT_BYTES) chunks.push(chunk);
      size += chunk.length;
      if (size > RESPONSE_DRAIN_LIMIT_BYTES) {
        body.destroy();
        break;
      }
    }
  } catch {
    // A body cut short still leaves the status we already have.
  }
  return Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8');
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
