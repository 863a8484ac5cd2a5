/**
 * Notification events: what a tenant hears about its own jobs (API.md "Notification endpoints"), and how their
 * deliveries are retried. Pure: the store records events in the transaction of the state change that causes them.
 */
import type { RetryPolicy } from './retry.ts';

/** The events a notification endpoint may subscribe to (API.md "Notification endpoints"). */
export const EVENT_TYPES = ['run.failed', 'run.expired', 'job.paused', 'job.completed'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Why Chime (or the tenant) paused a job: the Job's `pausedReason`. */
export const PAUSED_REASON = Object.freeze({
  manual: 'manual',
  /** The receiver answered 410 Gone. */
  gone: 'gone',
  /** `pauseAfterFailures` consecutive runs ended `failed`. */
  consecutiveFailures: 'consecutive_failures',
  /** The receiver answered with `Chime-Control: pause`. */
  receiver: 'receiver',
} as const);
export type PausedReason = (typeof PAUSED_REASON)[keyof typeof PAUSED_REASON];

/** An event to record: its type, whose, and about which job (and run). */
export type EventSeed = { type: EventType; tenantId: string; jobId: string; runId?: string; reason?: string };

/** What an event shows in place of each custom callback header's value (the name stays). */
export const REDACTED_HEADER_VALUE = '[redacted]';

/**
 * A job's custom callback headers as an event shows them: every name kept, every value replaced by
 * REDACTED_HEADER_VALUE. Header values are often API keys of the tenant's receiver, and notification endpoints are
 * often third-party alerting tools: the API shows the values to the tenant, an event never sends them elsewhere.
 * @param headers header name → value, as the job's `callback.headers`
 * @returns a new object with the same names
 */
export function redactHeaderValues(headers: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.keys(headers).map((name) => [name, REDACTED_HEADER_VALUE]));
}

/** Most notification endpoints per tenant. */
export const MAX_NOTIFICATION_ENDPOINTS = 10;

/** Deliveries of events are at least once for a day (API.md): the relevancy window of a delivery, in ms. */
export const EVENT_DELIVERY_WINDOW_MS = 24 * 3_600_000;

/**
 * Backoff of event deliveries: exponential from 5 s, capped at 1 h, with jitter; the 24 h relevancy window ends the
 * retries (about 30 attempts), not the attempt count.
 */
export const EVENT_DELIVERY_RETRY: RetryPolicy = {
  strategy: 'exponential',
  maxAttempts: 100,
  initialDelayMs: 5_000,
  maxDelayMs: 3_600_000,
  multiplier: 2,
  jitter: true,
};
