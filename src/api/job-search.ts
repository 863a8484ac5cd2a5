/**
 * The search parameters of `GET /v1/jobs`: `q` (a zod field of the query schema) and `metadata.<key>=<value>`, whose
 * names are the tenant's own metadata keys and so cannot be a schema's fields: they are read from the query string
 * and checked here, with the limits a job's `metadata` has (a filter outside them could never match).
 */
import { z } from '@hono/zod-openapi';
import { unstorableReason } from './json-guard.ts';
import { type FieldError, validationError } from './problems.ts';
import { MAX_METADATA_PAIRS } from './schemas.ts';

/** Longest `q`, in characters (as a job's `name`). */
export const MAX_SEARCH_LENGTH = 200;
/** Longest metadata key and value, in characters (as in a job's `metadata`). */
export const MAX_METADATA_KEY_LENGTH = 64;
export const MAX_METADATA_VALUE_LENGTH = 512;

/** The query-string prefix of a metadata filter: `metadata.team=ops`. */
const METADATA_PREFIX = 'metadata.';

/** A string PostgreSQL can hold (no U+0000, no unpaired surrogate): else the query would fail with a 500. */
const storable = (s: z.ZodString) =>
  s.superRefine((v, ctx) => {
    const reason = unstorableReason(v);
    if (reason) ctx.addIssue({ code: 'custom', message: reason });
  });

/** `?q=`: a case-insensitive substring of the job's name or key, 1..200 characters, `%`, `_` and `\` literal. */
export const SearchQueryField = storable(z.string().min(1).max(MAX_SEARCH_LENGTH)).openapi({
  description:
    'Only jobs whose name or key contains this text, case-insensitively (1..200 characters; `%`, `_` and `\\` are literal). Also `metadata.<key>=<value>` (repeatable over different keys, at most 20): only jobs whose metadata holds every such pair.',
});

/**
 * The `metadata.<key>=<value>` pairs of a query string (every one must match) and the errors of the bad ones.
 * @param queries every query parameter with all its values, as Hono's `c.req.queries()` gives them
 * @returns `pairs` (undefined when there are none) and one error per bad parameter, named as sent: an empty key
 *   (`metadata.`), a key given twice, a key over 64 or a value over 512 characters, a key or value PostgreSQL cannot
 *   hold, a bare `metadata`; and `metadata` for more than 20 pairs
 */
export function parseMetadataFilter(queries: Record<string, string[]>): {
  pairs: Record<string, string> | undefined;
  errors: FieldError[];
} {
  const pairs: Record<string, string> = {};
  const errors: FieldError[] = [];
  let count = 0;
  for (const [name, values] of Object.entries(queries)) {
    if (name === 'metadata') {
      errors.push({ path: name, message: 'filter by metadata as metadata.<key>=<value>' });
      continue;
    }
    if (!name.startsWith(METADATA_PREFIX)) continue;
    count++;
    const key = name.slice(METADATA_PREFIX.length);
    const value = values[0] ?? '';
    const problem =
      key === ''
        ? 'the metadata key is empty'
        : key.length > MAX_METADATA_KEY_LENGTH
          ? `the metadata key is longer than ${MAX_METADATA_KEY_LENGTH} characters`
          : unstorableReason(key)
            ? `the metadata key ${unstorableReason(key)}`
            : values.length > 1
              ? 'given more than once (one value per key)'
              : value.length > MAX_METADATA_VALUE_LENGTH
                ? `the value is longer than ${MAX_METADATA_VALUE_LENGTH} characters`
                : unstorableReason(value)
                  ? `the value ${unstorableReason(value)}`
                  : null;
    if (problem) errors.push({ path: name, message: problem });
    // A plain assignment of a key such as `__proto__` would set the prototype, not a pair.
    else Object.defineProperty(pairs, key, { value, enumerable: true, configurable: true, writable: true });
  }
  if (count > MAX_METADATA_PAIRS) errors.unshift({ path: 'metadata', message: `at most ${MAX_METADATA_PAIRS} metadata filters` });
  return { pairs: Object.keys(pairs).length > 0 ? pairs : undefined, errors };
}

/**
 * The `metadata.<key>=<value>` pairs of a query string (`parseMetadataFilter`).
 * @throws ApiError validation (400) naming every bad parameter
 */
export function metadataFilter(queries: Record<string, string[]>): Record<string, string> | undefined {
  const { pairs, errors } = parseMetadataFilter(queries);
  if (errors.length > 0) throw validationError(errors);
  return pairs;
}
