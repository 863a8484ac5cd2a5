/**
 * A small OAuth 2.0 authorization server on 127.0.0.1 for tests: the token endpoint of the client credentials grant
 * (RFC 6749 §4.4), client authentication by HTTP Basic (§2.3.1, id and secret form-urlencoded before base64). It
 * counts token requests, issues `tok-<n>` tokens with a configurable `expires_in`, knows which tokens are valid (a
 * receiver asks it, as a resource server would), can revoke them, and can be told to fail (a status, a body that is
 * not JSON, no `access_token`) or to answer slowly.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One token request as the server read it. */
export type TokenRequest = {
  grantType: string | null;
  clientId: string | null;
  clientSecret: string | null;
  scope: string | null;
  audience: string | null;
  contentType: string | undefined;
  /** The token issued for it, or null when it was refused. */
  issued: string | null;
};

/** How the token endpoint answers. */
export type TokenMode = { kind: 'ok' } | { kind: 'status'; status: number } | { kind: 'not-json' } | { kind: 'no-token' };

export type TokenServer = {
  /** The token endpoint's URL (`…/oauth/token`). */
  tokenUrl: string;
  /** Every token request, in order. */
  requests: TokenRequest[];
  /** How the next requests are answered (default ok). */
  mode: TokenMode;
  /** `expires_in` of issued tokens, in seconds; undefined: left out. */
  expiresIn: number | undefined;
  /** Answer after this many ms (default 0). */
  delayMs: number;
  /** Whether `token` was issued here and not revoked. */
  valid(token: string | undefined): boolean;
  /** Revokes every token issued so far. */
  revokeAll(): void;
  /** Back to the start: no requests, no tokens (the next is `tok-1`), answering ok at once with `expires_in` 3600. */
  reset(): void;
  close(): Promise<void>;
};

/**
 * Starts the server.
 * @param client the one registered client's id and secret: other credentials get `401 {"error":"invalid_client"}`
 */
export async function startTokenServer(client: { clientId: string; clientSecret: string }): Promise<TokenServer> {
  const issued = new Set<string>();
  let counter = 0;
  const server: TokenServer = {
    tokenUrl: '',
    requests: [],
    mode: { kind: 'ok' },
    expiresIn: 3600,
    delayMs: 0,
    valid: (token) => token !== undefined && issued.has(token),
    revokeAll: () => issued.clear(),
    reset() {
      issued.clear();
      counter = 0;
      server.requests.length = 0;
      server.mode = { kind: 'ok' };
      server.expiresIn = 3600;
      server.delayMs = 0;
    },
    async close() {
      http_.closeAllConnections();
      await new Promise<void>((r) => http_.close(() => r()));
    },
  };
  const http_ = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const [id, secret] = basicCredentials(req.headers.authorization);
      const request: TokenRequest = {
        grantType: form.get('grant_type'),
        clientId: id,
        clientSecret: secret,
        scope: form.get('scope'),
        audience: form.get('audience'),
        contentType: req.headers['content-type'],
        issued: null,
      };
      server.requests.push(request);
      const answer = (status: number, body: string, type = 'application/json') => {
        const send = () => {
          res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
          res.end(body);
        };
        if (server.delayMs > 0) setTimeout(send, server.delayMs);
        else send();
      };
      if (req.method !== 'POST' || req.url !== '/oauth/token') return answer(404, '{"error":"not_found"}');
      if (id !== client.clientId || secret !== client.clientSecret) return answer(401, '{"error":"invalid_client"}');
      if (request.grantType !== 'client_credentials') return answer(400, '{"error":"unsupported_grant_type"}');
      const mode = server.mode;
      if (mode.kind === 'status') return answer(mode.status, '{"error":"temporarily_unavailable","error_description":"down"}');
      if (mode.kind === 'not-json') return answer(200, '<html>maintenance</html>', 'text/html');
      if (mode.kind === 'no-token') return answer(200, '{"token_type":"Bearer"}');
      const token = `tok-${++counter}`;
      issued.add(token);
      request.issued = token;
      answer(
        200,
        JSON.stringify({
          access_token: token,
          token_type: 'Bearer',
          ...(server.expiresIn === undefined ? {} : { expires_in: server.expiresIn }),
        }),
      );
    });
  });
  await new Promise<void>((r) => http_.listen(0, '127.0.0.1', () => r()));
  server.tokenUrl = `http://127.0.0.1:${(http_.address() as AddressInfo).port}/oauth/token`;
  return server;
}

/** The client id and secret of an `Authorization: Basic` header, form-decoded (RFC 6749 §2.3.1); nulls without one. */
function basicCredentials(header: string | undefined): [string | null, string | null] {
  const m = /^Basic (.+)$/i.exec(header ?? '');
  if (!m) return [null, null];
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return [null, null];
  const formDecode = (v: string) => decodeURIComponent(v.replace(/\+/g, ' '));
  return [formDecode(decoded.slice(0, colon)), formDecode(decoded.slice(colon + 1))];
}
