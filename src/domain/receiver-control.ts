/**
 * What a receiver's response says beyond its status (API.md "Receiver control and result routing"): the
 * `Chime-Control` header, the `successBody` rule a success status must also meet, the response headers the attempt
 * log keeps, and the response as a result delivery carries it. Pure: both deliveries (undici on Node, `fetch` on
 * Workers) hand their raw response here through `outcomeOf` (src/dispatch/attempt.ts).
 */

/** The `Chime-Control` tokens Chime acts on. */
export const CONTROL_TOKENS = ['no-retry', 'pause', 'complete', 'skip-next'] as const;
export type ControlToken = (typeof CONTROL_TOKENS)[number];

/** The response header a receiver steers its job with. */
export const CONTROL_HEADER = 'chime-control';

/** A parsed `Chime-Control` header: the known tokens (each once, in the order given) and the unknown ones (ignored). */
export type ReceiverControl = { tokens: ControlToken[]; unknown: string[] };

/** Most unknown tokens kept for the attempt log (a receiver's header is not a place to store data). */
const MAX_UNKNOWN_TOKENS = 10;
/** Longest unknown token kept, in characters (longer ones are cut). */
const MAX_UNKNOWN_TOKEN_LENGTH = 40;

/**
 * Parses a `Chime-Control` header value: comma-separated tokens, case-insensitive, whitespace around each ignored,
 * empty elements skipped (the list syntax of RFC 9110 §5.6.1). Several header lines arrive joined by `, `.
 * @param value the header's value, or undefined/null when absent
 * @returns the known tokens (deduplicated) and up to 10 unknown ones (each cut to 40 characters), for the attempt log
 */
export function parseChimeControl(value: string | null | undefined): ReceiverControl {
  const out: ReceiverControl = { tokens: [], unknown: [] };
  if (!value) return out;
  for (const raw of value.split(',')) {
    const t = raw.trim().toLowerCase();
    if (t === '') continue;
    if ((CONTROL_TOKENS as readonly string[]).includes(t)) {
      if (!out.tokens.includes(t as ControlToken)) out.tokens.push(t as ControlToken);
    } else if (out.unknown.length < MAX_UNKNOWN_TOKENS) {
      out.unknown.push(t.slice(0, MAX_UNKNOWN_TOKEN_LENGTH));
    }
  }
  return out;
}

/**
 * `callback.successBody`: what the body of a success status must hold for the attempt to succeed. `contains`: the body
 * (as UTF-8 text) contains the string. `jsonPointer` + `equals`: the body parses as JSON and the value at the RFC 6901
 * pointer deep-equals `equals`.
 */
export type SuccessBody = { contains: string } | { jsonPointer: string; equals: unknown };

/** Bytes of the response body a `successBody` rule (and a result delivery) reads: the first 64 KiB. */
export const RESPONSE_BODY_KEEP_BYTES = 64 * 1024;

/**
 * Whether `body` (the response's first RESPONSE_BODY_KEEP_BYTES, decoded as UTF-8) meets `rule`.
 * @returns null when it does, else why not (for the attempt's error text)
 */
export function successBodyMismatch(rule: SuccessBody, body: string): string | null {
  if ('contains' in rule) {
    return body.includes(rule.contains) ? null : `the response body does not contain ${JSON.stringify(rule.contains)}`;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch {
    return 'the response body is not JSON';
  }
  const found = resolveJsonPointer(doc, rule.jsonPointer);
  if (!found.found) return `the response body has no value at ${rule.jsonPointer}`;
  if (!jsonEqual(found.value, rule.equals)) {
    return `the response body has ${truncate(JSON.stringify(found.value), 100)} at ${rule.jsonPointer}, not ${truncate(JSON.stringify(rule.equals), 100)}`;
  }
  return null;
}

const truncate = (s: string | undefined, n: number) => (s === undefined ? 'undefined' : s.length > n ? `${s.slice(0, n)}…` : s);

/**
 * Whether `p` is a JSON Pointer (RFC 6901 §3): empty, or `/`-separated reference tokens in which `~` appears only as
 * `~0` or `~1`.
 */
export function isJsonPointer(p: string): boolean {
  return p === '' || (p.startsWith('/') && !/~[^01]|~$/.test(p));
}

/**
 * Resolves an RFC 6901 JSON Pointer against a parsed JSON document: each reference token unescaped (`~1` → `/`, then
 * `~0` → `~`, in that order, §4), an object member by name, an array element by its decimal index (no leading zeros;
 * `-` names no element).
 * @returns `{ found: true, value }`, or `{ found: false }` when a token names nothing (or the pointer is malformed)
 */
export function resolveJsonPointer(doc: unknown, pointer: string): { found: true; value: unknown } | { found: false } {
  if (!isJsonPointer(pointer)) return { found: false };
  if (pointer === '') return { found: true, value: doc };
  let cur: unknown = doc;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return { found: false };
      const i = Number(token);
      if (i >= cur.length) return { found: false };
      cur = cur[i];
    } else if (cur !== null && typeof cur === 'object') {
      if (!Object.hasOwn(cur, token)) return { found: false };
      cur = (cur as Record<string, unknown>)[token];
    } else {
      return { found: false };
    }
  }
  return { found: true, value: cur };
}

