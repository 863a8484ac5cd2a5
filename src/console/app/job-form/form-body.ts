/**
 * The job form's model, part 2: reading the form (text, as typed) into the API's job body, with a message beside each
 * field it cannot read, and the part of an edit that changed. Pure (test/console/job-form-model.test.ts).
 */
import type { Schedule, UnionMember } from '../types.ts';
import { instantOfWallTime } from '../zones.ts';
import {
  addError,
  type ErrorKey,
  type Errors,
  type FormState,
  MAX_UNION_SCHEDULES,
  type MemberField,
  type MemberType,
  MIN_UNION_SCHEDULES,
  memberKey,
  thenKey,
} from './form-model.ts';

/** A job body as the form builds it (the API's `JobBodySchema` input; `null` clears a field on an edit). */
export type JobBodyDraft = Record<string, unknown>;

const WALL_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?$/;
const OFFSET_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$/i;

/**
 * Reads a time as a user types it: RFC 3339 with an offset as it is; `2026-12-01T09:00` (or with a space, seconds,
 * milliseconds, or no time: midnight) on `zone`'s wall clock.
 * @param exact the texts a stored job's times were shown as, mapped back to those times (formFromJob), so that an
 *   unchanged field keeps its seconds
 * @returns UTC ISO, or null when the text is not a time (`2026-02-30`, `25:00`, words)
 */
export function parseTime(text: string, zone: string, exact: ReadonlyMap<string, string> = new Map()): string | null {
  const t = text.trim();
  const known = exact.get(t);
  if (known) return known;
  if (OFFSET_TIME.test(t)) {
    const ms = Date.parse(t.replace(' ', 'T'));
    return Number.isNaN(ms) ? null : new Date(ms).toISOString();
  }
  const m = WALL_TIME.exec(t);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const ms = Number((m[7] ?? '0').padEnd(3, '0'));
  const probe = new Date(Date.UTC(year, month - 1, day));
  if (probe.getUTCMonth() !== month - 1 || probe.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) return null;
  return new Date(instantOfWallTime({ year, month, day, hour, minute, second, ms }, zone)).toISOString();
}

/** A number typed in a field: a finite number (a whole one when `integer`), or null with the message in `errors`. */
function readNumber(text: string, field: ErrorKey, errors: Errors, opts: { integer?: boolean } = {}): number | null {
  const t = text.trim();
  const n = Number(t);
  if (!t || !Number.isFinite(n)) {
    addError(errors, field, 'enter a number');
    return null;
  }
  if (opts.integer && !Number.isInteger(n)) {
    addError(errors, field, 'enter a whole number');
    return null;
  }
  return n;
}

/** Non-empty lines of a text area, with their line numbers (1-based). */
function lines(text: string): [number, string][] {
  return text
    .split('\n')
    .map((l, i) => [i + 1, l.trim()] as [number, string])
    .filter(([, l]) => l !== '');
}

