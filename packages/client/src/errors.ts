/** `ChimeError`: every answer of the API that is not a success, as an exception carrying its problem details. */

/** One bad field of a `400`: `path` in dotted form (`schedule.expression`, `callback.headers.Host`, `(body)`). */
export type FieldError = { path: string; message: string };

/**
 * An error answer of the Chime API: the RFC 9457 problem details it sent (`application/problem+json`, API.md
 * "Conventions"). Every method of the client throws it for a non-2xx status, after the bounded retries of `429` and
 * `503` (see `RetryOptions`). Network failures (DNS, connection refused, an aborted request) are not answers: they
 * reject with the error of `fetch` itself (a `TypeError` or an `AbortError` `DOMException`).
 *
 * @example
 * try { await client.jobs.create(body) } catch (err) {
 *   if (err instanceof ChimeError && err.status === 400) for (const e of err.errors) console.log(e.path, e.message);
 * }
 */
export class ChimeError extends Error {
  override name = 'ChimeError';
  /** The HTTP status (`400`, `401`, `404`, `409`, `413`, `415`, `429`, `500`, `503`, …). */
  readonly status: number;
  /** The problem type: `urn:chime:problem:<code>` (`…:validation`, `…:not_found`, `…:conflict`, …), or `about:blank` when the answer was not a problem document (e.g. a proxy's error page). */
  readonly type: string;
  /** A short summary of the problem type (`"The request is invalid"`). */
  readonly title: string;
  /** What went wrong with this request, in words (for a `400`: every bad field, `path: message; …`). */
  readonly detail: string;
  /** For a `400` that names fields: one entry per bad field; otherwise empty. */
  readonly errors: FieldError[];
  /** The body as answered: the problem document (parsed JSON), or the text of a body that was not JSON, or undefined when empty. */
  readonly problem: unknown;
  /** The answer's headers (`Retry-After`, `WWW-Authenticate`, …). */
  readonly headers: Headers;
  /** The operation that failed, as `METHOD /path/{param}` (e.g. `GET /v1/jobs/{jobId}`). */
  readonly operation: string;

  constructor(init: {
    status: number;
    type: string;
    title: string;
    detail: string;
    errors?: FieldError[];
    problem?: unknown;
    headers?: Headers;
    operation?: string;
  }) {
    super(`${init.operation ? `${init.operation}: ` : ''}${init.status} ${init.title}${init.detail ? `: ${init.detail}` : ''}`);
    this.status = init.status;
    this.type = init.type;
    this.title = init.title;
    this.detail = init.detail;
    this.errors = init.errors ?? [];
    this.problem = init.problem;
    this.headers = init.headers ?? new Headers();
    this.operation = init.operation ?? '';
  }

  /**
   * The error of a non-2xx answer.
   * @param body the body as openapi-fetch read it: parsed JSON when it was JSON, else its text (undefined when empty)
   * @param operation `METHOD /path` for the message
   */
  static fromResponse(response: Response, body: unknown, operation = ''): ChimeError {
    const p = isRecord(body) ? body : {};
    const text = typeof body === 'string' ? body.trim().slice(0, 500) : '';
    return new ChimeError({
      status: response.status,
      type: typeof p.type === 'string' ? p.type : 'about:blank',
      title: typeof p.title === 'string' ? p.title : response.statusText || `HTTP ${response.status}`,
      detail: typeof p.detail === 'string' ? p.detail : text,
      errors: Array.isArray(p.errors) ? p.errors.filter(isFieldError) : [],
      problem: body,
      headers: response.headers,
      operation,
    });
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isFieldError(v: unknown): v is FieldError {
  return isRecord(v) && typeof v.path === 'string' && typeof v.message === 'string';
}