/** Deep equality of JSON values: numbers by value, objects by their members whatever their order, arrays in order. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => jsonEqual(v, bb[i]));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual((a as never)[k], (b as never)[k]));
}

/** Most bytes of response headers kept per attempt (names and values, UTF-8), and the header never kept. */
export const RESPONSE_HEADERS_MAX_BYTES = 4096;
const DROPPED_HEADERS = new Set(['set-cookie']);

/**
 * The response headers the attempt log keeps: names lower-cased, repeated headers joined by `, `, `set-cookie` left
 * out (it carries the receiver's sessions), at most RESPONSE_HEADERS_MAX_BYTES in all counting each name and value.
 * Headers are taken in the order given; one that would pass the bound is left out and the next ones still tried, so
 * one large header cannot hide the small ones after it.
 * @param headers name → value(s), as undici reports them, or `[name, value]` pairs (a `Headers` object's iteration)
 */
export function capResponseHeaders(
  headers: Record<string, string | string[] | undefined> | Iterable<[string, string]>,
): Record<string, string> {
  const entries: [string, string | string[] | undefined][] =
    Symbol.iterator in headers ? [...(headers as Iterable<[string, string]>)] : Object.entries(headers);
  const merged = new Map<string, string>();
  for (const [rawName, v] of entries) {
    if (v === undefined) continue;
    const name = rawName.toLowerCase();
    if (DROPPED_HEADERS.has(name)) continue;
    const value = Array.isArray(v) ? v.join(', ') : v;
    const prev = merged.get(name);
    merged.set(name, prev === undefined ? value : `${prev}, ${value}`);
  }
  const out: Record<string, string> = {};
  let used = 0;
  const enc = new TextEncoder();
  for (const [name, value] of merged) {
    const size = enc.encode(name).length + enc.encode(value).length;
    if (used + size > RESPONSE_HEADERS_MAX_BYTES) continue;
    out[name] = value;
    used += size;
  }
  return out;
}

/** The response a result delivery carries (API.md): status, kept headers, body as text or base64. */
export type ResultResponse = { status: number; headers: Record<string, string>; body: string; bodyEncoding?: 'base64' };

/**
 * The body of a result delivery: the response's first RESPONSE_BODY_KEEP_BYTES as UTF-8 text, or base64 with
 * `bodyEncoding: "base64"` when they are not valid UTF-8. A body cut at the bound may end inside a character: up to
 * three trailing bytes of an incomplete sequence are dropped before the check, so a long text stays text. Text holding
 * U+0000 goes as base64 too (PostgreSQL's jsonb cannot hold it).
 * @param truncated whether the body went on past `bytes`
 */
export function resultBody(bytes: Uint8Array, truncated: boolean): Pick<ResultResponse, 'body' | 'bodyEncoding'> {
  let b = bytes.subarray(0, RESPONSE_BODY_KEEP_BYTES);
  if (truncated || bytes.length > RESPONSE_BODY_KEEP_BYTES) b = trimIncompleteUtf8(b);
  try {
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(b);
    // U+0000 is valid UTF-8 but PostgreSQL's jsonb, where the delivery's body waits, refuses it: such a body goes as base64.
    if (!text.includes('\u0000')) return { body: text };
    throw new Error('NUL');
  } catch {
    return { body: base64(bytes.subarray(0, RESPONSE_BODY_KEEP_BYTES)), bodyEncoding: 'base64' };
  }
}

/** `b` without a trailing incomplete UTF-8 sequence (at most 3 bytes). */
function trimIncompleteUtf8(b: Uint8Array): Uint8Array {
  for (let back = 1; back <= Math.min(3, b.length); back++) {
    const byte = b[b.length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: look further back for the lead
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return need > back ? b.subarray(0, b.length - back) : b;
  }
  return b;
}

/** Base64 of bytes (btoa over a binary string: available on Node and Workers alike). */
function base64(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return btoa(s);
}
