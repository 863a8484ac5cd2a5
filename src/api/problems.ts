/**
 * RFC 9457 problem details: one API error type with a closed set of codes, each with its status and stable `type`
 * (`urn:chime:problem:<code>`), rendered by one `app.onError` as `application/problem+json`.
 */
import type { Context } from 'hono';
import { requestIdOf } from './requests.ts';

export const PROBLEMS = Object.freeze({
  validation: { status: 400, title: 'The request is invalid' },
  malformed_json: { status: 400, title: 'The request body is not valid JSON' },
  unauthorized: { status: 401, title: 'Missing or invalid credentials' },
  forbidden: { status: 403, title: 'Not allowed' },
  /** The API key lacks the scope the route needs, or a key asked to grant more than it holds. */
  insufficient_scope: { status: 403, title: 'Insufficient scope' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  payload_too_large: { status: 413, title: 'The request body is too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  /** The tenant is suspended by the operator (`PATCH /v1/admin/tenants/:tenantId`): its keys are refused until resumed. */
  tenant_suspended: { status: 403, title: 'Tenant suspended' },
  /**
   * A quota of the tenant (`maxJobs`: CHIME_QUOTA_MAX_JOBS or its override) is reached; the detail names it. 403 as
   * API.md "Operating tenants" says: the tenant is not allowed more, whatever the request (it was 409 before quotas
   * had overrides per tenant).
   */
  quota_exceeded: { status: 403, title: 'Quota exceeded' },
  rate_limited: { status: 429, title: 'Too many requests' },
  internal: { status: 500, title: 'Internal error' },
  unavailable: { status: 503, title: 'Service unavailable' },
} as const);
export type ProblemCode = keyof typeof PROBLEMS;

/** One bad field: `path` in dotted form (`schedule.expression`, `callback.headers.Host`). */
export type FieldError = { path: string; message: string };

/** An error that becomes a problem response. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly code: ProblemCode,
    readonly detail: string,
    readonly errors?: FieldError[],
    readonly headers?: Record<string, string>,
  ) {
    super(detail);
  }
  get status(): number {
    return PROBLEMS[this.code].status;
  }
}

/** A zod issue, as much of it as naming the field needs. */
type SchemaIssue = { path: PropertyKey[]; message: string; code?: string; keys?: string[] };

/**
 * Field errors of a failed schema validation, one per bad field: an unknown field (zod's `unrecognized_keys`, one
 * issue for all of an object's extra keys) is named by its own path, so `{"shedule": …}` answers `shedule`.
 * @param prefix dotted path the issues are relative to ('' for the body)
 */
export function schemaFieldErrors(issues: readonly SchemaIssue[], prefix = ''): FieldError[] {
  const join = (parts: PropertyKey[]) => [prefix, ...parts.map(String)].filter((p) => p !== '').join('.') || '(body)';
  return issues.flatMap((i) =>
    i.code === 'unrecognized_keys' && i.keys?.length
      ? i.keys.map((k) => ({ path: join([...i.path, k]), message: 'unknown field' }))
      : [{ path: join(i.path), message: i.message }],
  );
}

/** Shorthand for a 400 naming the bad fields. */
export function validationError(errors: FieldError[]): ApiError {
  return new ApiError('validation', errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors);
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The RFC 9457 body of a problem: `{ type, title, status, detail, errors?, requestId? }`. */
export function problemBody(code: ProblemCode, detail: string, errors?: FieldError[], requestId?: string) {
  const { title, status } = PROBLEMS[code];
  return { type: `urn:chime:problem:${code}`, title, status, detail, ...(errors ? { errors } : {}), ...(requestId ? { requestId } : {}) };
}

/** The problem+json response of an ApiError, with the request's id (src/api/requests.ts) in its body. */
export function problemResponse(c: Context, err: ApiError): Response {
  return new Response(JSON.stringify(problemBody(err.code, err.detail, err.errors, requestIdOf(c))), {
    status: err.status,
    headers: { 'content-type': PROBLEM_CONTENT_TYPE, ...(err.headers ?? {}) },
  });
}
