/**
 * `chime listen`: a local development receiver, like `stripe listen`. Point a job's callback at it and it prints
 * one block per callback: method, path, webhook-id, attempt, whether the Standard Webhooks signature verifies
 * (with `verifyWebhook`, the same code receivers import from `@chime/receiver`) and, given the service's JWKS URL,
 * whether `Chime-Signature` verifies; then the body, JSON pretty-printed. It answers every request `200`, so
 * Chime records the callback as delivered.
 *
 * Block layout (one `write` per callback, so concurrent callbacks never interleave):
 *   --> POST /hooks/report  2030-01-01T00:00:00.000Z
 *       webhook-id:      0190…
 *       attempt:         1
 *       signature:       verified | INVALID (reason) | not checked (no --secret)
 *       chime-signature: verified (kid …) | INVALID (reason)          only with jwksUrl
 *   {
 *     "report": "nightly"
 *   }
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeSigningSecret, verifyWebhook } from '@chime/receiver';
import { createRemoteJWKSet, jwtVerify } from 'jose';

export type ListenOptions = {
  /** TCP port; 0 picks a free one (see the returned `url`). */
  port: number;
  /** Interface to bind (default 127.0.0.1: a development tool, not a public endpoint). */
  host?: string;
  /** `whsec_…` secrets to verify `webhook-signature` with (several while rotating); none: not checked. */
  secrets: string[];
  /** Where the blocks are printed (the CLI passes stdout). */
  out: NodeJS.WritableStream;
  /** The service's `/.well-known/jwks.json`: when given, `Chime-Signature` JWTs are verified against it. */
  jwksUrl?: string;
};

export type Listener = {
  /** `http://host:port` the receiver listens on. */
  url: string;
  /** Stops listening and closes open connections. */
  close(): Promise<void>;
};

/** Most bytes of a request body read; the rest is cut (a development tool, not a sink). */
const MAX_BODY_BYTES = 1024 * 1024;
/** The `iss` claim of Chime-Signature tokens (src/dispatch/sign.ts JWT_ISSUER). */
const JWT_ISSUER = 'chime';

/** The path `chime listen` answers `GET` on without printing: a readiness probe. */
export const READY_PATH = '/ready';

/**
 * Starts the development receiver.
 * @throws TypeError when a secret is not a `whsec_<base64>` secret, or jwksUrl is not a URL (before listening)
 */
export async function runListen(opts: ListenOptions): Promise<Listener> {
  for (const s of opts.secrets) decodeSigningSecret(s); // refuse a mistyped secret now, not on every callback
  const jwks = opts.jwksUrl ? createRemoteJWKSet(new URL(opts.jwksUrl)) : null;
  const host = opts.host ?? '127.0.0.1';

  const server = http.createServer((req, res) => {
    // A readiness probe (the README's Quick start waits on it) is answered, not printed as a callback.
    if (req.method === 'GET' && req.url === READY_PATH) {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ready');
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY_BYTES) chunks.push(c);
    });
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      void describe(req, body, size > MAX_BODY_BYTES)
        .catch((err: unknown) => `--> ${req.method} ${req.url}\n    (could not describe this request: ${String(err)})\n`)
        .then((block) => {
          opts.out.write(block);
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"received":true}');
        });
    });
  });

  async function describe(req: http.IncomingMessage, body: string, truncated: boolean): Promise<string> {
    const h = req.headers;
    const one = (name: string) => {
      const v = h[name];
      return Array.isArray(v) ? v.join(', ') : v;
    };
    const lines = [`--> ${req.method} ${req.url}  ${new Date().toISOString()}`];
    const field = (name: string, value: string) => lines.push(`    ${`${name}:`.padEnd(17)}${value}`);
    field('webhook-id', one('webhook-id') ?? '(none)');
    field('attempt', one('chime-attempt') ?? '(none)');

    if (opts.secrets.length === 0) {
      field('signature', 'not checked (no --secret)');
    } else {
      const v = await verifyWebhook({ headers: h, body }, opts.secrets);
      field('signature', v.ok ? 'verified' : `INVALID (${v.reason})`);
    }

    if (jwks) {
      const token = one('chime-signature');
      if (!token) {
        field('chime-signature', 'INVALID (missing Chime-Signature header)');
      } else {
        try {
          const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer: JWT_ISSUER });
          const bodyHash = createHash('sha256').update(body).digest('base64url');
          field(
            'chime-signature',
            payload.body === bodyHash ? `verified (kid ${protectedHeader.kid ?? '?'})` : 'INVALID (the body claim does not match the body)',
          );
        } catch (err) {
          field('chime-signature', `INVALID (${(err as Error).message})`);
        }
      }
    }
    return `${lines.join('\n')}\n${pretty(body)}${truncated ? `\n(body cut at ${MAX_BODY_BYTES} bytes)` : ''}\n\n`;
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** The body as JSON pretty-printed with two spaces; any other text as is; an empty body says so. */
function pretty(body: string): string {
  if (body === '') return '(empty body)';
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}
