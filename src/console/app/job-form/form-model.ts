/**
 * The job form's model, part 1: what the form holds and how a job fills it, and how the API's field errors find their
 * fields. The form keeps every value as text, as typed, so nothing a user typed is lost when the API refuses it;
 * form-body.ts reads it into the API's job body. Pure: no DOM, no Preact (test/console/job-form-model.test.ts).
 *
 * Times typed in the form (`At`, `Start at`, `End at`, a date list's lines without an offset) are wall-clock times in
 * the viewer's zone, which every function here takes as `zone` (the console passes `viewerZone()`).
 */

import { DEFAULT_TIMEOUT_MS, HTTP_METHODS } from '../../../domain/job.ts';
import { DEFAULT_RETRY, RETRY_STRATEGIES } from '../../../domain/retry.ts';
import { CATCH_UP_POLICIES, DELIVERY_MODES, OVERLAP_POLICIES } from '../../../domain/states.ts';
import type { FieldError, Job, Schedule } from '../types.ts';
import { wallInputOf } from '../zones.ts';

export type ScheduleType = Schedule['type'];
export const SCHEDULE_TYPES: readonly ScheduleType[] = ['once', 'delay', 'interval', 'dates', 'cron'];
export { CATCH_UP_POLICIES, DELIVERY_MODES, HTTP_METHODS, OVERLAP_POLICIES, RETRY_STRATEGIES };

/** The form's values, as typed (text), so that nothing the user typed is lost when the API refuses it. */
export type FormState = {
  name: string;
  key: string;
  type: ScheduleType;
  at: string;
  delay: string;
  every: string;
  start: string;
  end: string;
  dates: string;
  expr: string;
  tz: string;
  url: string;
  method: string;
  headers: string;
  token: string;
  codes: string;
  timeout: string;
  strategy: string;
  attempts: string;
  initial: string;
  maxDelay: string;
  multiplier: string;
  /** Strategy `schedule`: the wait before each retry, ms, comma-separated. */
  delays: string;
  retryJitter: boolean;
  relevancy: string;
  delivery: string;
  overlap: string;
  catchUp: string;
  jitter: string;
  pause: string;
  metadata: string;
  payload: string;
  /** A body that is not JSON, sent as is instead of the payload. */
  body: string;
  contentType: string;
};
export type FieldName = keyof FormState;
/** The fields whose value is free text. */
export type TextName = Exclude<FieldName, 'retryJitter' | 'type'>;

/** The label of each control (browser tests find the controls by these). */
export const LABELS: Readonly<Record<FieldName, string>> = {
  name: 'Name',
  key: 'Key',
  type: 'Schedule type',
  at: 'At',
  delay: 'Delay (seconds)',
  every: 'Every (seconds)',
  start: 'Start at',
  end: 'End at',
  dates: 'Dates (one per line)',
  expr: 'Cron expression',
  tz: 'Time zone',
  url: 'Callback URL',
  method: 'Method',
  headers: 'Headers (one Name: value per line)',
  token: 'Auth token',
  codes: 'Success status codes',
  timeout: 'Timeout (ms)',
  strategy: 'Retry strategy',
  attempts: 'Max attempts',
  initial: 'Initial delay (ms)',
  maxDelay: 'Max delay (ms)',
  multiplier: 'Backoff multiplier',
  delays: 'Retry delays (ms)',
  retryJitter: 'Randomize retry delays',
  relevancy: 'Relevancy window (seconds)',
  delivery: 'Delivery mode',
  overlap: 'Overlap policy',
  catchUp: 'Catch-up after downtime',
  jitter: 'Jitter (ms)',
  pause: 'Pause after failures',
  metadata: 'Metadata (one key=value per line)',
  payload: 'Payload (JSON)',
  body: 'Body (sent as is)',
  contentType: 'Content type',
};

/** Every field of the schedule (their errors go stale together when any of them changes). */
export const SCHEDULE_FIELDS: readonly FieldName[] = ['type', 'at', 'delay', 'every', 'start', 'end', 'dates', 'expr', 'tz'];
/** The fields folded under "More options" (opened when one of them is in error). */
export const ADVANCED_FIELDS: readonly FieldName[] = ['multiplier', 'retryJitter', 'overlap', 'catchUp', 'jitter'];

