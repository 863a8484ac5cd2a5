/**
 * Long-running jobs whose receiver reports the end of each run (API.md "Long-running jobs: completion reported by the
 * receiver"). A job's `completion` is `{ mode: 'async', timeoutMs, heartbeatTimeoutMs? }` (stored normalized, with the
 * default timeout filled in) or null (mode `response`: the response to an attempt decides the run, as before).
 */

/** Bounds and default of `completion.timeoutMs` (how long Chime waits for the report after the acknowledgement), in ms. */
export const COMPLETION_MIN_TIMEOUT_MS = 60_000;
export const COMPLETION_MAX_TIMEOUT_MS = 86_400_000;
export const COMPLETION_DEFAULT_TIMEOUT_MS = 3_600_000;
/** Bounds of `completion.heartbeatTimeoutMs` (the longest silence between heartbeats), in ms. */
export const HEARTBEAT_MIN_TIMEOUT_MS = 10_000;
export const HEARTBEAT_MAX_TIMEOUT_MS = 3_600_000;
/** Largest `output` of a report and `progress` of a heartbeat, as JSON text in UTF-8 bytes. */
export const MAX_OUTPUT_BYTES = 16 * 1024;
export const MAX_PROGRESS_BYTES = 1024;

export const COMPLETION_MODES = ['response', 'async'] as const;
export type CompletionMode = (typeof COMPLETION_MODES)[number];

/** An async job's completion settings as stored (`jobs.completion`), times in ms. */
export type AsyncCompletion = { mode: 'async'; timeoutMs: number; heartbeatTimeoutMs?: number };

/** What the receiver may report (`POST /v1/runs/:runId/completion`). */
export const REPORTED_STATUSES = ['succeeded', 'failed'] as const;
export type ReportedStatus = (typeof REPORTED_STATUSES)[number];

/**
 * The stored form of a job's `completion` input: null for mode `response` (or none given), else the async settings
 * with `timeoutMs` defaulted (COMPLETION_DEFAULT_TIMEOUT_MS). The bounds are the API schema's to check.
 */
export function normalizeCompletion(
  input: { mode: CompletionMode; timeoutMs?: number; heartbeatTimeoutMs?: number } | null | undefined,
): AsyncCompletion | null {
  if (!input || input.mode === 'response') return null;
  return {
    mode: 'async',
    timeoutMs: input.timeoutMs ?? COMPLETION_DEFAULT_TIMEOUT_MS,
    ...(input.heartbeatTimeoutMs === undefined ? {} : { heartbeatTimeoutMs: input.heartbeatTimeoutMs }),
  };
}

/** A stored `jobs.completion` value as the async settings, or null when the job's responses decide its runs. */
export function asyncCompletionOf(stored: unknown): AsyncCompletion | null {
  const c = stored as Partial<AsyncCompletion> | null | undefined;
  if (c?.mode !== 'async') return null;
  return {
    mode: 'async',
    timeoutMs: typeof c.timeoutMs === 'number' ? c.timeoutMs : COMPLETION_DEFAULT_TIMEOUT_MS,
    ...(typeof c.heartbeatTimeoutMs === 'number' ? { heartbeatTimeoutMs: c.heartbeatTimeoutMs } : {}),
  };
}

/** The size of `value` as JSON text, in UTF-8 bytes (what the report limits count). */
export function jsonBytes(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value) ?? '').byteLength;
}
