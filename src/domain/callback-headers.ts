/**
 * The one rule for a job's custom callback headers (`callback.headers`): which name/value pairs Chime accepts.
 * Registration refuses what the rule refuses (src/api/job-input.ts, 400 naming `callback.headers.<name>`); delivery
 * leaves out what it refuses (src/dispatch/callback-request.ts), so a job stored under an older, looser rule still
 * gets its callbacks instead of failing every attempt.
 *
 * The aim: every accepted header can be sent, exactly as given, by undici (`Dispatcher.dispatch` on Node, which
 * throws on `expect`, `transfer-encoding`, `keep-alive`, `upgrade`, a bad `connection` or `content-length`, and on
 * value characters outside HTAB, 0x20-0x7e and 0x80-0xff) and by `fetch` (Workers, which strips leading and trailing
 * whitespace of values), and a receiver reads back the value that was given. Chime's own headers are never
 * overridden by a job's.
 *
 * Pure, no imports: it runs on Node and on Workers.
 */

/** Longest header name and value accepted at registration (characters). */
export const MAX_HEADER_NAME_LENGTH = 256;
export const MAX_HEADER_VALUE_LENGTH = 4096;

/** RFC 9110 §5.1: a field name is a token (§5.6.2: `1*tchar`). */
export const HEADER_NAME_PATTERN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * RFC 9110 §5.5 field value, restricted to US-ASCII: visible characters (0x21-0x7e) with spaces and tabs between
 * them, never first or last (§5.5: a recipient strips them, so they would not arrive as given). May be empty.
 * obs-text (0x80-0xff) is left out: undici sends it as Latin-1 bytes, which receivers decode as Latin-1 or UTF-8.
 */
export const HEADER_VALUE_PATTERN = /^(?:[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?)?$/;

/**
 * Reserved header names, as alternatives of a case-insensitive pattern (field names are, RFC 9110 §5.1), each with
 * why a job may not set them.
 */
const RESERVED: readonly (readonly [alternatives: string, why: string])[] = [
  ['host|content-length', 'set by the HTTP client from the URL and the body (RFC 9110 §7.2, §8.6)'],
  ['content-type|user-agent|webhook-.*|chime-.*', 'set by Chime on every callback'],
  ['expect', 'Expect (RFC 9110 §10.1.1) is not supported by the sender'],
  // RFC 9110 §7.6.1 names Connection, Proxy-Connection, Keep-Alive, TE, Transfer-Encoding and Upgrade; the other
  // proxy-* fields are for a proxy (§11.7), which callbacks never go through.
  ['connection|keep-alive|proxy-.*|te|transfer-encoding|upgrade', 'connection-specific (RFC 9110 §7.6.1)'],
  ['trailer', 'announces trailer fields (RFC 9110 §6.6.2), and a callback has none'],
];
const RESERVED_RULES = RESERVED.map(([alternatives, why]) => [new RegExp(`^(?:${alternatives})$`, 'i'), why] as const);

/** Every reserved name: host, content-length, content-type, user-agent, expect, hop-by-hop, webhook-*, chime-*. */
export const RESERVED_HEADER = new RegExp(`^(?:${RESERVED.map(([alternatives]) => alternatives).join('|')})$`, 'i');

/** @returns why `name` is reserved (a job may not set it), or null when it is not; case-insensitive */
export function reservedHeaderReason(name: string): string | null {
  for (const [re, why] of RESERVED_RULES) if (re.test(name)) return why;
  return null;
}

export type CallbackHeaderOptions = {
  /** The job has an `authToken`: Chime sends `Authorization: Bearer …`, so the job may not set Authorization. */
  hasAuthToken?: boolean;
};

/**
 * Why one header cannot be a job's callback header, or null when it can. Lengths are the schema's concern
 * (MAX_HEADER_NAME_LENGTH, MAX_HEADER_VALUE_LENGTH): they do not stop a header from being sent.
 * @param value typed `unknown` because stored jobs are read back from JSON
 * @returns a message for a field error, or null
 */
export function callbackHeaderIssue(name: string, value: unknown, opts: CallbackHeaderOptions = {}): string | null {
  if (!HEADER_NAME_PATTERN.test(name)) return 'not a valid header name (an RFC 9110 §5.6.2 token)';
  const reserved = reservedHeaderReason(name);
  if (reserved !== null) return `reserved header name: ${reserved}`;
  if (opts.hasAuthToken && name.toLowerCase() === 'authorization')
    return 'set either callback.authToken or an Authorization header, not both';
  if (typeof value !== 'string') return 'header values are strings';
  return headerValueIssue(value);
}

/** @returns why `value` is not an acceptable field value (RFC 9110 §5.5, see HEADER_VALUE_PATTERN), or null */
function headerValueIssue(value: string): string | null {
  if (HEADER_VALUE_PATTERN.test(value)) return null;
  const bad = /[^\t\x20-\x7e]/u.exec(value);
  if (bad) {
    const code = bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    return `header values are visible ASCII, spaces and tabs only (RFC 9110 §5.5); found U+${code} at ${bad.index}`;
  }
  return 'header values cannot start or end with a space or tab (RFC 9110 §5.5: receivers strip them)';
}

/**
 * Every refused header of a job, in the record's order: the per-header rule ({@link callbackHeaderIssue}), and a
 * name given twice in different case (`X-A` and `x-a`: one field to HTTP, RFC 9110 §5.3, so the receiver would get
 * both values joined, or only one of them); the later spelling is the one named.
 */
export function callbackHeadersIssues(
  headers: Record<string, unknown>,
  opts: CallbackHeaderOptions = {},
): { name: string; message: string }[] {
  const issues: { name: string; message: string }[] = [];
  const seen = new Map<string, string>();
  for (const [name, value] of Object.entries(headers)) {
    const issue = callbackHeaderIssue(name, value, opts);
    if (issue !== null) {
      issues.push({ name, message: issue });
      continue;
    }
    const lower = name.toLowerCase();
    const first = seen.get(lower);
    if (first !== undefined) issues.push({ name, message: `the same header as ${first} (header names are case-insensitive)` });
    else seen.set(lower, name);
  }
  return issues;
}

/**
 * The headers of `headers` that the rule accepts, as given (for delivery: a job stored before the rule may hold
 * some it refuses, which are left out rather than failing every attempt).
 * @returns `headers` itself when every header is accepted (the usual case), else a copy without the refused ones
 */
export function sendableCallbackHeaders(headers: Record<string, unknown>, opts: CallbackHeaderOptions = {}): Record<string, string> {
  const issues = callbackHeadersIssues(headers, opts);
  if (issues.length === 0) return headers as Record<string, string>;
  const refused = new Set(issues.map((i) => i.name));
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !refused.has(name))) as Record<string, string>;
}
