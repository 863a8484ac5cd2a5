/**
 * Helpers shared by the verifiers: header lookup, base64, constant-time comparison (the package exports none of them).
 * WebCrypto, `atob`/`btoa`, `TextEncoder` and `Headers` only: no `node:` module.
 */
import type { VerificationFailure } from './result.ts';

/** A failure with `reason`. */
export const fail = (reason: string): VerificationFailure => ({ ok: false, reason });

/**
 * Request headers as the verifiers accept them: a fetch `Headers`, or a plain record such as Node's
 * `IncomingMessage.headers` (names matched case-insensitively).
 */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>;

/**
 * One header's value, trimmed: undefined when absent; with `joinRepeated` (`webhook-signature`) repeated values are
 * joined into the Standard Webhooks space-separated list, for any other header a repeated value is ambiguous: null.
 */
export function headerValue(headers: HeadersLike, name: string, joinRepeated: boolean): string | undefined | null {
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

/** Compares two byte strings in time that depends only on their lengths. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/** Standard base64 (padding optional) to bytes; null when it is not base64. */
export function base64Decode(s: string): Uint8Array | null {
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

/** Bytes to base64url without padding (RFC 4648 §5), as JOSE encodes binary values. */
export function base64UrlEncode(bytes: Uint8Array): string {
  let bin = '';
  for (let i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]!);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** UTF-8 bytes of a string. */
export function utf8(s: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(s);
}
