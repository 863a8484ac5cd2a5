/**
 * The job form's model, part 3: where the API's field errors go. A `400`'s `errors[].path` (as in the request body,
 * dotted) names a form field, or a field of a union's schedule or of a `then` link; the messages are sorted into the
 * fields shown and the rest. Pure (test/console/job-form-model.test.ts).
 */
import type { FieldError } from '../types.ts';
import { addError, type ErrorKey, type Errors, type FieldName, type MemberField, memberKey, thenKey } from './form-model.ts';

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
  calendar: 'calendar',
  maxRuns: 'maxRuns',
  jitterMode: 'jitterMode',
  then: 'then',
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
  calendar: { key: 'calendar', roll: 'roll' },
};
/** The schedule fields a union's schedule has (`schedule.schedules.1.expression` → `members.1.expr`). */
const MEMBER_PATHS: Readonly<Record<string, MemberField | 'type'>> = {
  type: 'type',
  at: 'at',
  everyMs: 'every',
  startAt: 'start',
  endAt: 'end',
  dates: 'dates',
  expression: 'expr',
  timezone: 'tz',
};

/** What to say before a message about the part `tail` of a field: "entry 4" for `3`, else the tail itself. */
const prefixOf = (tail: string) => (/^\d+$/.test(tail) ? `entry ${Number(tail) + 1}` : tail);

/**
 * The form field an API error path names, and what to say before the message: `callback.url` → url;
 * `schedule.dates.3` → dates, "entry 4"; `callback.headers.X-Team` → headers, "X-Team"; `metadata.team` → metadata;
 * `schedule.schedules.1.expression` → members.1.expr; `calendar.roll` → roll; `then.2.jobId` → then.2.jobId.
 * @returns null when the path names no field of the form
 */
export function fieldOfPath(path: string): { field: ErrorKey; prefix: string } | null {
  const parts = path.split('.');
  const [head, sub, ...rest] = parts;
  if (!head) return null;
  if (parts.length === 1 && TOP_LEVEL[head]) return { field: TOP_LEVEL[head], prefix: '' };
  if (head === 'metadata') return { field: 'metadata', prefix: parts.slice(1).join('.') };
  if (head === 'schedule' && sub === undefined) return { field: 'type', prefix: '' };
  if (head === 'schedule' && sub === 'schedules') return memberOfPath(rest);
  if (head === 'then') return thenOfPath(parts.slice(1));
  const field = sub ? NESTED[head]?.[sub] : undefined;
  if (!field) return null;
  const tail = rest.join('.');
  return { field, prefix: tail ? prefixOf(tail) : '' };
}

/** `fieldOfPath` of the path inside `schedule.schedules` (`1.dates.3`). */
function memberOfPath([index, sub, ...rest]: string[]): { field: ErrorKey; prefix: string } {
  if (index === undefined || !/^\d+$/.test(index)) return { field: 'members', prefix: '' };
  const field = sub ? MEMBER_PATHS[sub] : undefined;
  if (!field) return { field: 'members', prefix: `schedule ${Number(index) + 1}` };
  const tail = rest.join('.');
  return { field: memberKey(Number(index), field), prefix: tail ? prefixOf(tail) : '' };
}

/** `fieldOfPath` of the path inside `then` (`2.jobId`); a whole link's problem is shown at its job. */
function thenOfPath([index, sub]: string[]): { field: ErrorKey; prefix: string } {
  if (index === undefined || !/^\d+$/.test(index)) return { field: 'then', prefix: '' };
  return { field: thenKey(Number(index), sub === 'on' ? 'on' : 'jobId'), prefix: '' };
}

/**
 * Sorts the API's field errors (a `400`'s `errors`) into the fields shown and the rest.
 * @param visible the fields on screen: an error about a hidden field is not put where nobody sees it
 * @returns the messages by field, and the errors that name no field shown (for the message above the form)
 */
export function sortFieldErrors(list: readonly FieldError[], visible: readonly ErrorKey[]): { byField: Errors; unmatched: FieldError[] } {
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
