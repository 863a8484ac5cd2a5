/**
 * The job form's model, part 2: reading the form (text, as typed) into the API's job body, with a message beside each
 * field it cannot read, and the part of an edit that changed. Pure (test/console/job-form-model.test.ts).
 */
import type { Schedule } from '../types.ts';
import { instantOfWallTime } from '../zones.ts';
import { addError, type Errors, type FieldName, type FormState } from './form-model.ts';

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
function readNumber(text: string, field: FieldName, errors: Errors, opts: { integer?: boolean } = {}): number | null {
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
function pairs(text: string, sep: string, field: FieldName, errors: Errors, expected: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [n, line] of lines(text)) {
    const at = line.indexOf(sep);
    if (at <= 0) addError(errors, field, `line ${n}: expected "${expected}"`);
    else out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
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
  const time = (field: FieldName, text: string, required: boolean): string | undefined => {
    if (!text.trim()) {
      if (required) addError(errors, field, 'enter a date and time');
      return undefined;
    }
    const iso = parseTime(text, zone, exact);
    if (!iso) addError(errors, field, 'not a date and time');
    return iso ?? undefined;
  };
  const seconds = (field: FieldName, text: string): number => {
    const n = readNumber(text, field, errors);
    return n === null ? 0 : Math.round(n * 1000);
  };
  const span = () => {
    const startAt = time('start', s.start, false);
    const endAt = time('end', s.end, false);
    return { ...(startAt ? { startAt } : {}), ...(endAt ? { endAt } : {}) };
  };
  let schedule: Schedule;
  switch (s.type) {
    case 'once':
      schedule = { type: 'once', at: time('at', s.at, true) ?? '' };
      break;
    case 'delay':
      schedule = { type: 'delay', delayMs: seconds('delay', s.delay) };
      break;
    case 'interval':
      schedule = { type: 'interval', everyMs: seconds('every', s.every), ...span() };
      break;
    case 'dates': {
      const dates: string[] = [];
      for (const [n, line] of lines(s.dates)) {
        const iso = parseTime(line, zone, exact);
        if (iso) dates.push(iso);
        else addError(errors, 'dates', `line ${n}: "${line}" is not a date and time`);
      }
      if (lines(s.dates).length === 0) addError(errors, 'dates', 'enter at least one date and time');
      schedule = { type: 'dates', dates };
      break;
    }
    case 'cron':
      if (!s.expr.trim()) addError(errors, 'expr', 'enter a cron expression, such as 0 9 * * *');
      schedule = { type: 'cron', expression: s.expr.trim(), timezone: s.tz || 'UTC', ...span() };
      break;
  }
  return { schedule, errors };
}

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
  const optional = (text: string, field: FieldName, integer: boolean) =>
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
  body.pauseAfterFailures = s.pause.trim() ? readNumber(s.pause, 'pause', errors, { integer: true }) : 0;
  body.metadata = pairs(s.metadata, '=', 'metadata', errors, 'key=value');
  return { body, errors };
}

/**
 * What an edit sends: the top-level fields of `body` that differ from `before` (the body of the form as it was
 * loaded), so that a field nobody touched is not rewritten. Empty: nothing changed.
 */
export function changedFields(body: JobBodyDraft, before: JobBodyDraft): JobBodyDraft {
  return Object.fromEntries(Object.entries(body).filter(([k, v]) => JSON.stringify(v) !== JSON.stringify(before[k])));
}
