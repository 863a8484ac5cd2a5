/**
 * One attempt of one claimed run, from request to recorded outcome, independent of the HTTP client and of how
 * outcomes are written: the Node dispatcher (undici, batched finishes) and the Workers `scheduled` handler (fetch)
 * both run it.
 */
import { type AttemptOutcome, decideAfterAttempt, ERROR_CLASS, type HttpResult } from '../domain/attempt-outcome.ts';
import type { ClaimedRun } from '../domain/claimed-run.ts';
import type { Clock } from '../domain/clock.ts';
import { storableText } from '../domain/storable-text.ts';
import { buildCallbackRequest } from './callback-request.ts';
import type { Deliver } from './deliver.ts';
import type { Keyring } from './keyring.ts';

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
};

/**
 * Builds, signs and sends the callback of `run`, then decides what its result means (API.md "The callback request").
 * @returns the outcome to record, or null when `abandoned(run)` said the run is no longer ours to send
 * Never throws: delivery and build errors become failed attempts.
 */
export async function performAttempt(run: ClaimedRun, deps: AttemptDeps): Promise<AttemptOutcome | null> {
  const { clock } = deps;
  const startedAtMs = clock.now();
  let result: HttpResult;
  try {
    const req = await buildCallbackRequest(run, deps.keyring, startedAtMs, deps.userAgent);
    if (deps.abandoned?.(run)) return null;
    result = await deps.deliver(req, () => clock.now());
  } catch (err) {
    deps.onBuildError?.(err, run);
    result = { kind: 'error', errorClass: ERROR_CLASS.internal, message: `internal error: ${(err as Error).message}`, maybeSent: false };
  }
  return outcomeOf(run, result, startedAtMs, clock.now(), deps.random);
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
  const d = decideAfterAttempt(
    {
      attempt: run.attempt,
      scheduledForMs: run.scheduledForMs,
      relevancyWindowMs: run.relevancyWindowMs,
      retry: run.retry,
      deliveryMode: run.deliveryMode,
      successStatusCodes: run.callback.successStatusCodes,
    },
    result,
    finishedAtMs,
    random,
  );
  return {
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
  };
}