/** The fields a schedule type shows, besides the type itself. */
export function scheduleFields(type: ScheduleType): FieldName[] {
  switch (type) {
    case 'once':
      return ['at'];
    case 'delay':
      return ['delay'];
    case 'interval':
      return ['every', 'start', 'end'];
    case 'dates':
      return ['dates'];
    case 'cron':
      return ['expr', 'tz', 'start', 'end'];
  }
}

/** Every field the form shows, in order, for a schedule `type` (the key only when creating). */
export function visibleFields(type: ScheduleType, edit: boolean): FieldName[] {
  const rest: FieldName[] = [
    'url',
    'method',
    'headers',
    'token',
    'codes',
    'timeout',
    'strategy',
    'attempts',
    'initial',
    'maxDelay',
    'delays',
    'relevancy',
    'delivery',
    'pause',
    'metadata',
    'payload',
    'body',
    'contentType',
  ];
  return ['name', ...(edit ? [] : (['key'] as FieldName[])), 'type', ...scheduleFields(type), ...rest, ...ADVANCED_FIELDS];
}

/** Messages by field; a field has at most one message (several are joined with "; "). */
export type Errors = Partial<Record<FieldName, string>>;

/** Adds `message` to the errors of `field`. */
export function addError(errors: Errors, field: FieldName, message: string): void {
  errors[field] = errors[field] ? `${errors[field]}; ${message}` : message;
}

/**
 * The form of a new job: the API's defaults, a cron schedule in `zone` (the viewer's).
 * @param zone the IANA zone the time zone picker starts on
 */
export function blankForm(zone: string): FormState {
  return {
    name: '',
    key: '',
    type: 'cron',
    at: '',
    delay: '60',
    every: '3600',
    start: '',
    end: '',
    dates: '',
    expr: '',
    tz: zone,
    url: '',
    method: 'POST',
    headers: '',
    token: '',
    codes: '2xx',
    timeout: String(DEFAULT_TIMEOUT_MS),
    strategy: DEFAULT_RETRY.strategy,
    attempts: String(DEFAULT_RETRY.maxAttempts),
    initial: String(DEFAULT_RETRY.initialDelayMs),
    maxDelay: String(DEFAULT_RETRY.maxDelayMs),
    multiplier: String(DEFAULT_RETRY.multiplier),
    delays: '',
    retryJitter: DEFAULT_RETRY.jitter,
    relevancy: '',
    delivery: 'at-least-once',
    overlap: 'allow',
    catchUp: 'one',
    jitter: '0',
    pause: '0',
    metadata: '',
    payload: '',
    body: '',
    contentType: '',
  };
}

/**
 * The form of an existing job, with the times it shows mapped back to the stored instants (`exact`): a time is shown
 * to the minute, so an unchanged field must give back its stored seconds (form-body.ts `parseTime`).
 * @param zone the viewer's zone, the wall clock the form's times are shown on
 */
export function formFromJob(job: Job, zone: string): { form: FormState; exact: Map<string, string> } {
  const exact = new Map<string, string>();
  const wall = (iso: string | undefined) => {
    const text = wallInputOf(iso, zone);
    if (text && iso) exact.set(text, iso);
    return text;
  };
  const form = blankForm(zone);
  const s = job.schedule;
  form.type = s.type;
  switch (s.type) {
    case 'once':
      form.at = wall(s.at);
      break;
    case 'delay':
      form.delay = String(s.delayMs / 1000);
      break;
    case 'interval':
      form.every = String(s.everyMs / 1000);
      form.start = wall(s.startAt);
      form.end = wall(s.endAt);
      break;
    case 'dates':
      form.dates = s.dates.join('\n');
      break;
    case 'cron':
      form.expr = s.expression;
      form.tz = s.timezone ?? 'UTC';
      form.start = wall(s.startAt);
      form.end = wall(s.endAt);
      break;
  }
  const r = job.retry;
  const text = (n: number | undefined) => (n === undefined ? '' : String(n));
  const pairs = (record: Record<string, string>, sep: string) =>
    Object.entries(record)
      .map(([k, v]) => `${k}${sep}${v}`)
      .join('\n');
  Object.assign(form, {
    name: job.name ?? '',
    key: job.key ?? '',
    url: job.callback.url,
    method: job.callback.method,
    headers: pairs(job.callback.headers, ': '),
    codes: job.callback.successStatusCodes.join(', '),
    timeout: String(job.callback.timeoutMs),
    strategy: r.strategy ?? DEFAULT_RETRY.strategy,
    attempts: text(r.maxAttempts),
    initial: text(r.initialDelayMs),
    maxDelay: text(r.maxDelayMs),
    multiplier: text(r.multiplier),
    delays: (r.delaysMs ?? []).join(', '),
    retryJitter: r.jitter ?? DEFAULT_RETRY.jitter,
    relevancy: job.relevancyWindowMs === null ? '' : String(job.relevancyWindowMs / 1000),
    delivery: job.deliveryMode,
    overlap: job.overlapPolicy,
    catchUp: job.catchUp,
    jitter: String(job.jitterMs),
    pause: String(job.pauseAfterFailures),
    metadata: pairs(job.metadata, '='),
    payload: job.payload === undefined || job.payload === null ? '' : JSON.stringify(job.payload, null, 2),
    body: job.body ?? '',
    contentType: job.callback.contentType ?? '',
  } satisfies Partial<FormState>);
  return { form, exact };
}