/** `Name<sep>value` lines as a record, a message beside `field` for each line without the separator. */
function pairs(text: string, sep: string, field: ErrorKey, errors: Errors, expected: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [n, line] of lines(text)) {
    const at = line.indexOf(sep);
    if (at <= 0) addError(errors, field, `line ${n}: expected "${expected}"`);
    else out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

/** How one schedule's fields are read: the zone and stored times of the form, and where its messages go. */
type Reader = { zone: string; exact: ReadonlyMap<string, string>; errors: Errors; key: (field: MemberField | 'delay') => ErrorKey };

/** A time typed in `field`: UTC ISO, or undefined (the message beside the field when it is required or unreadable). */
function readTime(r: Reader, field: MemberField, text: string, required: boolean): string | undefined {
  if (!text.trim()) {
    if (required) addError(r.errors, r.key(field), 'enter a date and time');
    return undefined;
  }
  const iso = parseTime(text, r.zone, r.exact);
  if (!iso) addError(r.errors, r.key(field), 'not a date and time');
  return iso ?? undefined;
}

/** Seconds typed in `field`, as ms (0 when unreadable, with the message beside the field). */
function readSeconds(r: Reader, field: MemberField | 'delay', text: string): number {
  const n = readNumber(text, r.key(field), r.errors);
  return n === null ? 0 : Math.round(n * 1000);
}

/** A schedule of a kind a union may hold, read from its fields. */
function readMember(type: MemberType, f: Record<MemberField, string>, r: Reader): UnionMember {
  const span = () => {
    const startAt = readTime(r, 'start', f.start, false);
    const endAt = readTime(r, 'end', f.end, false);
    return { ...(startAt ? { startAt } : {}), ...(endAt ? { endAt } : {}) };
  };
  switch (type) {
    case 'once':
      return { type: 'once', at: readTime(r, 'at', f.at, true) ?? '' };
    case 'interval':
      return { type: 'interval', everyMs: readSeconds(r, 'every', f.every), ...span() };
    case 'dates': {
      const dates: string[] = [];
      for (const [n, line] of lines(f.dates)) {
        const iso = parseTime(line, r.zone, r.exact);
        if (iso) dates.push(iso);
        else addError(r.errors, r.key('dates'), `line ${n}: "${line}" is not a date and time`);
      }
      if (lines(f.dates).length === 0) addError(r.errors, r.key('dates'), 'enter at least one date and time');
      return { type: 'dates', dates };
    }
    case 'cron':
      // 5 fields, 6 with seconds first, or a macro: the API checks the expression (the live preview shows what it says).
      if (!f.expr.trim()) addError(r.errors, r.key('expr'), 'enter a cron expression, such as 0 9 * * *');
      return { type: 'cron', expression: f.expr.trim(), timezone: f.tz || 'UTC', ...span() };
  }
}

/**
 * The schedule of the form (what the live preview sends), and what it cannot read.
 * @param zone the zone of the times typed without an offset (the viewer's)
 */
export function scheduleOfForm(
  s: FormState,
  zone: string,
  exact: ReadonlyMap<string, string> = new Map(),
): { schedule: Schedule; errors: Errors } {
  const errors: Errors = {};
  const own: Reader = { zone, exact, errors, key: (field) => field };
  switch (s.type) {
    case 'delay':
      return { schedule: { type: 'delay', delayMs: readSeconds(own, 'delay', s.delay) }, errors };
    case 'union': {
      if (s.members.length < MIN_UNION_SCHEDULES) addError(errors, 'members', `add at least ${MIN_UNION_SCHEDULES} schedules`);
      if (s.members.length > MAX_UNION_SCHEDULES) addError(errors, 'members', `at most ${MAX_UNION_SCHEDULES} schedules`);
      const schedules = s.members.map((m, i) =>
        readMember(m.type, m, { zone, exact, errors, key: (field) => memberKey(i, field as MemberField) }),
      );
      return { schedule: { type: 'union', schedules }, errors };
    }
    default:
      return { schedule: readMember(s.type, s, own), errors };
  }
}

/** The form's calendar as the API takes it (`{ key, roll }`), or null for none. */
export function calendarOfForm(s: Pick<FormState, 'calendar' | 'roll'>): { key: string; roll: string } | null {
  const key = s.calendar.trim();
  return key ? { key, roll: s.roll } : null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The job body of the form, and what it cannot read (by field). A new job's body leaves out what is empty; an edit's
 * (`edit`) says `null` for the fields the API clears with null (name, payload, relevancy window). The auth token is
 * sent only when one is typed (the API never returns it).
 */
export function bodyOfForm(
  s: FormState,
  opts: { zone: string; edit: boolean; exact?: ReadonlyMap<string, string> },
): { body: JobBodyDraft; errors: Errors } {
  const { schedule, errors } = scheduleOfForm(s, opts.zone, opts.exact);
  const edit = opts.edit;
  const body: JobBodyDraft = {};
  if (s.name.trim()) body.name = s.name.trim();
  else if (edit) body.name = null;
  if (!edit && s.key.trim()) body.key = s.key.trim();
  body.schedule = schedule;

  const codes: (number | string)[] = [];
  for (const part of s.codes.split(/[\s,]+/).filter(Boolean)) {
    if (/^\d{3}$/.test(part)) codes.push(Number(part));
    else if (/^[1-5]xx$/i.test(part)) codes.push(part.toLowerCase());
    else addError(errors, 'codes', `"${part}" is neither a status code nor a class such as 2xx`);
  }
  const callback: Record<string, unknown> = {
    url: s.url.trim(),
    method: s.method,
    headers: pairs(s.headers, ':', 'headers', errors, 'Name: value'),
  };
  if (s.token) callback.authToken = s.token;
  if (s.contentType.trim()) callback.contentType = s.contentType.trim();
  else if (edit) callback.contentType = null;
  if (codes.length) callback.successStatusCodes = codes;
  if (s.timeout.trim()) callback.timeoutMs = readNumber(s.timeout, 'timeout', errors, { integer: true });
  body.callback = callback;

  if (s.payload.trim()) {
    try {
      body.payload = JSON.parse(s.payload) as unknown;
    } catch (err) {
      addError(errors, 'payload', `not valid JSON: ${(err as Error).message}`);
    }
  } else if (edit) {
    body.payload = null;
  }
  // Sent as is (no trimming): the bytes typed are the bytes signed and sent.
  if (s.body !== '') body.body = s.body;
  else if (edit) body.body = null;

  const retry: Record<string, unknown> = { strategy: s.strategy };
  const optional = (text: string, field: ErrorKey, integer: boolean) =>
    text.trim() ? readNumber(text, field, errors, { integer }) : undefined;
  // A schedule's attempts follow its delays; the formulas' fields mean nothing to it (maxDelayMs still caps Retry-After).
  const listed = s.strategy === 'schedule';
  const retryNumbers: [string, number | null | undefined][] = [
    ['maxAttempts', listed ? undefined : optional(s.attempts, 'attempts', true)],
    ['initialDelayMs', listed ? undefined : optional(s.initial, 'initial', true)],
    ['maxDelayMs', optional(s.maxDelay, 'maxDelay', true)],
    ['multiplier', listed ? undefined : optional(s.multiplier, 'multiplier', false)],
  ];
  if (listed) {
    const delays = s.delays.split(/[\s,]+/).filter(Boolean);
    if (delays.length === 0) addError(errors, 'delays', 'enter the wait before each retry, in ms, such as 1000, 10000, 60000');
    retry.delaysMs = delays.map((d) => readNumber(d, 'delays', errors, { integer: true }));
  }
  for (const [k, v] of retryNumbers) if (v !== undefined) retry[k] = v;
  retry.jitter = s.retryJitter;
  body.retry = retry;

  if (s.relevancy.trim()) {
    const n = readNumber(s.relevancy, 'relevancy', errors);
    body.relevancyWindowMs = n === null ? null : Math.round(n * 1000);
  } else if (edit) {
    body.relevancyWindowMs = null;
  }
  body.deliveryMode = s.delivery;
  body.overlapPolicy = s.overlap;
  body.catchUp = s.catchUp;
  body.jitterMs = s.jitter.trim() ? readNumber(s.jitter, 'jitter', errors, { integer: true }) : 0;
  body.jitterMode = s.jitterMode;
  body.pauseAfterFailures = s.pause.trim() ? readNumber(s.pause, 'pause', errors, { integer: true }) : 0;
  body.metadata = pairs(s.metadata, '=', 'metadata', errors, 'key=value');

  const calendar = calendarOfForm(s);
  if (calendar) body.calendar = calendar;
  else if (edit) body.calendar = null;
  if (s.maxRuns.trim()) body.maxRuns = readNumber(s.maxRuns, 'maxRuns', errors, { integer: true });
  else if (edit) body.maxRuns = null;
  const then = s.then.map((link, i) => {
    const jobId = link.jobId.trim();
    if (!jobId) addError(errors, thenKey(i, 'jobId'), 'choose a job');
    else if (!UUID.test(jobId)) addError(errors, thenKey(i, 'jobId'), 'not a job id: choose a job from the list');
    return { jobId, on: link.on };
  });
  if (then.length) body.then = then;
  else if (edit) body.then = null;
  return { body, errors };
}

/**
 * What an edit sends: the top-level fields of `body` that differ from `before` (the body of the form as it was
 * loaded), so that a field nobody touched is not rewritten. Empty: nothing changed.
 */
export function changedFields(body: JobBodyDraft, before: JobBodyDraft): JobBodyDraft {
  return Object.fromEntries(Object.entries(body).filter(([k, v]) => JSON.stringify(v) !== JSON.stringify(before[k])));
}
