/**
 * OAuth 2.0 access tokens for `callback.auth` of type `oauth2` (API.md "Destination control"): the client credentials
 * grant (RFC 6749 §4.4), fetched from the job's `tokenUrl` with the dispatcher's own `Deliver` (on Node the undici
 * Agent behind the destination guard, on Workers `fetch` with its URL check), so a token request is held to the very
 * rules of a callback. No OAuth library: the grant is one form POST, and a library would bring its own HTTP client
 * (or want a WHATWG `fetch`, which the guarded `Deliver` is not), where the guard is the point.
 *
 * Tokens are cached in memory per (tokenUrl, clientId, scope, audience, secret) until shortly before they expire
 * (`refreshAtMs`); concurrent attempts that need the same token share one request (single flight); a failed request is
 * not cached. The cache is a dispatcher's own: every dispatcher fetches its tokens itself.
 */
import type { HttpResult } from '../domain/attempt-outcome.ts';
import type { Clock } from '../domain/clock.ts';
import type { CallbackAuth } from '../domain/job.ts';
import type { Deliver } from './deliver.ts';

/** Longest a token request may take, in ms (less when the attempt has less time left). */
export const TOKEN_REQUEST_TIMEOUT_MS = 10_000;
/** How long a token without `expires_in` is used, in ms (RFC 6749 §5.1 makes `expires_in` only RECOMMENDED). */
export const DEFAULT_TOKEN_TTL_MS = 5 * 60_000;
/** A token is refreshed this long before it expires, at most (ms) … */
export const TOKEN_REFRESH_MARGIN_MS = 30_000;
/** … and at most this share of its lifetime, for short-lived tokens. */
export const TOKEN_REFRESH_MARGIN_SHARE = 0.1;
/** Bytes of a token response read (a token response is small; more is not a token). */
const TOKEN_RESPONSE_BYTES = 64 * 1024;
/** Most cached tokens; past it the cache starts over. */
const TOKEN_CACHE_SIZE = 10_000;
/** RFC 6750 §2.1 b64token, loosened to any visible ASCII: what a header value can carry as sent. */
const TOKEN_CHARS = /^[\x21-\x7e]+$/;

/** An OAuth2 `callback.auth` with its client secret, opened. */
export type OAuth2Client = Extract<CallbackAuth, { type: 'oauth2' }> & { clientSecret: string };

/** A token, or why none could be had (the attempt's error, class `auth_token_failed`). */
export type TokenResult = { ok: true; token: string } | { ok: false; message: string };

/** Where the tokens of a dispatcher come from. */
export interface OAuthTokens {
  /**
   * A valid token for `client`: the cached one, else one fetched now (shared with concurrent callers).
   * @param timeoutMs the most the caller can wait for a new token (its attempt's time left), in ms
   */
  get(client: OAuth2Client, timeoutMs: number): Promise<TokenResult>;
  /**
   * A new token after a callback answered `401` to `stale`: one fetched now, unless another caller already replaced
   * `stale` (then that one).
   */
  refresh(client: OAuth2Client, stale: string, timeoutMs: number): Promise<TokenResult>;
}

type Cached = { token: string; refreshAtMs: number };

/**
 * A token cache over `deliver`, its expiry judged on `clock`.
 * @param userAgent the token request's `User-Agent` (the callbacks')
 */
export function createOAuthTokens(deps: { deliver: Deliver; clock: Clock; userAgent: string }): OAuthTokens {
  const cache = new Map<string, Cached>();
  const inFlight = new Map<string, Promise<TokenResult>>();
  const fetchShared = (key: string, client: OAuth2Client, timeoutMs: number): Promise<TokenResult> => {
    let pending = inFlight.get(key);
    if (pending === undefined) {
      const startedAtMs = deps.clock.now();
      pending = requestToken(deps, client, Math.min(TOKEN_REQUEST_TIMEOUT_MS, timeoutMs)).then((r) => {
        inFlight.delete(key);
        if (r.ok && r.ttlMs > 0) {
          if (cache.size >= TOKEN_CACHE_SIZE) cache.clear();
          // Counted from the request's start: the server's clock began before the answer reached us.
          cache.set(key, { token: r.token, refreshAtMs: startedAtMs + r.ttlMs - refreshMarginMs(r.ttlMs) });
        }
        return r.ok ? { ok: true, token: r.token } : r;
      });
      inFlight.set(key, pending);
    }
    return pending;
  };
  const valid = (key: string): Cached | null => {
    const hit = cache.get(key);
    return hit && hit.refreshAtMs > deps.clock.now() ? hit : null;
  };
  return {
    get(client, timeoutMs) {
      const key = cacheKey(client);
      const hit = valid(key);
      return hit ? Promise.resolve({ ok: true, token: hit.token }) : fetchShared(key, client, timeoutMs);
    },
    refresh(client, stale, timeoutMs) {
      const key = cacheKey(client);
      const hit = valid(key);
      if (hit && hit.token !== stale) return Promise.resolve({ ok: true, token: hit.token });
      if (hit) cache.delete(key);
      return fetchShared(key, client, timeoutMs);
    },
  };
}

