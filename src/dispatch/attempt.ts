/**
 * One attempt of one claimed run, from request to recorded outcome, independent of the HTTP client and of how
 * outcomes are written: the Node dispatcher (undici, batched finishes) and the Workers `scheduled` handler (fetch)
 * both run it.
 */
import { type AttemptOutcome, decideAfterAttempt, ERROR_CLASS, type HttpResult } from '../domain/attempt-outcome.ts';
import type { ClaimedRun } from '../domain/claimed-run.ts';
import type { Clock } from '../domain/clock.ts';
import {
  CONTROL_HEADER,
  capResponseHeaders,
  parseChimeControl,
  RESPONSE_BODY_KEEP_BYTES,
  type ResultResponse,
  resultBody,
} from '../domain/receiver-control.ts';
import { storableText } from '../domain/storable-text.ts';
import { sendWithAuth } from './callback-auth.ts';
import { buildCallbackRequest } from './callback-request.ts';
import type { CallbackRequest, Deliver } from './deliver.ts';
import type { Keyring } from './keyring.ts';
import { createOAuthTokens, type OAuthTokens } from './oauth-token.ts';
import { type DispatchTracer, redactedUrl } from './tracing.ts';

export type AttemptDeps = {
  clock: Clock;
  keyring: Keyring;
  deliver: Deliver;
  userAgent: string;
  /** Uniform [0, 1) for backoff jitter. */
  random: () => number;
  /** Called when the request could not be built (a sealed secret that does not open): the attempt fails `internal`. */
  onBuildError?: (err: unknown, run: ClaimedRun) => void;
  /** Checked after the request is built, before it is sent: true = the lease was given back, do not send. */
  abandoned?: (run: ClaimedRun) => boolean;
  /** Makes a client span per request sent (README "Traces"); absent: none, and no `traceparent` header. */
  tracer?: DispatchTracer;
  /** OAuth2 tokens of `callback.auth` (oauth-token.ts); absent: one cache per `deliver` (`tokensFor`). */
  tokens?: OAuthTokens;
};

/** One token cache per delivery function, so a driver that passes none still shares tokens across its attempts. */
const tokenCaches = new WeakMap<Deliver, OAuthTokens>();

/** The token cache of `deps`: its own, else the one of its `deliver`. */
function tokensFor(deps: AttemptDeps): OAuthTokens {
  if (deps.tokens) return deps.tokens;
  let tokens = tokenCaches.get(deps.deliver);
  if (!tokens) tokenCaches.set(deps.deliver, (tokens = createOAuthTokens(deps)));
  return tokens;
}

/**
 * Builds, signs and sends the callback of `run` (with its `callback.auth`: callback-auth.ts), then decides what its
 * result means (API.md "The callback request").
 * @returns the outcome to record, or null when `abandoned(run)` said the run is no longer ours to send
 * Never throws: delivery and build errors become failed attempts.
 */
export async function performAttempt(run: ClaimedRun, deps: AttemptDeps): Promise<AttemptOutcome | null> {
  const { clock } = deps;
  const startedAtMs = clock.now();
  let result: HttpResult;
  /** The attempt span's `traceparent`, when traced: the finish that records the outcome links to it. */
  let traceParent: string | undefined;
  try {
    const req = await buildCallbackRequest(run, deps.keyring, startedAtMs, deps.userAgent);
    // The whole body (to 64 KiB) only when something reads it: memory per request in flight stays at the excerpt.
    if (run.callback.successBody || run.onSuccess || run.onFailure) req.keepBodyBytes = RESPONSE_BODY_KEEP_BYTES;
    const { tracer } = deps;
    const send = async (r: CallbackRequest): Promise<HttpResult> => {
      if (!tracer) return deps.deliver(r, () => clock.now());
      let sent: HttpResult;
      [sent, traceParent] = await deliverTraced(tracer, run, r, deps);
      return sent;
    };
    const authDeps = { clock, keyring: deps.keyring, tokens: tokensFor(deps) };
    // Checked immediately before each request leaves (invariant 14), after any token request.
    const sent = await sendWithAuth(run, req, authDeps, send, () => deps.abandoned?.(run) ?? false, startedAtMs);
    if (sent === null) return null;
    result = sent;
  } catch (err) {
    deps.onBuildError?.(err, run);
    result = { kind: 'error', errorClass: ERROR_CLASS.internal, message: `internal error: ${(err as Error).message}`, maybeSent: false };
  }
  const outcome = outcomeOf(run, result, startedAtMs, clock.now(), deps.random);
  if (traceParent !== undefined) outcome.attemptTraceParent = traceParent;
  return outcome;
}

/**
 * Sends `req` inside a client span (OpenTelemetry HTTP client semantic conventions: named by the method; `url.full`
 * redacted, `http.request.method`, `server.address`, `server.port`, `http.response.status_code`, `error.type`; status
 * ERROR for an error or a status of 400 or more) with `chime.run_id`, `chime.job_id`, `chime.attempt`,
 * `chime.tenant_id`, linked to the request that created the job and to the claim that took the run. The request
 * carries the span's W3C `traceparent` header (it is not signed: the signatures cover the body and the URL only).
 * @returns the delivery's result and the span's `traceparent`; never rejects (as `Deliver`)
 */
