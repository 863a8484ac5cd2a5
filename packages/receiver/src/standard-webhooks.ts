/**
 * The Standard Webhooks signature of Chime callbacks (https://www.standardwebhooks.com, spec.md "Verifying webhooks";
 * API.md "The callback request"):
 * - `webhook-id`: the message id (Chime: the run id, the same on every attempt: the receiver's dedup key; a
 *   notification's event id for notification deliveries);
 * - `webhook-timestamp`: the attempt's time, integer Unix seconds;
 * - `webhook-signature`: space-separated `v1,<base64>` entries, each the HMAC-SHA256 of the signed content
 *   `${webhook-id}.${webhook-timestamp}.${body}` under one secret (two entries during a secret rotation);
 * - a secret is `whsec_<base64>`; the HMAC key is the base64-decoded part after `whsec_`.
 *
 * WebCrypto (`crypto.subtle`), `atob`, `TextEncoder` and `Headers` only, no `node:` module: runs on Node ≥ 20, Deno,
 * Bun, browsers and edge workers alike. WebCrypto is asynchronous, so `verifyWebhook` returns a Promise.
 */
import { base64Decode, constantTimeEqual, fail, type HeadersLike, headerValue, utf8 } from './internal.ts';
import type { VerifyResult } from './result.ts';

/** The prefix of Standard Webhooks symmetric secrets. */
export const SECRET_PREFIX = 'whsec_';
/** Default tolerance between `webhook-timestamp` and the receiver's clock, both ways, in seconds (the spec's 5 min). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * An incoming request as `verifyWebhook` needs it.
 * - `headers`: a fetch `Headers`, or a plain record such as Node's `IncomingMessage.headers` (names matched
 *   case-insensitively; an array value, i.e. a repeated header, is accepted for `webhook-signature` only, its
 *   entries joined by a space);
 * - `body`: the raw body exactly as received (UTF-8 text), before any JSON parsing: re-serialized JSON does not verify.
 */
export type WebhookRequest = {
  headers: HeadersLike;
  body: string;
};

/** Options of `verifyWebhook`. */
export type VerifyOptions = {
  /** Largest accepted |now − webhook-timestamp|, in seconds (default 300, the spec's). */
  toleranceSeconds?: number;
  /** The receiver's "now", epoch milliseconds (default `Date.now()`); for tests and replays of recorded requests. */
  nowMs?: number;
};

/**
 * Verifies the Standard Webhooks signature of a request (https://www.standardwebhooks.com, spec.md "Verifying
 * webhooks").
 *
 * Passes when the timestamp is within `toleranceSeconds` of now (in the past or the future) and any `v1` entry of
 * `webhook-signature` equals HMAC-SHA256(key, `${id}.${timestamp}.${body}`) under any of `secrets` (pass the new
 * and the old secret while rotating). Signatures are compared in constant time; entries of other versions (`v1a`,
 * …) are ignored.
 *
 * Reasons when it does not pass: `missing webhook-id header` (or `webhook-timestamp`, `webhook-signature`),
 * `more than one webhook-id header`, `webhook-timestamp is not integer Unix seconds`,
 * `webhook-timestamp is too old (N s ago)`, `webhook-timestamp is too far in the future (N s ahead)`,
 * `webhook-signature has no v1 signature`, `no signature matches the secret(s)`.
 *
 * @param request the headers and the raw body
 * @param secrets one `whsec_<base64>` secret or several (the `whsec_` prefix may be left off)
 * @param opts `toleranceSeconds` (default 300), `nowMs`
 * @returns `{ ok: true, id, timestamp }` with `id` = `webhook-id` and `timestamp` = `webhook-timestamp` (Unix
 *   seconds), or `{ ok: false, reason }`; never rejects for a bad request
 * @throws TypeError when no secret is given or one is not valid base64, `body` is not a string, or `toleranceSeconds`
 *   is not a finite number ≥ 0 (configuration errors of the receiver, not a bad request)
 */
