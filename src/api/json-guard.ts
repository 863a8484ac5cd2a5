/**
 * What PostgreSQL cannot store, refused up front with `400` naming the field, for every JSON request body.
 *
 * PostgreSQL `text` cannot hold U+0000, and `jsonb` refuses the escape `\u0000` and unpaired UTF-16 surrogates
 * (`\ud800`), which JSON.parse accepts and JavaScript strings may hold; postgres.js and PGlite would otherwise
 * fail the insert (a 500) or silently replace a lone surrogate with U+FFFD. Deep nesting is refused too: JSON.parse
 * takes it, but PostgreSQL's json parser stops at its stack depth limit. One walk of the parsed body checks keys and
 * values everywhere, including inside a job's free-form `payload` and `metadata`.
 */
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './env.ts';
import { declaredBodyLength } from './body-limit.ts';
import { validationError, type FieldError } from './problems.ts';

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
      v.forEach((item, i) => walk(item, p ? `${p}.${i}` : String(i), depth + 1));
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
    // The media type test of Hono's JSON validator, so exactly the bodies routes will read are checked.
    const mediaType = (c.req.header('content-type') ?? '').split(';')[0]!.trim();
    // By the headers, not `c.req.raw.body`, which would make @hono/node-server build a full Request (body-limit.ts).
    if (declaredBodyLength(c) !== 'none' && /^application\/([\w.-]+\+)?json$/i.test(mediaType)) {
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