async function deliverTraced(
  tracer: DispatchTracer,
  run: ClaimedRun,
  req: CallbackRequest,
  deps: AttemptDeps,
): Promise<[HttpResult, string]> {
  let server: { address?: string; port?: number } = {};
  try {
    const u = new URL(req.url);
    server = { address: u.hostname, port: u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80 };
  } catch {
    // The delivery reports the URL's error.
  }
  const span = tracer.startSpan(req.method, {
    kind: 'client',
    attributes: {
      'http.request.method': req.method,
      'url.full': redactedUrl(req.url),
      'server.address': server.address,
      'server.port': server.port,
      'chime.run_id': run.runId,
      'chime.job_id': run.jobId,
      'chime.tenant_id': run.tenantId,
      'chime.attempt': run.attempt,
    },
    links: [
      { traceParent: run.jobTraceParent, attributes: { 'chime.link': 'job.created' } },
      { traceParent: run.claimTraceParent, attributes: { 'chime.link': 'claim' } },
    ],
  });
  req.headers.traceparent = span.traceParent;
  try {
    const result = await deps.deliver(req, () => deps.clock.now());
    if (result.kind === 'response') {
      span.setAttributes({ 'http.response.status_code': result.status });
      if (result.status >= 400) {
        span.setAttributes({ 'error.type': String(result.status) });
        span.fail(`HTTP ${result.status}`);
      }
    } else {
      span.setAttributes({ 'error.type': result.errorClass });
      span.fail(result.message);
    }
    return [result, span.traceParent];
  } finally {
    span.end();
  }
}

/**
 * The recorded form of an attempt's result: the decision of `decideAfterAttempt` plus the attempt log fields. The
 * receiver's excerpt and the error text are made storable here (`storableText`), the one place both the Node and the
 * Workers results pass: a NUL in one answer must not fail its bucket's finish.
 */
export function outcomeOf(
  run: ClaimedRun,
  result: HttpResult,
  startedAtMs: number,
  finishedAtMs: number,
  random: () => number,
): AttemptOutcome {
  const response = result.kind === 'response' ? result : null;
  const control = parseChimeControl(response?.headers?.[CONTROL_HEADER]);
  const d = decideAfterAttempt(
    {
      attempt: run.attempt,
      scheduledForMs: run.scheduledForMs,
      relevancyWindowMs: run.relevancyWindowMs,
      retry: run.retry,
      deliveryMode: run.deliveryMode,
      successStatusCodes: run.callback.successStatusCodes,
      successBody: run.callback.successBody ?? null,
      control: control.tokens,
    },
    result,
    finishedAtMs,
    random,
  );
  const headers = response?.headers ? storableHeaders(capResponseHeaders(response.headers)) : null;
  const outcome: AttemptOutcome = {
    ...d,
    shard: run.shard,
    runId: run.runId,
    jobId: run.jobId,
    attempt: run.attempt,
    startedAtMs,
    finishedAtMs,
    responseStatus: result.kind === 'response' ? result.status : null,
    responseBodyExcerpt: result.kind === 'response' ? storableText(result.bodyExcerpt) : null,
    error: d.error === null ? null : storableText(d.error),
    responseHeaders: headers,
  };
  // An async job's success only acknowledges the attempt: the finish makes the run await the receiver's report.
  if (d.runStatus === 'succeeded' && run.completion) {
    outcome.awaitCompletion = { timeoutMs: run.completion.timeoutMs, heartbeatTimeoutMs: run.completion.heartbeatTimeoutMs ?? null };
  }
  if (control.unknown.length > 0) {
    outcome.attemptNote = storableText(`Chime-Control: ignored unknown token(s) ${control.unknown.join(', ')}`);
  }
  const acting = control.tokens.filter((t) => t === 'complete' || t === 'skip-next');
  if (acting.length > 0) outcome.control = acting;
  // Result routing: a run that ended so, of a job that routes that end (never a delivery's own end).
  const route = d.runStatus === 'succeeded' ? run.onSuccess : d.runStatus === 'failed' ? run.onFailure : null;
  if (route) {
    const carried: ResultResponse | null = response
      ? {
          status: response.status,
          headers: headers ?? {},
          ...resultBody(response.body ?? new TextEncoder().encode(response.bodyExcerpt), response.bodyTruncated ?? false),
        }
      : null;
    outcome.resultDelivery = { url: route.url, response: carried };
  }
  return outcome;
}

/** Header values made storable (`storableText`: no NUL, no lone surrogate), as the excerpt is. */
function storableHeaders(h: Record<string, string>): Record<string, string> {
  for (const k of Object.keys(h)) h[k] = storableText(h[k]!);
  return h;
}
