/**
 * The `Chime-Signature` header of Chime callbacks (API.md "The callback request"): a JWT (RFC 7519) in JWS Compact
 * Serialization (RFC 7515 §7.1), signed with the service's key (`alg` EdDSA over Ed25519, RFC 8037; ES256 allowed),
 * the key's `kid` in the protected header, verifiable against the service's `/.well-known/jwks.json` (RFC 7517 §5).
 * Its claims:
 * - `iss`: `chime`;
 * - `sub`: the callback URL, exactly as the job configured it;
 * - `aud`: the job's `callback.jwtAudience`, when it has one;
 * - `iat`: the attempt's time (Unix seconds, equal to `webhook-timestamp`); `exp`: `iat` + 300;
 * - `jti`: `<runId>.<attempt>`;
 * - `body`: base64url (RFC 4648 §5, no padding) of the SHA-256 of the raw body's UTF-8 bytes: whatever the body is
 *   (JSON, text, XML, a form), the bytes exactly as sent.
 *
 * Unlike the Standard Webhooks signature it needs no shared secret (the receiver trusts the service's public keys),
 * and it binds the request to its URL: a token captured from one receiver does not verify at another.
 *
 * Verification goes through jose (https://github.com/panva/jose: `createRemoteJWKSet`, `jwtVerify`), which uses
 * WebCrypto only, so this runs on Node ≥ 20 and in Workers alike.
 */
import { createLocalJWKSet, createRemoteJWKSet, type JSONWebKeySet, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { base64UrlEncode, fail, headerValue, utf8 } from './internal.ts';
import type { VerifyResult } from './result.ts';
import { checkRequest, type WebhookRequest } from './standard-webhooks.ts';

/** The `iss` claim of every Chime-Signature token. */
export const JWT_ISSUER = 'chime';
/** Default leeway for `exp` and `iat` against the receiver's clock, in seconds. */
export const DEFAULT_CLOCK_TOLERANCE_SECONDS = 60;
/** The JWS algorithms accepted (Chime signs with EdDSA; API.md also allows ES256); any other `alg` is refused. */
export const JWT_ALGORITHMS: readonly string[] = ['EdDSA', 'Ed25519', 'ES256'];

/**
 * An incoming request as `verifyChimeSignature` needs it: the headers and raw body as for `verifyWebhook`, and
 * `url`, the URL this receiver is called at, exactly as configured as the job's `callback.url` (the token's `sub`).
 * Compared after URL normalization (`new URL(url).href`), so `https://Example.com` equals `https://example.com/`.
 */
export type ChimeSignatureRequest = WebhookRequest & { url: string | URL };

/** Where the public keys come from, and the clock. */
export type ChimeSignatureOptions = {
  /**
   * The service's JWKS, e.g. `https://chime.example.com/.well-known/jwks.json`. Fetched lazily through jose's
   * `createRemoteJWKSet` (cached for 10 minutes, refetched at once, at most every 30 s, when a token names an
   * unknown `kid`: a key rotation), one key set per URL for the whole process.
   */
  jwksUrl?: string | URL;
  /** The key set itself instead of `jwksUrl`: a JWKS object (`{ keys: [...] }`) or a jose key resolver; for tests. */
  jwks?: JSONWebKeySet | JWTVerifyGetKey;
  /** Leeway for `exp` (in the past) and `iat` (in the future) against the receiver's clock, in seconds (default 60). */
  clockToleranceSeconds?: number;
  /**
   * The audience this receiver expects (the job's `callback.jwtAudience`), or several it accepts: the token's `aud`
   * must be one of them (RFC 7519 §4.1.3). Absent: `aud` is not checked.
   */
  audience?: string | readonly string[];
  /** The receiver's "now", epoch milliseconds (default `Date.now()`); for tests and replays of recorded requests. */
  nowMs?: number;
};

/** One remote key set per JWKS URL: jose's cache and rotation handling live in it. */
const remoteKeySets = new Map<string, JWTVerifyGetKey>();
/** One local key set per JWKS object given as `jwks`. */
const localKeySets = new WeakMap<JSONWebKeySet, JWTVerifyGetKey>();

/**
 * Verifies the `Chime-Signature` JWT of a request (RFC 7519 §7.2, RFC 7515 §5.2, through jose's `jwtVerify`).
 *
 * Passes when the token's signature verifies with the JWKS key named by its `kid` (`alg` one of JWT_ALGORITHMS,
 * `typ` JWT), `iss` is `chime`, `exp` has not passed and `iat` is not in the future (both with
 * `clockToleranceSeconds`), `sub` equals `request.url`, the `body` claim equals base64url(SHA-256(body)), and, with
 * `audience`, `aud` is one of it.
 *
 * Reasons when it does not pass: `missing Chime-Signature header`, `more than one chime-signature header`,
 * `signature invalid: <jose code> (<jose message>)` (a malformed token, a bad signature, a `kid` not in the JWKS,
 * an expired token, another issuer, a missing claim, …), `JWKS unavailable: …` (the JWKS could not be fetched),
 * `JWT issued in the future (N s ahead)`, `JWT for another URL`, `body hash mismatch`.
 *
 * @param request the headers, the raw body and the URL this receiver was called at
 * @param opts `jwksUrl` (or `jwks`), `clockToleranceSeconds` (default 60), `audience`, `nowMs`
 * @returns `{ ok: true, id, timestamp }` or `{ ok: false, reason }`; never rejects for a bad request.
 *   `id` is the run id from the signed `jti` (`<runId>.<attempt>`, the part before the last dot), not the unsigned
 *   `webhook-id` header: for a job's callback the two are equal; for a notification delivery `webhook-id` is the
 *   event id (use `verifyWebhook`'s or `verifyAll`'s id to deduplicate events). `timestamp` is `iat`, Unix seconds.
 * @throws TypeError on a configuration error: neither `jwksUrl` nor `jwks`, a `jwksUrl` that is not a URL, a bad
 *   `clockToleranceSeconds`, or `request.url`/`request.body` missing
 */
export async function verifyChimeSignature(request: ChimeSignatureRequest, opts: ChimeSignatureOptions): Promise<VerifyResult> {
  const getKey = keySetOf(opts);
  checkRequest(request, 'verifyChimeSignature');
  const url = String(request.url ?? '');
  if (url === '') throw new TypeError('verifyChimeSignature: request.url must be the URL this receiver is called at');
  const tolerance = clockToleranceOf(opts);
  const nowSec = Math.floor((opts.nowMs ?? Date.now()) / 1000);

  const token = headerValue(request.headers, 'chime-signature', false);
  if (token === undefined || token === '') return fail('missing Chime-Signature header');
  if (token === null) return fail('more than one chime-signature header');

  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, getKey, {
      issuer: JWT_ISSUER,
      algorithms: [...JWT_ALGORITHMS],
      typ: 'JWT',
      requiredClaims: ['sub', 'iat', 'exp', 'jti', 'body'],
      clockTolerance: tolerance,
      currentDate: new Date(nowSec * 1000),
      ...(opts.audience === undefined ? {} : { audience: typeof opts.audience === 'string' ? opts.audience : [...opts.audience] }),
    }));
  } catch (err) {
    return fail(joseReason(err));
  }

  const iat = payload.iat as number; // a NumericDate: required and checked by jwtVerify
  if (iat - nowSec > tolerance) return fail(`JWT issued in the future (${iat - nowSec} s ahead)`);
  if (typeof payload.sub !== 'string' || normalizeUrl(payload.sub) !== normalizeUrl(url)) return fail('JWT for another URL');
  if (typeof payload.body !== 'string' || payload.body !== (await bodyHash(request.body))) return fail('body hash mismatch');
  const jti = typeof payload.jti === 'string' ? payload.jti : '';
  const dot = jti.lastIndexOf('.');
  return { ok: true, id: dot > 0 ? jti.slice(0, dot) : jti, timestamp: iat };
}

