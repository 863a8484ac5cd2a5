/**
 * Verifying Chime callbacks on the receiving side (`import { verifyWebhook } from 'chime/receiver'`).
 *
 * Chime signs every callback as the Standard Webhooks specification says (https://www.standardwebhooks.com,
 * spec.md "Verifying webhooks"; API.md "The callback request"):
 * - `webhook-id`: the message id (Chime: the run id, the same on every attempt: the receiver's dedup key);
 * - `webhook-timestamp`: the attempt's time, integer Unix seconds;
 * - `webhook-signature`: space-separated `v1,<base64>` entries, each the HMAC-SHA256 of the signed content
 *   `${webhook-id}.${webhook-timestamp}.${body}` under one secret (two entries during a secret rotation);
 * - a secret is `whsec_<base64>`; the HMAC key is the base64-decoded part after `whsec_`.
 *
 * Runtime-portable: WebCrypto (`crypto.subtle`), `atob`, `TextEncoder` and `Headers` only, no `node:` module, so it
 * runs on Node ≥ 20, Deno, Bun, browsers and edge workers alike. WebCrypto is asynchronous, so `verifyWebhook`
 * returns a Promise.
 */

/** The prefix of Standard Webhooks symmetric secrets. */
export const SECRET_PREFIX = 'whsec_';
/** Default tolerance between `webhook-timestamp` and the receiver's clock, both ways, in seconds (the spec's 5 min). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * An incoming request as the verifier needs it.
 * - `headers`: a fetch `Headers`, or a plain record such as Node's `IncomingMessage.headers` (names matched
 *   case-insensitively; an array value, i.e. a repeated header, is accepted for `webhook-signature` only, its
 *   entries joined by a space);
 * - `body`: the raw body exactly as received (UTF-8 text), before any JSON parsing: re-serialized JSON does not verify.
 */
export type WebhookRequest = {
  headers: Headers | Record<string, string | string[] | undefined>;
  body: string;
};

export type VerifyOptions = {
  /** Largest accepted |now − webhook-timestamp|, in seconds (default 300). */
  toleranceSeconds?: number;
  /** The receiver's "now", epoch milliseconds (default `Date.now()`); for tests and replays of recorded requests. */
  nowMs?: number;
};

/**
 * The verdict.
 * - ok: `webhookId` is the `webhook-id` header (deduplicate on it), `timestamp` the `webhook-timestamp` (Unix seconds);
 * - not ok: `reason` says why, in words fit for a log line (never a secret or an expected signature).
 */
export type VerifyResult = { ok: true; webhookId: string; timestamp: number } | { ok: false; reason: string };

/**
 * Verifies the Standard Webhooks signature of a request.
 *
 * Passes when the timestamp is within `toleranceSeconds` of now (in the past or the future) and any `v1` entry of
 * `webhook-signature` equals HMAC-SHA256(key, `${id}.${timestamp}.${body}`) under any of `secrets` (pass the old and
 * the new secret while rotating). Signatures are compared in constant time; entries of other versions (`v1a`, …) are
 * ignored.
 *
 * @param secrets one `whsec_<base64>` secret or several (the `whsec_` prefix may be left off)
 * @throws TypeError when no secret is given or one is not valid base64 (a configuration error, not a bad request)
 */
export async function verifyWebhook(
  request: WebhookRequest,
  secrets: string | string[],
  opts: VerifyOptions = {},
): Promise<VerifyResult> {
  const keys = (Array.isArray(secrets) ? secrets : [secrets]).map(decodeSigningSecret);
  if (keys.length === 0) throw new TypeError('verifyWebhook: no signing secret given');
  const toleranceSeconds = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const nowSec = Math.floor((opts.nowMs ?? Date.now()) / 1000);

  const id = headerValue(request.headers, 'webhook-id', false);
  const ts = headerValue(request.headers, 'webhook-timestamp', false);
  const sig = headerValue(request.headers, 'webhook-signature', true);
  for (const [name, v] of [['webhook-id', id], ['webhook-timestamp', ts], ['webhook-signature', sig]] as const) {
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

  const content = new TextEncoder().encode(`${msgId}.${tsText}.${request.body}`);
  for (const key of keys) {
    const expected = await hmacSha256(key, content);
    // Every candidate is compared, so the time taken does not depend on which one (if any) matched.
    let matched = false;
    for (const c of candidates) matched = constantTimeEqual(expected, c) || matched;
    if (matched) return { ok: true, webhookId: msgId, timestamp };
  }
  return fail('no signature matches the secret(s)');
}

/**
 * The HMAC key of a Standard Webhooks secret: the base64-decoded part after `whsec_` (the prefix is optional).
 * @throws TypeError when it is empty or not base64
 */
export function decodeSigningSecret(secret: string): Uint8Array {
  if (typeof secret !== 'string') throw new TypeError('a signing secret must be a string');
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = base64Decode(b64);
  if (!key || key.length === 0) throw new TypeError(`not a Standard Webhooks secret (expected ${SECRET_PREFIX}<base64>)`);
  return key;
}

const fail = (reason: string): VerifyResult => ({ ok: false, reason });

/**
 * One header's value, trimmed: undefined when absent; for `webhook-signature` (`joinRepeated`) repeated values are
 * joined into the spec's space-separated list, for the other headers a repeated value is ambiguous: null.
 */
function headerValue(headers: WebhookRequest['headers'], name: string, joinRepeated: boolean): string | undefined | null {
  let raw: string | string[] | undefined;
  if (typeof Headers !== 'undefined' && headers instanceof Headers) {
    raw = headers.get(name) ?? undefined;
  } else {
    const record = headers as Record<string, string | string[] | undefined>;
    raw = record[name];
    if (raw === undefined) {
      const key = Object.keys(record).find((k) => k.toLowerCase() === name);
      raw = key === undefined ? undefined : record[key];
    }
  }
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw)) return joinRepeated ? normalizeCombinedSignatures(raw) : raw.trim();
  if (joinRepeated) return raw.map(normalizeCombinedSignatures).join(' ').trim();
  return raw.length === 0 ? undefined : raw.length === 1 ? raw[0]!.trim() : null;
}

/**
 * A `webhook-signature` value that `Headers` or a proxy may have combined from repeated headers with ", "
 * (`v1,aaa, v1,bbb`), in the spec's space-separated form. Base64 has no comma, so ", " only separates entries.
 */
function normalizeCombinedSignatures(v: string): string {
  return v.replace(/,\s+/g, ' ').trim();
}

async function hmacSha256(key: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey('raw', key as Uint8Array<ArrayBuffer>, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return new Uint8Array(await crypto.subtle.sign('HMAC', k, data as Uint8Array<ArrayBuffer>));
}

/** Compares two byte strings in time that depends only on their lengths. */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/** Standard base64 (padding optional) to bytes; null when it is not base64. */
function base64Decode(s: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.replace(/=+$/, '').length % 4 === 1) return null;
  try {
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return null;
  }
}
