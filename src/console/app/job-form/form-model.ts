/**
 * The job form's model, part 1: what the form holds, which fields it shows, and how a job fills it (field-paths.ts:
 * where the API's field errors go). The form keeps every value as text, as typed, so nothing a user typed is lost when the API refuses it;
 * form-body.ts reads it into the API's job body. Pure: no DOM, no Preact (test/console/job-form-model.test.ts).
 *
 * Times typed in the form (`At`, `Start at`, `End at`, a date list's lines without an offset) are wall-clock times in
 * the viewer's zone, which every function here takes as `zone` (the console passes `viewerZone()`).
 */

import { CALENDAR_ROLLS } from '../../../domain/calendar.ts';
import { CHAIN_ON, MAX_CHAIN_LINKS } from '../../../domain/chain.ts';
import { DEFAULT_TIMEOUT_MS, HTTP_METHODS } from '../../../domain/job.ts';
import { DEFAULT_RETRY, RETRY_STRATEGIES } from '../../../domain/retry.ts';
import { CATCH_UP_POLICIES, DELIVERY_MODES, JITTER_MODES, OVERLAP_POLICIES } from '../../../domain/states.ts';
import type { Job, Schedule, UnionMember } from '../types.ts';
import { wallInputOf } from '../zones.ts';

export type ScheduleType = Schedule['type'];
export const SCHEDULE_TYPES: readonly ScheduleType[] = ['once', 'delay', 'interval', 'dates', 'cron', 'union'];
/** The kinds a union's schedules may be (not `delay`, not another union). */
export type MemberType = UnionMember['type'];
export const MEMBER_TYPES: readonly MemberType[] = ['once', 'interval', 'dates', 'cron'];
/**
 * Fewest and most schedules in a union, as src/domain/schedule.ts says (not imported from there: it would bring
 * cron-parser into the console's bundle; test/console/job-form-model.test.ts checks they agree).
 */
export const MIN_UNION_SCHEDULES = 2;
export const MAX_UNION_SCHEDULES = 10;
export {
  CALENDAR_ROLLS,
  CATCH_UP_POLICIES,
  CHAIN_ON,
  DELIVERY_MODES,
  HTTP_METHODS,
  JITTER_MODES,
  MAX_CHAIN_LINKS,
  OVERLAP_POLICIES,
  RETRY_STRATEGIES,
};

/** The fields of one schedule of a kind a union may hold: the form's own schedule, or one of its union's. */
export type MemberField = 'at' | 'every' | 'start' | 'end' | 'dates' | 'expr' | 'tz';
/** One schedule of a union, as typed. */
export type MemberForm = { type: MemberType } & Record<MemberField, string>;
/** One link of `then`, as chosen: the job to trigger (its id) and on which end of this job's run. */
export type ThenForm = { jobId: string; on: string };

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
  /** Type `union`: its schedules (kept when the type changes, so switching back loses nothing). */
  members: MemberForm[];
  /** The key of the tenant's calendar; '' for none. */
  calendar: string;
  roll: string;
  /** Empty: no limit. */
  maxRuns: string;
  jitterMode: string;
  then: ThenForm[];
};
export type FieldName = keyof FormState;
/** The fields whose value is free text. */
export type TextName = Exclude<FieldName, 'retryJitter' | 'type' | 'members' | 'then'>;
/** A field of the `i`-th schedule of a union (`members.1.expr`). */
export type MemberKey = `members.${number}.${MemberField | 'type'}`;
/** A field of the `i`-th link of `then` (`then.0.jobId`). */
export type ThenKey = `then.${number}.${keyof ThenForm}`;
/** What a message can be about: a field, or a field of a union's schedule or of a `then` link. */
export type ErrorKey = FieldName | MemberKey | ThenKey;

/** The key of field `field` of the union's `i`-th schedule. */
export const memberKey = (i: number, field: MemberField | 'type'): MemberKey => `members.${i}.${field}`;
/** The key of field `field` of the `i`-th `then` link. */
export const thenKey = (i: number, field: keyof ThenForm): ThenKey => `then.${i}.${field}`;
/** The id of the control of `key` (`f-url`, `f-members-1-expr`). */
export const controlId = (key: ErrorKey): string => `f-${key.replaceAll('.', '-')}`;

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
  members: 'Schedules',
  calendar: 'Calendar',
  roll: 'Calendar roll',
  maxRuns: 'Max runs',
  jitterMode: 'Jitter mode',
  then: 'Then trigger',
};

/**
 * Every field the live preview sends: the schedule's (and its union's) and the calendar. Their errors go stale
 * together when any of them changes.
 */
export const SCHEDULE_FIELDS: readonly FieldName[] = [
  'type',
  'at',
  'delay',
  'every',
  'start',
  'end',
  'dates',
  'expr',
  'tz',
  'members',
  'calendar',
  'roll',
];
/** The fields folded under "More options" (opened when one of them is in error). */
export const ADVANCED_FIELDS: readonly FieldName[] = ['multiplier', 'retryJitter', 'overlap', 'catchUp', 'jitter', 'jitterMode'];