/**
 * The `body` claim Chime puts in its tokens for this raw body: base64url (no padding) of SHA-256 of its UTF-8 bytes.
 * @param body the raw body text
 */
export async function bodyHash(body: string): Promise<string> {
  return base64UrlEncode(new Uint8Array(await crypto.subtle.digest('SHA-256', utf8(body))));
}

/**
 * The key resolver for `opts`, checking the configuration.
 * @throws TypeError when neither `jwksUrl` nor `jwks` is usable
 */
export function keySetOf(opts: ChimeSignatureOptions): JWTVerifyGetKey {
  if (typeof opts !== 'object' || opts === null) throw new TypeError('verifyChimeSignature: options { jwksUrl } are required');
  const { jwks, jwksUrl } = opts;
  if (typeof jwks === 'function') return jwks;
  if (typeof jwks === 'object' && jwks !== null) {
    if (!Array.isArray(jwks.keys)) throw new TypeError('verifyChimeSignature: jwks must be a JSON Web Key Set ({ keys: [...] })');
    let set = localKeySets.get(jwks);
    if (!set) localKeySets.set(jwks, (set = createLocalJWKSet(jwks)));
    return set;
  }
  if (jwksUrl === undefined || jwksUrl === null || jwksUrl === '') {
    throw new TypeError("verifyChimeSignature: jwksUrl (the service's /.well-known/jwks.json) is required");
  }
  let href: string;
  try {
    href = new URL(String(jwksUrl)).href;
  } catch {
    throw new TypeError(`verifyChimeSignature: jwksUrl is not a URL: ${String(jwksUrl)}`);
  }
  if (!/^https?:$/.test(new URL(href).protocol)) throw new TypeError(`verifyChimeSignature: jwksUrl must be http(s): ${href}`);
  let set = remoteKeySets.get(href);
  if (!set) remoteKeySets.set(href, (set = createRemoteJWKSet(new URL(href))));
  return set;
}

/** @throws TypeError when `clockToleranceSeconds` is not a finite number ≥ 0 */
function clockToleranceOf(opts: ChimeSignatureOptions): number {
  const t = opts.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_SECONDS;
  if (typeof t !== 'number' || !Number.isFinite(t) || t < 0) {
    throw new TypeError('verifyChimeSignature: clockToleranceSeconds must be a number of seconds ≥ 0');
  }
  return t;
}

/** A URL in its WHATWG-serialized form (lower-case scheme and host, default port dropped, `/` path); as is when not one. */
function normalizeUrl(u: string): string {
  try {
    return new URL(u).href;
  } catch {
    return u;
  }
}

/** JWKS problems (the service cannot be asked) apart from token problems, each with jose's code and message. */
const JWKS_ERROR_CODES = new Set(['ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID', 'ERR_JOSE_GENERIC']);

/** The reason for an error of `jwtVerify`: a jose error (it has an `ERR_…` code) or a failed JWKS fetch. */
function joseReason(err: unknown): string {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  const message = err instanceof Error ? err.message : String(err);
  if (typeof code === 'string' && code.startsWith('ERR_')) {
    return `${JWKS_ERROR_CODES.has(code) ? 'JWKS unavailable' : 'signature invalid'}: ${code} (${message})`;
  }
  return `JWKS unavailable: ${message}`;
}
