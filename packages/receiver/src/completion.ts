/**
 * The receiver's side of a long-running job (API.md "Long-running jobs: completion reported by the receiver"): a job
 * with `"completion": { "mode": "async" }` sends each attempt with `Chime-Completion-Url` and `Chime-Completion-Token`;
 * the receiver answers `202` at once, does the work, and reports its end (`complete`) to that URL with that token as
 * `Authorization: Bearer` (no API key), heartbeating meanwhile when the job sets `heartbeatTimeoutMs`.
 *
 * ```ts
 * const completion = completionOf(request.headers); // null for a job whose response decides the run
 * if (completion) {
 *   queueMicrotask(async () => {
 *     await completion.heartbeat({ step: 1 });
 *     await completion.complete({ status: 'succeeded', output: { rows: 1234 } });
 *   });
 *   return new Response(null, { status: 202 });
 * }
 * ```
 *
 * `fetch` only (global, or given): Node ≥ 20, Workers, Deno, Bun.
 */
import { type HeadersLike, headerValue } from './internal.ts';

/** The request headers naming where and with what credential to report (lower-case, as sent). */
export const COMPLETION_URL_HEADER = 'chime-completion-url';
export const COMPLETION_TOKEN_HEADER = 'chime-completion-token';

/** A report of the attempt's end: `succeeded` (with `output`, any JSON ≤ 16 KiB) or `failed` (with `error`). */
export type CompletionResult = { status: 'succeeded'; output?: unknown } | { status: 'failed'; error?: string; output?: unknown };

/** What Chime answers a heartbeat: when the report is due, and the next heartbeat (null: none needed). RFC 3339 UTC. */
export type HeartbeatAnswer = { completionDeadline: string; heartbeatDeadline: string | null };

/** Options of `completionOf`. */
export type CompletionOptions = {
  /** The fetch to report with (default: the global one). */
  fetch?: (input: string, init: { method: string; headers: Record<string, string>; body: string }) => Promise<Response>;
};

/**
 * An attempt's completion handle: its URL and token, and the two calls a receiver makes.
 * Both calls reject with a `CompletionError` when Chime refuses (`status`: 401 a wrong or stale token, 409 the
 * attempt was already reported or timed out, 400 an output or progress over its limit, 404 the run is gone), or with
 * fetch's error when Chime cannot be reached (retry then: a report is idempotent until one is recorded).
 */
export type ChimeCompletion = {
  /** `Chime-Completion-Url`: `<Chime's public URL>/v1/runs/<runId>/completion`. */
  url: string;
  /** `Chime-Completion-Token`: the credential of this attempt, and of nothing else. */
  token: string;
  /** Reports the end of the attempt. @returns the run as Chime now has it (the API's Run) */
  complete(result: CompletionResult): Promise<Record<string, unknown>>;
  /** Postpones the heartbeat deadline; `progress` (any JSON ≤ 1 KiB) is shown on the run. */
  heartbeat(progress?: unknown): Promise<HeartbeatAnswer>;
};

/** Chime refused a report or heartbeat: `status` is the HTTP status, `detail` Chime's explanation. */
export class CompletionError extends Error {
  override name = 'CompletionError';
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(`Chime answered ${status}: ${detail}`);
  }
}

/**
 * The completion handle of a request, from its `Chime-Completion-Url` and `Chime-Completion-Token` headers; null when
 * it has none (the job is not async). Verify the request first (`verifyAll`, or the framework helpers, which do
 * both): the URL is then Chime's own.
 * @param headers a fetch `Headers` or a record such as Node's `IncomingMessage.headers`
 * @throws TypeError when exactly one of the two headers is present, or the URL is not an absolute http(s) URL
 */
export function completionOf(headers: HeadersLike, opts: CompletionOptions = {}): ChimeCompletion | null {
  const url = headerValue(headers, COMPLETION_URL_HEADER, false);
  const token = headerValue(headers, COMPLETION_TOKEN_HEADER, false);
  if (!url && !token) return null;
  if (!url || !token) throw new TypeError('completionOf: Chime-Completion-Url and Chime-Completion-Token come together');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`completionOf: Chime-Completion-Url is not a URL: ${url}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new TypeError('completionOf: Chime-Completion-Url must be http(s)');
  const heartbeatUrl = url.replace(/\/completion$/, '/heartbeat');
  const send = async (to: string, body: unknown) => {
    const doFetch = opts.fetch ?? ((input, init) => fetch(input, init));
    const res = await doFetch(to, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    let parsedBody: unknown = null;
    try {
      parsedBody = text ? JSON.parse(text) : null;
    } catch {
      parsedBody = text;
    }
    if (!res.ok) {
      const detail = (parsedBody as { detail?: unknown } | null)?.detail;
      throw new CompletionError(res.status, typeof detail === 'string' ? detail : String(text).slice(0, 200));
    }
    return parsedBody;
  };
  return {
    url,
    token,
    complete: (result) => send(url, result) as Promise<Record<string, unknown>>,
    heartbeat: (progress) => send(heartbeatUrl, progress === undefined ? {} : { progress }) as Promise<HeartbeatAnswer>,
  };
}
