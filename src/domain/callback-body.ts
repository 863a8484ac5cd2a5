/**
 * What a callback request carries besides its URL (API.md "Destination control"): its body (`payload` as JSON, or
 * `body` sent as is), the media type it is declared as (`callback.contentType`), and the rules for the credentials
 * of `callback.auth` that the registration checks and the dispatcher relies on. Pure: it runs on Node and on Workers.
 */

/** Largest `body` (a job's body that is not JSON), in UTF-8 bytes: 256 KiB. */
export const MAX_CALLBACK_BODY_BYTES = 256 * 1024;
/** Longest `callback.contentType`, in characters. */
export const MAX_CONTENT_TYPE_LENGTH = 255;
/** The media type of a `payload` (JSON) and of a `body` when the job names none. */
export const JSON_MEDIA_TYPE = 'application/json';
export const TEXT_MEDIA_TYPE = 'text/plain';

/** RFC 9110 §5.6.2 token. */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
/** RFC 9110 §5.6.4 quoted-string, US-ASCII only (obs-text left out, as for header values). */
const QUOTED = '"(?:[\\t \\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\t\\x20-\\x7e])*"';
/** RFC 9110 §8.3.1: `type "/" subtype *( OWS ";" OWS [ parameter ] )`, parameter = token "=" ( token / quoted-string ). */
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*(?:${TOKEN}=(?:${TOKEN}|${QUOTED}))?)*$`);
/** The `charset` parameter of a media type (its value unquoted by `charsetOf`). */
const CHARSET = new RegExp(`;[ \\t]*charset=(${TOKEN}|${QUOTED})`, 'i');

/** The bytes `text` takes in UTF-8 (what is sent and signed). */
export function utf8Length(text: string): number {
  return new TextEncoder().encode(text).length;
}

/**
 * Why `value` cannot be a callback's `contentType`, or null when it can: an RFC 9110 §8.3.1 media type
 * (`application/xml`, `text/csv; charset=utf-8`, `application/x-www-form-urlencoded`) of visible ASCII. A `charset`
 * other than UTF-8 (or its subset US-ASCII) is refused: the body is always sent as its UTF-8 bytes, so any other
 * label would make receivers decode it wrongly.
 */
export function contentTypeIssue(value: string): string | null {
  if (value.length === 0 || value.length > MAX_CONTENT_TYPE_LENGTH) return `1..${MAX_CONTENT_TYPE_LENGTH} characters`;
  if (!MEDIA_TYPE.test(value)) return 'not a media type (RFC 9110 §8.3.1: type/subtype, then ;name=value parameters)';
  const charset = charsetOf(value);
  if (charset !== null && charset !== 'utf-8' && charset !== 'us-ascii') {
    return `the body is sent as UTF-8: charset must be utf-8 (or absent), not ${charset}`;
  }
  return null;
}

/** The `charset` parameter of a media type, unquoted and lower-cased; null without one. */
function charsetOf(mediaType: string): string | null {
  const m = CHARSET.exec(mediaType);
  if (!m) return null;
  const v = m[1]!;
  return (v.startsWith('"') ? v.slice(1, -1).replace(/\\(.)/g, '$1') : v).toLowerCase();
}

/**
 * The request body of an attempt, exactly as sent and signed (both signatures are over these bytes' UTF-8 text).
 * @param method a GET carries none
 * @param body the job's `body` (sent as is) when it has one
 * @param payload otherwise, the JSON payload (null or absent: `{}`)
 * @returns the body text and its media type (`contentType`, else the default of its kind), or null for no body
 */
export function callbackBody(
  method: string,
  body: string | null | undefined,
  payload: unknown,
  contentType: string | null | undefined,
): { text: string; contentType: string } | null {
  if (method === 'GET') return null;
  if (body !== null && body !== undefined) return { text: body, contentType: contentType ?? TEXT_MEDIA_TYPE };
  return { text: JSON.stringify(payload ?? {}), contentType: contentType ?? JSON_MEDIA_TYPE };
}

/** RFC 5234 CTL (and DEL): refused in every credential (RFC 7617 §2 for basic; no header could carry them raw). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are matched on purpose, to refuse them
const NO_CONTROLS = /^[^\x00-\x1f\x7f]*$/;
/** RFC 6749 Appendix A: `client_id` and `client_secret` are VSCHAR (%x20-7E). */
const VSCHARS = /^[\x20-\x7e]*$/;
/** RFC 6749 §3.3: scope = scope-token *( SP scope-token ), scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+(?: [\x21\x23-\x5b\x5d-\x7e]+)*$/;

/** Why a basic `username` cannot be sent (RFC 7617 §2: no colon, no control character), or null. */
export function basicUsernameIssue(v: string): string | null {
  if (v.includes(':')) return 'a basic user-id cannot contain ":" (RFC 7617 §2)';
  return NO_CONTROLS.test(v) ? null : 'control characters cannot be sent (RFC 7617 §2)';
}

/** Why a basic `password`, an OAuth2 `audience` or a `jwtAudience` cannot be used (a control character), or null. */
export function noControlsIssue(v: string): string | null {
  return NO_CONTROLS.test(v) ? null : 'control characters are not allowed';
}

/** Why an OAuth2 `clientId` or `clientSecret` cannot be used (RFC 6749 Appendix A.1, A.2: VSCHAR only), or null. */
export function clientCredentialIssue(v: string): string | null {
  return VSCHARS.test(v) ? null : 'printable ASCII only (RFC 6749 Appendix A: VSCHAR)';
}

/** Why an OAuth2 `scope` is not a scope (RFC 6749 §3.3: tokens separated by single spaces), or null. */
export function scopeIssue(v: string): string | null {
  return SCOPE.test(v) ? null : 'space-separated scope tokens of printable ASCII without " or \\ (RFC 6749 §3.3)';
}