/** The fields a schedule type shows, besides the type itself (a union: its schedules). */
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
    case 'union':
      return ['members'];
  }
}

/** The fields of a union's schedule of kind `type`, besides its type. */
export function memberFields(type: MemberType): MemberField[] {
  return scheduleFields(type) as MemberField[];
}

/**
 * The keys of everything the schedule part of the form shows: the type, its fields, and for a union each schedule's
 * type and fields (`members.1.expr`).
 */
export function scheduleKeys(type: ScheduleType, members: readonly MemberForm[] = []): ErrorKey[] {
  const own: ErrorKey[] = ['type', ...scheduleFields(type)];
  if (type !== 'union') return own;
  return [...own, ...members.flatMap((m, i) => [memberKey(i, 'type'), ...memberFields(m.type).map((f) => memberKey(i, f))])];
}

/**
 * Every field the form shows, in order, for a schedule `type` (the key only when creating); with `parts`, the fields of
 * each of a union's schedules and of each `then` link too.
 */
export function visibleFields(
  type: ScheduleType,
  edit: boolean,
  parts: { members?: readonly MemberForm[]; then?: readonly ThenForm[] } = {},
): ErrorKey[] {
  const links = (parts.then ?? []).flatMap((_, i) => [thenKey(i, 'jobId'), thenKey(i, 'on')]);
  const rest: ErrorKey[] = [
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
    ...ADVANCED_FIELDS,
    'then',
    ...links,
    'metadata',
    'payload',
    'body',
    'contentType',
  ];
  return ['name', ...(edit ? [] : (['key'] as FieldName[])), ...scheduleKeys(type, parts.members), 'calendar', 'roll', 'maxRuns', ...rest];
}

/** Messages by field; a field has at most one message (several are joined with "; "). */
export type Errors = Partial<Record<ErrorKey, string>>;

/** Adds `message` to the errors of `field`. */
export function addError(errors: Errors, field: ErrorKey, message: string): void {
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
    members: [],
    calendar: '',
    roll: 'skip',
    maxRuns: '',
    jitterMode: 'stable',
    then: [],
  };
}

/** A new schedule of a union: cron, in `zone`. */
export function blankMember(zone: string): MemberForm {
  return { type: 'cron', at: '', every: '3600', start: '', end: '', dates: '', expr: '', tz: zone };
}

/**
 * The form with schedule type `type`. Turning a schedule into a union keeps it as the union's first schedule (a delay
 * cannot be one) and adds an empty one, so that a union starts with the two it needs; its schedules are kept when the
 * type changes again.
 */
export function withType(s: FormState, type: ScheduleType): FormState {
  if (type !== 'union' || s.members.length >= MIN_UNION_SCHEDULES) return { ...s, type };
  const own = s.type !== 'delay' && s.type !== 'union' ? [memberOfForm(s, s.type)] : [];
  const members = [...s.members, ...own];
  while (members.length < MIN_UNION_SCHEDULES) members.push(blankMember(s.tz));
  return { ...s, type, members };
}

/** The form's own schedule fields as a union's schedule of kind `type`. */
function memberOfForm(s: FormState, type: MemberType): MemberForm {
  return { type, at: s.at, every: s.every, start: s.start, end: s.end, dates: s.dates, expr: s.expr, tz: s.tz };
}

/** Fills `target`'s schedule fields from `s` (times on the wall clock `wall` shows them on). */
function fillMember(target: Record<MemberField, string>, s: UnionMember, wall: (iso: string | undefined) => string): void {
  switch (s.type) {
    case 'once':
      target.at = wall(s.at);
      break;
    case 'interval':
      target.every = String(s.everyMs / 1000);
      target.start = wall(s.startAt);
      target.end = wall(s.endAt);
      break;
    case 'dates':
      target.dates = s.dates.join('\n');
      break;
    case 'cron':
      target.expr = s.expression;
      target.tz = s.timezone ?? 'UTC';
      target.start = wall(s.startAt);
      target.end = wall(s.endAt);
      break;
  }
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
  if (s.type === 'delay') form.delay = String(s.delayMs / 1000);
  else if (s.type === 'union')
    form.members = s.schedules.map((m) => {
      const member = blankMember(zone);
      member.type = m.type;
      fillMember(member, m, wall);
      return member;
    });
  else fillMember(form, s, wall);
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
    calendar: job.calendar?.key ?? '',
    roll: job.calendar?.roll ?? 'skip',
    maxRuns: job.maxRuns === null || job.maxRuns === undefined ? '' : String(job.maxRuns),
    jitterMode: job.jitterMode ?? 'stable',
    then: (job.then ?? []).map((l) => ({ jobId: l.jobId, on: l.on })),
  } satisfies Partial<FormState>);
  return { form, exact };
}
