/**
 * `chime listen`: a local development receiver, like `stripe listen`. Point a job's callback at it and it prints
 * one block per callback: method, path, webhook-id, attempt, whether the Standard Webhooks signature verifies
 * (with `verifyWebhook`, the same code receivers import from `@chime/receiver`) and, given the service's JWKS URL,
 * whether `Chime-Signature` verifies; then the body, JSON pretty-printed. It answers every request `200`, so
 * Chime records the callback as delivered.
 *
 * An async job's attempt (API.md "Long-running jobs": `Chime-Completion-Url` and `Chime-Completion-Token`) is shown with
 * its completion URL. With `completeAfterMs` (`--complete-after MS`) the listener plays a long job: it answers `202`,
 * heartbeats every HEARTBEAT_EVERY_MS meanwhile, and after that long reports `succeeded` (output `{ "completedBy":
 * "chime listen", "afterMs" }`) with the token, printing a `<--` line with Chime's answer. Without it, it answers `200`
 * and prints the `curl` that reports the end by hand.
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
import { type ChimeCompletion, completionOf, decodeSigningSecret, verifyWebhook } from '@chime/receiver';
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
  /**
   * For an async job's attempt: answer `202` and report `succeeded` this many ms later (heartbeating meanwhile).
   * Absent: answer `200` and leave the report to the developer.
   */
  completeAfterMs?: number;
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

/** How often a long job played with `completeAfterMs` heartbeats, in ms (below the contract's 10 s minimum). */
export const HEARTBEAT_EVERY_MS = 5_000;

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
  /** The timers of long jobs being played: cleared by `close()`. */
  const timers = new Set<ReturnType<typeof setTimeout>>();

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
      let completion: ChimeCompletion | null = null;
      try {
        completion = completionOf(req.headers);
      } catch {
        // Half a pair of completion headers: shown as is by describe, nothing to report to.
      }
      const playing = completion !== null && opts.completeAfterMs !== undefined;
      void describe(req, body, size > MAX_BODY_BYTES, completion)
        .catch((err: unknown) => `--> ${req.method} ${req.url}\n    (could not describe this request: ${String(err)})\n`)
        .then((block) => {
          opts.out.write(block);
          res.writeHead(playing ? 202 : 200, { 'content-type': 'application/json' });
          res.end(playing ? '{"accepted":true}' : '{"received":true}');
          if (playing) playLongJob(completion!, req.headers['chime-run-id'], opts.completeAfterMs!);
        });
    });
  });

  /** Heartbeats every HEARTBEAT_EVERY_MS, then reports `succeeded` after `afterMs`, printing Chime's answer. */
  function playLongJob(completion: ChimeCompletion, runId: string | string[] | undefined, afterMs: number): void {
    const startedAt = Date.now();
    const heartbeat = setInterval(() => {
      completion.heartbeat({ elapsedMs: Date.now() - startedAt }).catch((err: unknown) => {
        opts.out.write(`<-- heartbeat of run ${String(runId)} refused: ${(err as Error).message}\n\n`);
      });
    }, HEARTBEAT_EVERY_MS);
    timers.add(heartbeat);
    const done = setTimeout(() => {
      clearInterval(heartbeat);
      timers.delete(heartbeat);
      timers.delete(done);
      completion.complete({ status: 'succeeded', output: { completedBy: 'chime listen', afterMs } }).then(
        (run) => opts.out.write(`<-- run ${String(runId)}: reported succeeded after ${afterMs} ms; the run is ${String(run.status)}\n\n`),
        (err: unknown) => opts.out.write(`<-- run ${String(runId)}: the report was refused: ${(err as Error).message}\n\n`),
      );
    }, afterMs);
    timers.add(done);
  }

  async function describe(
    req: http.IncomingMessage,
    body: string,
    truncated: boolean,
    completion: ChimeCompletion | null,
  ): Promise<string> {
    const h = req.headers;
    const one = (name: string) => {
      const v = h[name];
      return Array.isArray(v) ? v.join(', ') : v;
    };
    const lines = [`--> ${req.method} ${req.url}  ${new Date().toISOString()}`];
    const field = (name: string, value: string) => lines.push(`    ${`${name}:`.padEnd(17)}${value}`);
    field('webhook-id', one('webhook-id') ?? '(none)');
    field('attempt', one('chime-attempt') ?? '(none)');
    if (completion) {
      field(
        'completion',
        opts.completeAfterMs === undefined
          ? `awaited at ${completion.url} (report it: curl -X POST ${completion.url} -H 'authorization: Bearer ${completion.token}' -H 'content-type: application/json' -d '{"status":"succeeded"}'; or pass --complete-after MS)`
          : `answered 202; reporting succeeded in ${opts.completeAfterMs} ms to ${completion.url}`,
      );
    }

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
        for (const t of timers) clearTimeout(t);
        timers.clear();
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