export async function verifyWebhook(
  request: WebhookRequest,
  secrets: string | readonly string[],
  opts: VerifyOptions = {},
): Promise<VerifyResult> {
  const keys = decodeSecrets(secrets);
  checkRequest(request, 'verifyWebhook');
  const toleranceSeconds = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  // NaN would pass every timestamp (each comparison false): replay protection silently off.
  if (typeof toleranceSeconds !== 'number' || !Number.isFinite(toleranceSeconds) || toleranceSeconds < 0) {
    throw new TypeError('verifyWebhook: toleranceSeconds must be a number of seconds ≥ 0');
  }
  const nowSec = Math.floor((opts.nowMs ?? Date.now()) / 1000);

  const id = headerValue(request.headers, 'webhook-id', false);
  const ts = headerValue(request.headers, 'webhook-timestamp', false);
  const sig = headerValue(request.headers, 'webhook-signature', true);
  for (const [name, v] of [
    ['webhook-id', id],
    ['webhook-timestamp', ts],
    ['webhook-signature', sig],
  ] as const) {
    if (v === undefined || v === '') return fail(`missing ${name} header`);
    if (v === null) return fail(`more than one ${name} header`);
  }
  const msgId = id!;
  const tsText = ts!.trim();
  if (!/^\d{1,15}$/.test(tsText)) return fail('webhook-timestamp is not integer Unix seconds');
  const timestamp = Number(tsText);
  if (nowSec - timestamp > toleranceSeconds) return fail(`webhook-timestamp is too old (${nowSec - timestamp} s ago)`);
  if (timestamp - nowSec > toleranceSeconds) return fail(`webhook-timestamp is too far in the future (${timestamp - nowSec} s ahead)`);

  const candidates: Uint8Array[] = [];
  for (const entry of sig!.split(/\s+/)) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue;
    const bytes = base64Decode(entry.slice(comma + 1));
    if (bytes) candidates.push(bytes);
  }
  if (candidates.length === 0) return fail('webhook-signature has no v1 signature');

  const content = utf8(`${msgId}.${tsText}.${request.body}`);
  for (const key of keys) {
    const expected = await hmacSha256(key, content);
    // Every candidate is compared, so the time taken does not depend on which one (if any) matched.
    let matched = false;
    for (const c of candidates) matched = constantTimeEqual(expected, c) || matched;
    if (matched) return { ok: true, id: msgId, timestamp };
  }
  return fail('no signature matches the secret(s)');
}

/**
 * The HMAC key of a Standard Webhooks secret: the base64-decoded part after `whsec_` (the prefix is optional).
 * @param secret `whsec_<base64>`
 * @returns the key bytes
 * @throws TypeError when it is not a string, empty or not base64
 */
export function decodeSigningSecret(secret: string): Uint8Array {
  if (typeof secret !== 'string') throw new TypeError('a signing secret must be a string');
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = base64Decode(b64);
  if (!key || key.length === 0) throw new TypeError(`not a Standard Webhooks secret (expected ${SECRET_PREFIX}<base64>)`);
  return key;
}

/**
 * The HMAC keys of one secret or several.
 * @throws TypeError when none is given or one is not a secret
 */
export function decodeSecrets(secrets: string | readonly string[]): Uint8Array[] {
  const keys = (typeof secrets === 'string' ? [secrets] : Array.isArray(secrets) ? secrets : []).map(decodeSigningSecret);
  if (keys.length === 0) throw new TypeError('verifyWebhook: no signing secret given');
  return keys;
}

/**
 * @throws TypeError when `request` has no headers or its body is not a string (a parsed body, a Buffer: the receiver
 *   must pass the raw text)
 */
export function checkRequest(request: WebhookRequest, fn: string): void {
  if (typeof request !== 'object' || request === null || typeof request.headers !== 'object' || request.headers === null) {
    throw new TypeError(`${fn}: request.headers must be a Headers or a record of header values`);
  }
  if (typeof request.body !== 'string') {
    throw new TypeError(`${fn}: request.body must be the raw body as a string (not parsed JSON, not bytes)`);
  }
}

async function hmacSha256(key: Uint8Array, data: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey('raw', key as Uint8Array<ArrayBuffer>, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return new Uint8Array(await crypto.subtle.sign('HMAC', k, data));
}
