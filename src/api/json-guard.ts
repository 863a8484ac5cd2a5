/**
 * What PostgreSQL cannot store, refused up front with `400` naming the field, for every JSON request body.
 *
 * PostgreSQL `text` cannot hold U+0000, and `jsonb` refuses the escape `\u0000` and unpaired UTF-16 surrogates
 * (`\ud800`), which JSON.parse accepts and JavaScript strings may hold; postgres.js and PGlite would otherwise
 * fail the insert (a 500) or silently replace a lone surrogate with U+FFFD. Deep nesting is refused too: JSON.parse
 * takes it, but PostgreSQL's json parser stops at its stack depth limit. One walk of the parsed body checks keys and
 * values everywhere, including inside a job's free-form `payload` and `metadata`.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { declaredBodyLength } from './body-limit.ts';
import type { AppEnv } from './env.ts';
import { ApiError, type FieldError, validationError } from './problems.ts';

/** Deepest nesting of arrays and objects accepted in a request body (the body itself is depth 1). */
export const MAX_JSON_DEPTH = 32;
/** At most this many fields are named in one answer; the walk stops there. */
const MAX_REPORTED = 20;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why a string cannot be stored unchanged, or null when it can. */
export function unstorableReason(s: string): string | null {
  if (s.includes('\u0000')) return 'cannot contain the character U+0000';
  if (LONE_SURROGATE.test(s)) return 'is not valid Unicode (an unpaired surrogate)';
  return null;
}

/**
 * The fields of a parsed JSON value that cannot be stored: strings (keys and values) with U+0000 or a lone
 * surrogate, and nesting deeper than `maxDepth`.
 * @param path the dotted path of `value` ('' for the body)
 * @returns at most MAX_REPORTED field errors, paths dotted like the validation errors (`payload.a.0`)
 */
export function unstorableFields(value: unknown, maxDepth = MAX_JSON_DEPTH, path = ''): FieldError[] {
  const errors: FieldError[] = [];
  const at = (p: string) => p || '(body)';
  const walk = (v: unknown, p: string, depth: number): void => {
    if (errors.length >= MAX_REPORTED) return;
    if (typeof v === 'string') {
      const reason = unstorableReason(v);
      if (reason) errors.push({ path: at(p), message: reason });
      return;
    }
    if (v === null || typeof v !== 'object') return;
    if (depth > maxDepth) {
      errors.push({ path: at(p), message: `nests deeper than ${maxDepth} levels` });
      return;
    }
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        walk(item, p ? `${p}.${i}` : String(i), depth + 1);
      });
      return;
    }
    for (const [k, item] of Object.entries(v)) {
      const reason = unstorableReason(k);
      const child = p ? `${p}.${k}` : k;
      if (reason) errors.push({ path: at(child), message: `the field name ${reason}` });
      else walk(item, child, depth + 1);
      if (errors.length >= MAX_REPORTED) return;
    }
  };
  walk(value, path, 1);
  return errors;
}

/** JSON media types (`application/json`, `application/merge-patch+json`, …): the test of Hono's JSON validator. */
const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;

function mediaTypeOf(c: Context): string {
  return (c.req.header('content-type') ?? '').split(';')[0]!.trim();
}

/**
 * Middleware: a request that carries a body in another media type than JSON (or with no Content-Type at all) is
 * answered `415` (RFC 9110 §15.5.16), whatever the route; a request without a body passes.
 */
export function requireJsonMediaType(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const declared = declaredBodyLength(c);
    if (declared !== 'none' && !JSON_MEDIA_TYPE.test(mediaTypeOf(c))) {
      // An undeclared length (chunked, or a Request built in process) is a body only if it has bytes.
      if (declared !== 'unknown' || (await c.req.text()).length > 0) {
        throw new ApiError(
          'unsupported_media_type',
          `request bodies are JSON: send Content-Type: application/json${mediaTypeOf(c) ? `, not ${mediaTypeOf(c)}` : ''}`,
        );
      }
    }
    await next();
  };
}

/**
 * Middleware for routes that take no body fields (trigger, replay, rotate, deletes): the body must be absent, empty
 * or `{}`; any field in it is unknown and answered `400` by name, as every other body's unknown fields are.
 */
export function emptyBody(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (declaredBodyLength(c) !== 'none') {
      const text = await c.req.text();
      if (text.trim() !== '') {
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          throw new ApiError('malformed_json', 'the request body is not valid JSON');
        }
        if (body === null || typeof body !== 'object' || Array.isArray(body)) {
          throw validationError([{ path: '(body)', message: 'this request takes no body: send none, or {}' }]);
        }
        const fields = Object.keys(body);
        if (fields.length > 0) throw validationError(fields.slice(0, MAX_REPORTED).map((path) => ({ path, message: 'unknown field' })));
      }
    }
    await next();
  };
}

/**
 * Middleware: parses a JSON request body (Hono caches it for the route's validator) and answers `400` when it
 * holds anything `unstorableFields` names. Bodies that are not JSON, or malformed, pass on to the route's own
 * validation, which answers them.
 * @param opts.except paths whose route checks its body itself (the batch route, per job)
 */
export function jsonGuard(opts: { except?: readonly string[] } = {}): MiddlewareHandler<AppEnv> {
  const except = new Set(opts.except ?? []);
  return async (c, next) => {
    if (except.has(c.req.path)) return next();
    // By the headers, not `c.req.raw.body`, which would make @hono/node-server build a full Request (body-limit.ts).
    if (declaredBodyLength(c) !== 'none' && JSON_MEDIA_TYPE.test(mediaTypeOf(c))) {
      let body: unknown;
      let parsed = false;
      try {
        body = await c.req.json(); // the body limit has buffered it already
        parsed = true;
      } catch {
        // malformed: the route's validator answers 400 malformed_json
      }
      if (parsed) {
        const errors = unstorableFields(body);
        if (errors.length > 0) throw validationError(errors);
      }
    }
    await next();
  };
}
