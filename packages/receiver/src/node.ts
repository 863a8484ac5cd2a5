/**
 * `@chime/receiver/node`: helpers for Node's `http` server and Express-style middleware.
 *
 * ```js
 * import express from 'express';
 * import { expressWebhook } from '@chime/receiver/node';
 *
 * const app = express();
 * app.post('/hooks/report', expressWebhook({ secrets: [process.env.CHIME_SECRET], jwksUrl: 'https://chime.example.com/.well-known/jwks.json', url: 'https://me.example.com/hooks/report' }), (req, res) => {
 *   const { id } = req.chimeWebhook;        // the run id: deduplicate on it
 *   const payload = JSON.parse(req.rawBody); // the body as received
 *   res.json({ received: true });
 * });
 * ```
 *
 * No `node:` import and no `@types/node`: the request and response are described structurally (`NodeRequestLike`,
 * `NodeResponseLike`), which Node's `IncomingMessage`/`ServerResponse` and Express's `Request`/`Response` satisfy.
 */
import { type ChimeCompletion, completionOf } from './completion.ts';
import type { VerifiedWebhook, VerifyResult } from './result.ts';
import { checkVerifyAllOptions, helperUrl, type VerifyAllOptions, verifyAll } from './verify-all.ts';

/** A readable body stream as `readRawBody` uses it: Node's `IncomingMessage`, any `stream.Readable`. */
export interface BodyStreamLike {
  /** Node's stream events: `data` (a Buffer, or a string after `setEncoding`), `end`, `error`. */
  on(event: 'data', listener: (chunk: Uint8Array | string) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/** The part of Node's `http.IncomingMessage` (or Express's `Request`) `expressWebhook` uses. */
export interface NodeRequestLike extends BodyStreamLike {
  /** Lower-case header names, as Node gives them. */
  headers: Record<string, string | string[] | undefined>;
  /** What a body parser left: a Buffer or string from `express.raw()`/`express.text()` is used as the raw body. */
  body?: unknown;
  /** Node: true once the body stream has been read to its end (by a body parser, say). */
  readableEnded?: boolean;
  /** Set by `expressWebhook` on success. */
  chimeWebhook?: VerifiedWebhook;
  /** Set by `expressWebhook` on success: the raw body text that verified. */
  rawBody?: string;
  /**
   * Set by `expressWebhook` on success: an async job's attempt's completion handle (`completionOf`: `url`, `token`,
   * `complete(result)`, `heartbeat(progress?)`); null for a job whose response decides the run.
   */
  chimeCompletion?: ChimeCompletion | null;
}

/** The part of Node's `http.ServerResponse` (or Express's `Response`) `expressWebhook` uses to answer 401. */
export interface NodeResponseLike {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(chunk?: string): unknown;
}

/** Options of `readRawBody`. */
export type ReadRawBodyOptions = {
  /** Most bytes read; a longer body rejects with a RangeError (default 1 MiB; Infinity for no limit). */
  limitBytes?: number;
};

/** Default `limitBytes`: 1 MiB. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Reads a request's body stream to its end and decodes it as UTF-8 (the bytes concatenated first, so a character
 * split across chunks stays whole; a byte order mark is kept, as it was signed).
 *
 * @param req a Node `http.IncomingMessage` (or any stream with `on('data' | 'end' | 'error')`) not read yet
 * @param opts `limitBytes` (default 1 MiB)
 * @returns the raw body text ('' for none)
 * @throws (rejects) RangeError when the body is longer than `limitBytes`; the stream's error when it fails
 */
export function readRawBody(req: BodyStreamLike, opts: ReadRawBodyOptions = {}): Promise<string> {
  const limit = opts.limitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  return new Promise<string>((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    let done = false;
    const finish = (err: Error | null, text?: string) => {
      if (done) return;
      done = true;
      if (err) reject(err);
      else resolve(text!);
    };
    req.on('data', (chunk: Uint8Array | string) => {
      if (done) return;
      const bytes = typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk;
      size += bytes.length;
      if (size > limit) return finish(new RangeError(`request body larger than ${limit} bytes`));
      chunks.push(bytes);
    });
    req.on('end', () => finish(null, decodeUtf8(chunks, size)));
    req.on('error', (err: Error) => finish(err));
  });
}

/**
 * Options of `expressWebhook`: those of `verifyAll` (`secrets`; `jwksUrl` or `jwks` to verify `Chime-Signature`
 * too; `toleranceSeconds`, `clockToleranceSeconds`, in seconds), `url` and `limitBytes`.
 */
export type ExpressWebhookOptions = Omit<VerifyAllOptions, 'nowMs'> &
  ReadRawBodyOptions & {
    /**
     * The URL this route is called at, exactly as the job's `callback.url` says (the JWT's `sub`). Required with
     * `jwksUrl` or `jwks`: a URL built from the request (its `Host` header) is the caller's to choose, so a callback
     * captured on its way to another receiver of the same path would pass.
     */
    url?: string | URL;
  };

/**
 * An Express-style middleware `(req, res, next)`, also callable from a plain `http.createServer` handler.
 *
 * Takes the raw body from `req.body` when a body parser left a Buffer or string there (`express.raw({ type: '*' +
 * '/*' })`, `express.text()`), else reads the stream (`readRawBody`); verifies it with `verifyAll`; then either sets
 * `req.chimeWebhook = { ok: true, id, timestamp }` and `req.rawBody` and calls `next()`, or answers `401` with JSON
 * `{ "reason": "…" }` (`413` when the body is larger than `limitBytes`).
 *
 * Mount it before any JSON body parser on its route: a parsed body can no longer be verified, and
 * `next(TypeError)` says so.
 *
 * @throws TypeError at once, when made, on a configuration error (no or a malformed secret, a bad `jwksUrl`, no
 *   `url` with `jwksUrl` or `jwks`, a `url` that is not an absolute http(s) URL)
 */
export function expressWebhook(
  opts: ExpressWebhookOptions,
): (req: NodeRequestLike, res: NodeResponseLike, next: (err?: unknown) => void) => Promise<void> {
  const url = helperUrl('expressWebhook', opts?.url, checkVerifyAllOptions(opts));
  return async (req, res, next) => {
    let body: string;
    try {
      const given = req.body;
      if (typeof given === 'string') body = given;
      else if (given instanceof Uint8Array) body = decodeUtf8([given], given.length);
      else if (req.readableEnded === true) {
        return next(
          new TypeError('expressWebhook: the body was already read and parsed; mount it before express.json(), or use express.raw()'),
        );
      } else body = await readRawBody(req, opts);
    } catch (err) {
      if (err instanceof RangeError) return answer(res, 413, err.message);
      return next(err);
    }
    let result: VerifyResult;
    try {
      result = await verifyAll({ headers: req.headers, body, url }, opts);
    } catch (err) {
      return next(err);
    }
    if (!result.ok) return answer(res, 401, result.reason);
    req.chimeWebhook = result;
    req.rawBody = body;
    try {
      req.chimeCompletion = completionOf(req.headers);
    } catch (err) {
      return next(err);
    }
    next();
  };
}

function answer(res: NodeResponseLike, status: number, reason: string): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ reason }));
}

/** The UTF-8 text of `chunks` (`size` bytes in all), byte order mark kept. */
function decodeUtf8(chunks: Uint8Array[], size: number): string {
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return new TextDecoder('utf-8', { ignoreBOM: true }).decode(all);
}