/**
 * How long before its expiry a token of lifetime `ttlMs` is replaced: TOKEN_REFRESH_MARGIN_MS, or a tenth of its
 * lifetime when that is shorter (a 60 s token is used 54 s).
 */
export function refreshMarginMs(ttlMs: number): number {
  return Math.min(TOKEN_REFRESH_MARGIN_MS, ttlMs * TOKEN_REFRESH_MARGIN_SHARE);
}

/** The cache key: every part that changes which token the server issues (the secret too: a rotated one must be used). */
function cacheKey(c: OAuth2Client): string {
  return JSON.stringify([c.tokenUrl, c.clientId, c.scope ?? null, c.audience ?? null, c.clientSecret]);
}

/**
 * One client credentials token request (RFC 6749 §4.4.2): `POST tokenUrl` with the form `grant_type=client_credentials`
 * (and `scope`, and `audience` as Auth0 and others take it, when set), the client authenticated with HTTP Basic
 * (RFC 6749 §2.3.1: id and secret form-urlencoded first), redirects not followed.
 * @returns the token and how long it may be used (ms; 0: this once), or why there is none; never rejects
 */
async function requestToken(
  deps: { deliver: Deliver; clock: Clock; userAgent: string },
  client: OAuth2Client,
  timeoutMs: number,
): Promise<{ ok: true; token: string; ttlMs: number } | { ok: false; message: string }> {
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (client.scope) form.set('scope', client.scope);
  if (client.audience) form.set('audience', client.audience);
  const credentials = `${formEncode(client.clientId)}:${formEncode(client.clientSecret)}`;
  const result = await deps.deliver(
    {
      url: client.tokenUrl,
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        authorization: `Basic ${base64Utf8(credentials)}`,
        'user-agent': deps.userAgent,
      },
      body: form.toString(),
      timeoutMs: Math.max(1, timeoutMs),
      keepBodyBytes: TOKEN_RESPONSE_BYTES,
    },
    () => deps.clock.now(),
  );
  return tokenOf(result, client.tokenUrl);
}

/**
 * Reads a token response (RFC 6749 §5.1, §5.2).
 * @returns the token and its lifetime (`expires_in` seconds; absent: DEFAULT_TOKEN_TTL_MS), or why it is not one
 */
export function tokenOf(result: HttpResult, tokenUrl: string): { ok: true; token: string; ttlMs: number } | { ok: false; message: string } {
  const where = `token endpoint ${originOf(tokenUrl)}`;
  if (result.kind === 'error') return { ok: false, message: `${where}: ${result.message}` };
  const text = result.body ? new TextDecoder().decode(result.body) : result.bodyExcerpt;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const fields = json !== null && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, unknown>) : null;
  if (result.status < 200 || result.status > 299) {
    // RFC 6749 §5.2: `error` is a code of printable ASCII; the description is left out (it may echo request data).
    const code = typeof fields?.error === 'string' && /^[\x20-\x7e]{1,100}$/.test(fields.error) ? ` (error ${fields.error})` : '';
    return { ok: false, message: `${where} answered ${result.status}${code}` };
  }
  if (fields === null) return { ok: false, message: `${where} answered ${result.status} without a JSON object` };
  const token = fields.access_token;
  if (typeof token !== 'string' || token === '') return { ok: false, message: `${where} answered without an access_token` };
  if (!TOKEN_CHARS.test(token)) return { ok: false, message: `${where} answered an access_token that cannot be sent in a header` };
  const expiresIn = typeof fields.expires_in === 'string' ? Number(fields.expires_in) : fields.expires_in;
  const ttlMs = typeof expiresIn === 'number' && Number.isFinite(expiresIn) ? Math.max(0, expiresIn * 1000) : DEFAULT_TOKEN_TTL_MS;
  return { ok: true, token, ttlMs };
}

/** RFC 6749 Appendix B: application/x-www-form-urlencoded encoding of one value (`URLSearchParams`' own). */
function formEncode(v: string): string {
  return new URLSearchParams({ v }).toString().slice(2);
}

/** Base64 of the UTF-8 bytes of `text` (portable: `btoa` takes Latin-1 only). */
export function base64Utf8(text: string): string {
  let binary = '';
  for (const b of new TextEncoder().encode(text)) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** A URL's origin for a message (no path or query, which may carry more than the tenant wants logged). */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid URL)';
  }
}