/** The top-level body fields named by one form field each. */
const TOP_LEVEL: Readonly<Record<string, FieldName>> = {
  name: 'name',
  key: 'key',
  payload: 'payload',
  body: 'body',
  relevancyWindowMs: 'relevancy',
  deliveryMode: 'delivery',
  overlapPolicy: 'overlap',
  catchUp: 'catchUp',
  jitterMs: 'jitter',
  pauseAfterFailures: 'pause',
};
/** The fields of the body's objects, by object. */
const NESTED: Readonly<Record<string, Readonly<Record<string, FieldName>>>> = {
  schedule: {
    type: 'type',
    at: 'at',
    delayMs: 'delay',
    everyMs: 'every',
    startAt: 'start',
    endAt: 'end',
    dates: 'dates',
    expression: 'expr',
    timezone: 'tz',
  },
  callback: {
    url: 'url',
    method: 'method',
    headers: 'headers',
    authToken: 'token',
    successStatusCodes: 'codes',
    timeoutMs: 'timeout',
    contentType: 'contentType',
  },
  retry: {
    strategy: 'strategy',
    maxAttempts: 'attempts',
    initialDelayMs: 'initial',
    maxDelayMs: 'maxDelay',
    multiplier: 'multiplier',
    jitter: 'retryJitter',
    delaysMs: 'delays',
  },
};

/**
 * The form field an API error path names, and what to say before the message: `callback.url` → url;
 * `schedule.dates.3` → dates, "entry 4"; `callback.headers.X-Team` → headers, "X-Team"; `metadata.team` → metadata.
 * @returns null when the path names no field of the form
 */
export function fieldOfPath(path: string): { field: FieldName; prefix: string } | null {
  const parts = path.split('.');
  const [head, sub, ...rest] = parts;
  if (!head) return null;
  if (parts.length === 1 && TOP_LEVEL[head]) return { field: TOP_LEVEL[head], prefix: '' };
  if (head === 'metadata') return { field: 'metadata', prefix: parts.slice(1).join('.') };
  if (head === 'schedule' && sub === undefined) return { field: 'type', prefix: '' };
  const field = sub ? NESTED[head]?.[sub] : undefined;
  if (!field) return null;
  const tail = rest.join('.');
  if (!tail) return { field, prefix: '' };
  return { field, prefix: /^\d+$/.test(tail) ? `entry ${Number(tail) + 1}` : tail };
}

/**
 * Sorts the API's field errors (a `400`'s `errors`) into the fields shown and the rest.
 * @param visible the fields on screen: an error about a hidden field is not put where nobody sees it
 * @returns the messages by field, and the errors that name no field shown (for the message above the form)
 */
export function sortFieldErrors(list: readonly FieldError[], visible: readonly FieldName[]): { byField: Errors; unmatched: FieldError[] } {
  const byField: Errors = {};
  const unmatched: FieldError[] = [];
  for (const e of list) {
    const target = fieldOfPath(e.path);
    if (target && visible.includes(target.field))
      addError(byField, target.field, target.prefix ? `${target.prefix}: ${e.message}` : e.message);
    else unmatched.push(e);
  }
  return { byField, unmatched };
}
