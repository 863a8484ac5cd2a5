/**
 * Creating (`/console/jobs/new`) and editing (`/console/jobs/:jobId/edit`) a job. The form keeps every value as the
 * user typed it; `buildBody` turns it into the API's job body (reporting what it cannot read beside its field), the
 * schedule is previewed live (`POST /v1/schedules/preview`), and the API's `400` errors are shown beside the fields
 * they name. An edit sends only the top-level fields that changed, and the auth token only when one is typed.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { ApiProblem, type FieldError } from '../api.ts';
import { describeSchedule } from '../schedule-words.ts';
import { useSession } from '../session.tsx';
import type { Job, Schedule } from '../types.ts';
import { ErrorNote, Field, Time, useAsync } from '../ui.tsx';
import { jobLabel } from './jobs.tsx';
import { isNoSuchJob, NoSuchJob } from './job.tsx';
import { localInputFromIso } from '../local-time.ts';

type ScheduleType = Schedule['type'];
const SCHEDULE_TYPES: ScheduleType[] = ['once', 'delay', 'interval', 'dates', 'cron'];
const METHODS: Job['callback']['method'][] = ['POST', 'PUT', 'PATCH', 'GET', 'DELETE'];
const STRATEGIES = ['exponential', 'linear', 'fixed', 'none'] as const;
const DELIVERY_MODES: Job['deliveryMode'][] = ['at-least-once', 'at-most-once'];
const OVERLAP_POLICIES: Job['overlapPolicy'][] = ['allow', 'skip'];
const CATCH_UP_POLICIES: Job['catchUp'][] = ['one', 'all', 'none'];
const PREVIEW_DEBOUNCE_MS = 300;

/** The form's values, as typed (text), so that nothing the user typed is lost when the API refuses it. */
type FormState = {
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
  retryJitter: boolean;
  relevancy: string;
  delivery: string;
  overlap: string;
  catchUp: string;
  jitter: string;
  pause: string;
  metadata: string;
  payload: string;
};
type FieldName = keyof FormState;
/** The fields whose value is free text. */
type TextName = Exclude<FieldName, 'retryJitter' | 'type'>;

/** The label of each control (browser tests find the controls by these). */
const LABELS: Record<FieldName, string> = {
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
  retryJitter: 'Randomize retry delays',
  relevancy: 'Relevancy window (seconds)',
  delivery: 'Delivery mode',
  overlap: 'Overlap policy',
  catchUp: 'Catch-up after downtime',
  jitter: 'Jitter (ms)',
  pause: 'Pause after failures',
  metadata: 'Metadata (one key=value per line)',
  payload: 'Payload (JSON)',
};
const SCHEDULE_FIELDS: FieldName[] = ['type', 'at', 'delay', 'every', 'start', 'end', 'dates', 'expr', 'tz'];
const ADVANCED_FIELDS: FieldName[] = ['multiplier', 'retryJitter', 'overlap', 'catchUp', 'jitter'];

/** The fields shown for a schedule type. */
function scheduleFields(type: ScheduleType): FieldName[] {
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

/** Errors by field; a field has at most one message (several are joined). */
type Errors = Partial<Record<FieldName, string>>;

function addError(errors: Errors, field: FieldName, message: string): void {
  errors[field] = errors[field] ? `${errors[field]}; ${message}` : message;
}

/** The browser's own IANA time zone. */
function browserZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

/** "UTC" and every IANA zone the browser knows, plus `current` if it is none of them. */
function timeZones(current: string): string[] {
  let zones: string[] = [];
  try {
    zones = Intl.supportedValuesOf('timeZone');
  } catch {
    zones = [];
  }
  const all = ['UTC', ...zones.filter((z) => z !== 'UTC')];
  if (current && !all.includes(current)) all.push(current);
  return all;
}

const LOCAL_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?$/;
const OFFSET_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$/i;

/**
 * Reads a time: RFC 3339 with an offset as is; `2026-12-01T09:00` (or with a space, seconds, or no time) in the
 * browser's zone. `exact` maps the text a stored time was shown as back to that time, so that an unchanged field
 * keeps its seconds.
 * @returns UTC ISO, or null when the text is not a time
 */
function parseTime(text: string, exact: Map<string, string>): string | null {
  const t = text.trim();
  const known = exact.get(t);
  if (known) return known;
  if (OFFSET_TIME.test(t)) {
    const ms = Date.parse(t.replace(' ', 'T'));
    return Number.isNaN(ms) ? null : new Date(ms).toISOString();
  }
  const m = LOCAL_TIME.exec(t);
  if (!m) return null;
  const [y, mo, d, h, mi, s, frac] = [m[1], m[2], m[3], m[4] ?? '0', m[5] ?? '0', m[6] ?? '0', (m[7] ?? '0').padEnd(3, '0')].map(Number) as number[];
  const date = new Date(y!, mo! - 1, d!, h!, mi!, s!, frac!);
  if (Number.isNaN(date.getTime()) || date.getMonth() !== mo! - 1 || date.getDate() !== d! || h! > 23 || mi! > 59 || s! > 59) return null;
  return date.toISOString();
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

/** The schedule of the form, or the errors of its fields. */
function buildSchedule(s: FormState, exact: Map<string, string>): { schedule: Schedule; errors: Errors } {
  const errors: Errors = {};
  const time = (field: FieldName, text: string, required: boolean): string | undefined => {
    if (!text.trim()) {
      if (required) addError(errors, field, 'enter a date and time');
      return undefined;
    }
    const iso = parseTime(text, exact);
    if (!iso) addError(errors, field, 'not a date and time');
    return iso ?? undefined;
  };
  const seconds = (field: FieldName, text: string): number => {
    const n = readNumber(text, field, errors);
    return n === null ? 0 : Math.round(n * 1000);
  };
  let schedule: Schedule;
  switch (s.type) {
    case 'once':
      schedule = { type: 'once', at: time('at', s.at, true) ?? '' };
      break;
    case 'delay':
      schedule = { type: 'delay', delayMs: seconds('delay', s.delay) };
      break;
    case 'interval': {
      const startAt = time('start', s.start, false);
      const endAt = time('end', s.end, false);
      schedule = { type: 'interval', everyMs: seconds('every', s.every), ...(startAt ? { startAt } : {}), ...(endAt ? { endAt } : {}) };
      break;
    }
    case 'dates': {
      const dates: string[] = [];
      for (const [n, line] of lines(s.dates)) {
        const iso = parseTime(line, exact);
        if (iso) dates.push(iso);
        else addError(errors, 'dates', `line ${n}: "${line}" is not a date and time`);
      }
      if (lines(s.dates).length === 0) addError(errors, 'dates', 'enter at least one date and time');
      schedule = { type: 'dates', dates };
      break;
    }
    case 'cron': {
      if (!s.expr.trim()) addError(errors, 'expr', 'enter a cron expression, such as 0 9 * * *');
      const startAt = time('start', s.start, false);
      const endAt = time('end', s.end, false);
      schedule = { type: 'cron', expression: s.expr.trim(), timezone: s.tz || 'UTC', ...(startAt ? { startAt } : {}), ...(endAt ? { endAt } : {}) };
      break;
    }
  }
  return { schedule, errors };
}

/** The job body of the form (`edit`: cleared fields become null where the API takes null), and what it cannot read. */
function buildBody(s: FormState, exact: Map<string, string>, edit: boolean): { body: Record<string, unknown>; errors: Errors } {
  const { schedule, errors } = buildSchedule(s, exact);
  const body: Record<string, unknown> = {};
  if (s.name.trim()) body['name'] = s.name.trim();
  else if (edit) body['name'] = null;
  if (!edit && s.key.trim()) body['key'] = s.key.trim();
  body['schedule'] = schedule;

  const headers: Record<string, string> = {};
  for (const [n, line] of lines(s.headers)) {
    const colon = line.indexOf(':');
    if (colon <= 0) addError(errors, 'headers', `line ${n}: expected "Name: value"`);
    else headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  const codes: (number | string)[] = [];
  for (const part of s.codes.split(/[\s,]+/).filter(Boolean)) {
    if (/^\d{3}$/.test(part)) codes.push(Number(part));
    else if (/^[1-5]xx$/i.test(part)) codes.push(part.toLowerCase());
    else addError(errors, 'codes', `"${part}" is neither a status code nor a class such as 2xx`);
  }
  const callback: Record<string, unknown> = { url: s.url.trim(), method: s.method, headers };
  if (s.token) callback['authToken'] = s.token;
  if (codes.length) callback['successStatusCodes'] = codes;
  if (s.timeout.trim()) callback['timeoutMs'] = readNumber(s.timeout, 'timeout', errors, { integer: true });
  body['callback'] = callback;

  if (s.payload.trim()) {
    try {
      body['payload'] = JSON.parse(s.payload) as unknown;
    } catch (err) {
      addError(errors, 'payload', `not valid JSON: ${(err as Error).message}`);
    }
  } else if (edit) {
    body['payload'] = null;
  }

  const retry: Record<string, unknown> = { strategy: s.strategy };
  const optionalInt = (text: string, field: FieldName) => (text.trim() ? readNumber(text, field, errors, { integer: true }) : undefined);
  const attempts = optionalInt(s.attempts, 'attempts');
  const initial = optionalInt(s.initial, 'initial');
  const maxDelay = optionalInt(s.maxDelay, 'maxDelay');
  const multiplier = s.multiplier.trim() ? readNumber(s.multiplier, 'multiplier', errors) : undefined;
  if (attempts !== undefined) retry['maxAttempts'] = attempts;
  if (initial !== undefined) retry['initialDelayMs'] = initial;
  if (maxDelay !== undefined) retry['maxDelayMs'] = maxDelay;
  if (multiplier !== undefined) retry['multiplier'] = multiplier;
  retry['jitter'] = s.retryJitter;
  body['retry'] = retry;

  if (s.relevancy.trim()) {
    const n = readNumber(s.relevancy, 'relevancy', errors);
    body['relevancyWindowMs'] = n === null ? null : Math.round(n * 1000);
  } else if (edit) {
    body['relevancyWindowMs'] = null;
  }
  body['deliveryMode'] = s.delivery;
  body['overlapPolicy'] = s.overlap;
  body['catchUp'] = s.catchUp;
  body['jitterMs'] = s.jitter.trim() ? readNumber(s.jitter, 'jitter', errors, { integer: true }) : 0;
  body['pauseAfterFailures'] = s.pause.trim() ? readNumber(s.pause, 'pause', errors, { integer: true }) : 0;

  const metadata: Record<string, string> = {};
  for (const [n, line] of lines(s.metadata)) {
    const eq = line.indexOf('=');
    if (eq <= 0) addError(errors, 'metadata', `line ${n}: expected "key=value"`);
    else metadata[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  body['metadata'] = metadata;
  return { body, errors };
}

/** The form of a new job. */
function blankForm(): FormState {
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
    tz: browserZone(),
    url: '',
    method: 'POST',
    headers: '',
    token: '',
    codes: '2xx',
    timeout: '10000',
    strategy: 'exponential',
    attempts: '5',
    initial: '1000',
    maxDelay: '3600000',
    multiplier: '2',
    retryJitter: true,
    relevancy: '',
    delivery: 'at-least-once',
    overlap: 'allow',
    catchUp: 'one',
    jitter: '0',
    pause: '0',
    metadata: '',
    payload: '',
  };
}

/** The form of an existing job, and the map from the times as shown back to the stored times (see `parseTime`). */
function jobForm(job: Job): { form: FormState; exact: Map<string, string> } {
  const exact = new Map<string, string>();
  const local = (iso: string | undefined) => {
    const text = localInputFromIso(iso);
    if (text && iso) exact.set(text, iso);
    return text;
  };
  const form = blankForm();
  const s = job.schedule;
  form.type = s.type;
  switch (s.type) {
    case 'once':
      form.at = local(s.at);
      break;
    case 'delay':
      form.delay = String(s.delayMs / 1000);
      break;
    case 'interval':
      form.every = String(s.everyMs / 1000);
      form.start = local(s.startAt);
      form.end = local(s.endAt);
      break;
    case 'dates':
      form.dates = s.dates.join('\n');
      break;
    case 'cron':
      form.expr = s.expression;
      form.tz = s.timezone ?? 'UTC';
      form.start = local(s.startAt);
      form.end = local(s.endAt);
      break;
  }
  const r = job.retry;
  Object.assign(form, {
    name: job.name ?? '',
    key: job.key ?? '',
    url: job.callback.url,
    method: job.callback.method,
    headers: Object.entries(job.callback.headers)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n'),
    codes: job.callback.successStatusCodes.join(', '),
    timeout: String(job.callback.timeoutMs),
    strategy: r.strategy ?? 'exponential',
    attempts: r.maxAttempts === undefined ? '' : String(r.maxAttempts),
    initial: r.initialDelayMs === undefined ? '' : String(r.initialDelayMs),
    maxDelay: r.maxDelayMs === undefined ? '' : String(r.maxDelayMs),
    multiplier: r.multiplier === undefined ? '' : String(r.multiplier),
    retryJitter: r.jitter ?? true,
    relevancy: job.relevancyWindowMs === null ? '' : String(job.relevancyWindowMs / 1000),
    delivery: job.deliveryMode,
    overlap: job.overlapPolicy,
    catchUp: job.catchUp,
    jitter: String(job.jitterMs),
    pause: String(job.pauseAfterFailures),
    metadata: Object.entries(job.metadata)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n'),
    payload: job.payload === undefined || job.payload === null ? '' : JSON.stringify(job.payload, null, 2),
  } satisfies Partial<FormState>);
  return { form, exact };
}

/** The field an API error path names (`callback.url` → url), or null. */
function fieldOf(path: string): { field: FieldName; prefix: string } | null {
  const parts = path.split('.');
  const [head, sub, ...rest] = parts;
  const tail = rest.join('.');
  const simple: Record<string, FieldName> = {
    name: 'name',
    key: 'key',
    payload: 'payload',
    relevancyWindowMs: 'relevancy',
    deliveryMode: 'delivery',
    overlapPolicy: 'overlap',
    catchUp: 'catchUp',
    jitterMs: 'jitter',
    pauseAfterFailures: 'pause',
  };
  if (head && parts.length === 1 && simple[head]) return { field: simple[head], prefix: '' };
  if (head === 'metadata') return { field: 'metadata', prefix: parts.slice(1).join('.') };
  const nested: Record<string, Record<string, FieldName>> = {
    schedule: { type: 'type', at: 'at', delayMs: 'delay', everyMs: 'every', startAt: 'start', endAt: 'end', dates: 'dates', expression: 'expr', timezone: 'tz' },
    callback: { url: 'url', method: 'method', headers: 'headers', authToken: 'token', successStatusCodes: 'codes', timeoutMs: 'timeout' },
    retry: { strategy: 'strategy', maxAttempts: 'attempts', initialDelayMs: 'initial', maxDelayMs: 'maxDelay', multiplier: 'multiplier', jitter: 'retryJitter' },
  };
  if (head === 'schedule' && sub === undefined) return { field: 'type', prefix: '' };
  const field = head && sub ? nested[head]?.[sub] : undefined;
  if (!field) return null;
  if (!tail) return { field, prefix: '' };
  // `schedule.dates.3`, `callback.successStatusCodes.0`: the entry's position; `callback.headers.X-Team`: the name.
  return { field, prefix: /^\d+$/.test(tail) ? `entry ${Number(tail) + 1}` : tail };
}

/**
 * Sorts the API's field errors into the fields shown (`visible`) and the rest.
 * @returns the errors by field, and those that name no field shown
 */
function sortErrors(list: readonly FieldError[], visible: readonly FieldName[]): { byField: Errors; unmatched: FieldError[] } {
  const byField: Errors = {};
  const unmatched: FieldError[] = [];
  for (const e of list) {
    const target = fieldOf(e.path);
    if (target && visible.includes(target.field)) addError(byField, target.field, target.prefix ? `${target.prefix}: ${e.message}` : e.message);
    else unmatched.push(e);
  }
  return { byField, unmatched };
}

type Preview = { schedule: Schedule; occurrences: string[] } | { message: string } | null;

/** The form itself, for a new job (`job` null) or an existing one. */
function JobForm({ job }: { job: Job | null }) {
  const { api } = useSession();
  const { route } = useLocation();
  const edit = job !== null;
  const start = useMemo(() => (job ? jobForm(job) : { form: blankForm(), exact: new Map<string, string>() }), [job]);
  const exact = start.exact;
  const [state, setState] = useState<FormState>(start.form);
  const [submitErrors, setSubmitErrors] = useState<Errors>({});
  const [previewErrors, setPreviewErrors] = useState<Errors>({});
  const [topError, setTopError] = useState<unknown>(null);
  const [notSaved, setNotSaved] = useState(false);
  const [saving, setSaving] = useState(false);
  const [preview, setPreview] = useState<Preview>(null);
  const [focusTick, setFocusTick] = useState(0);
  const zones = useMemo(() => timeZones(state.tz), [state.tz]);

  const visible: FieldName[] = [
    'name',
    ...(edit ? [] : (['key'] as FieldName[])),
    'type',
    ...scheduleFields(state.type),
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
    'relevancy',
    'delivery',
    'pause',
    'metadata',
    'payload',
    ...ADVANCED_FIELDS,
  ];
  const errors: Errors = { ...previewErrors, ...submitErrors };
  const advancedInvalid = ADVANCED_FIELDS.some((f) => errors[f]);

  const set = <K extends keyof FormState>(name: K, value: FormState[K]) => {
    setState((s) => ({ ...s, [name]: value }));
    setNotSaved(false);
    setSubmitErrors((e) => {
      if (!e[name] && !SCHEDULE_FIELDS.includes(name)) return e;
      const next = { ...e };
      delete next[name];
      // The live preview checks the schedule again: its older errors are stale.
      if (SCHEDULE_FIELDS.includes(name)) for (const f of SCHEDULE_FIELDS) delete next[f];
      return next;
    });
  };

  // Live preview of the schedule, a moment after the last change.
  const built = buildSchedule(state, exact);
  const scheduleKey = Object.keys(built.errors).length === 0 ? JSON.stringify(built.schedule) : '';
  // What the form cannot read in the schedule fields already filled in (empty ones are reported on submit).
  const unreadable = Object.entries(built.errors)
    .filter(([f]) => String(state[f as FieldName]).trim() !== '')
    .map(([f, m]) => `${LABELS[f as FieldName]}: ${m}`);
  const generation = useRef(0);
  useEffect(() => {
    const n = ++generation.current;
    if (!scheduleKey) {
      setPreview(null);
      setPreviewErrors({});
      return;
    }
    const schedule = JSON.parse(scheduleKey) as Schedule;
    const timer = setTimeout(() => {
      api<{ occurrences: string[] }>('POST', '/v1/schedules/preview', { schedule, count: 10 }).then(
        (r) => {
          if (n !== generation.current) return;
          setPreview({ schedule, occurrences: r.occurrences });
          setPreviewErrors({});
        },
        (err: unknown) => {
          if (n !== generation.current) return;
          if (err instanceof ApiProblem && err.status === 400 && err.errors.length) {
            const { byField, unmatched } = sortErrors(err.errors, ['type', ...scheduleFields(schedule.type)]);
            setPreviewErrors(byField);
            setPreview(unmatched.length ? { message: unmatched.map((e) => `${e.path}: ${e.message}`).join('; ') } : null);
          } else {
            setPreviewErrors({});
            setPreview({ message: err instanceof ApiProblem ? err.detail || err.title : String(err) });
          }
        },
      );
    }, PREVIEW_DEBOUNCE_MS);
    return () => clearTimeout(timer);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [scheduleKey]);

  // After a refused submit, the first field in error takes the focus.
  useEffect(() => {
    if (focusTick === 0) return;
    const first = visible.find((f) => errors[f]);
    if (first) document.getElementById(`f-${first}`)?.focus();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [focusTick]);

  const onSubmit = async (e: Event) => {
    e.preventDefault();
    if (saving) return;
    setTopError(null);
    const { body, errors: local } = buildBody(state, exact, edit);
    if (Object.keys(local).length > 0) {
      setSubmitErrors(local);
      setNotSaved(true);
      setFocusTick((t) => t + 1);
      return;
    }
    let send: Record<string, unknown> = body;
    if (edit) {
      const before = buildBody(start.form, exact, true).body;
      send = Object.fromEntries(Object.entries(body).filter(([k, v]) => JSON.stringify(v) !== JSON.stringify(before[k])));
      if (Object.keys(send).length === 0) {
        route(`/console/jobs/${job.jobId}`);
        return;
      }
    }
    setSaving(true);
    try {
      const saved = await api<Job>(edit ? 'PATCH' : 'POST', edit ? `/v1/jobs/${encodeURIComponent(job.jobId)}` : '/v1/jobs', send);
      route(`/console/jobs/${saved.jobId}`);
    } catch (err) {
      if (err instanceof ApiProblem && err.status === 400 && err.errors.length) {
        const { byField, unmatched } = sortErrors(err.errors, visible);
        setSubmitErrors(byField);
        setTopError(unmatched.length ? new ApiProblem(err.status, err.title, unmatched.map((u) => `${u.path}: ${u.message}`).join('; '), unmatched) : null);
        setNotSaved(true);
        setFocusTick((t) => t + 1);
      } else {
        setSubmitErrors({});
        setTopError(err);
        setNotSaved(true);
      }
    } finally {
      setSaving(false);
    }
  };

  /** The attributes every control shares: id, name, and its error for assistive technology. */
  const ctl = (name: FieldName) => ({
    id: `f-${name}`,
    name,
    'aria-invalid': errors[name] ? (true as const) : undefined,
    'aria-describedby': errors[name] ? `f-${name}-error` : undefined,
  });
  const text = (name: TextName, hint?: string, attrs: Record<string, unknown> = {}) => (
    <Field id={`f-${name}`} label={LABELS[name]} error={errors[name]} hint={hint}>
      <input type="text" {...attrs} {...ctl(name)} value={state[name]} onInput={(e) => set(name, e.currentTarget.value)} />
    </Field>
  );
  const area = (name: TextName, placeholder: string, hint?: string) => (
    <Field id={`f-${name}`} label={LABELS[name]} error={errors[name]} hint={hint}>
      <textarea {...ctl(name)} value={state[name]} placeholder={placeholder} spellcheck={false} onInput={(e) => set(name, e.currentTarget.value)} />
    </Field>
  );
  const select = (name: TextName, options: readonly string[], hint?: string) => (
    <Field id={`f-${name}`} label={LABELS[name]} error={errors[name]} hint={hint}>
      <select {...ctl(name)} value={state[name]} onChange={(e) => set(name, e.currentTarget.value)}>
        {options.map((o) => (
          <option value={o}>{o}</option>
        ))}
      </select>
    </Field>
  );
  const shownFields = scheduleFields(state.type);

  return (
    <>
      <p class="crumbs">
        <a href="/console/jobs">Jobs</a>
        {job && (
          <>
            {' › '}
            <a href={`/console/jobs/${job.jobId}`}>{jobLabel(job)}</a>
          </>
        )}
      </p>
      <h1>{edit ? 'Edit job' : 'New job'}</h1>
      <form class="job-form" noValidate onSubmit={onSubmit} aria-busy={saving ? 'true' : undefined}>
        <ErrorNote error={topError} />
        <fieldset>
          <legend>Job</legend>
          <div class="grid">
            {text('name', 'Optional', { maxLength: 200, autocomplete: 'off' })}
            {!edit && text('key', 'Optional, unique: letters, digits and . _ : ~ -', { maxLength: 200, autocomplete: 'off', spellcheck: false })}
          </div>
        </fieldset>

        <fieldset>
          <legend>Schedule</legend>
          <div class="grid">
            <Field id="f-type" label={LABELS.type} error={errors.type}>
              <select {...ctl('type')} value={state.type} onChange={(e) => set('type', e.currentTarget.value as ScheduleType)}>
                {SCHEDULE_TYPES.map((t) => (
                  <option value={t}>{t}</option>
                ))}
              </select>
            </Field>
            {shownFields.includes('at') && (
              <Field id="f-at" label={LABELS.at} error={errors.at} hint="In your time zone">
                <input {...ctl('at')} type="datetime-local" value={state.at} onInput={(e) => set('at', e.currentTarget.value)} />
              </Field>
            )}
            {shownFields.includes('delay') && text('delay', 'After the job is saved', { inputMode: 'decimal' })}
            {shownFields.includes('every') && text('every', 'At least 1 second', { inputMode: 'decimal' })}
            {shownFields.includes('expr') && text('expr', 'minute hour day-of-month month day-of-week, or @daily, @hourly…', { placeholder: '0 9 * * *', spellcheck: false, autocomplete: 'off' })}
            {shownFields.includes('tz') && (
              <Field id="f-tz" label={LABELS.tz} error={errors.tz}>
                <select {...ctl('tz')} value={state.tz} onChange={(e) => set('tz', e.currentTarget.value)}>
                  {zones.map((z) => (
                    <option value={z}>{z}</option>
                  ))}
                </select>
              </Field>
            )}
            {shownFields.includes('start') && (
              <Field id="f-start" label={LABELS.start} error={errors.start} hint="Optional, in your time zone">
                <input {...ctl('start')} type="datetime-local" value={state.start} onInput={(e) => set('start', e.currentTarget.value)} />
              </Field>
            )}
            {shownFields.includes('end') && (
              <Field id="f-end" label={LABELS.end} error={errors.end} hint="Optional, in your time zone">
                <input {...ctl('end')} type="datetime-local" value={state.end} onInput={(e) => set('end', e.currentTarget.value)} />
              </Field>
            )}
          </div>
          {shownFields.includes('dates') && area('dates', '2026-12-01T09:00\n2026-12-24T18:30:00Z', 'RFC 3339 with an offset, or 2026-12-01T09:00 in your time zone')}
          <SchedulePreview preview={preview} unreadable={unreadable} />
        </fieldset>

        <fieldset>
          <legend>Callback</legend>
          {text('url', undefined, { type: 'url', inputMode: 'url', placeholder: 'https://example.com/hooks/report', spellcheck: false, autocomplete: 'off' })}
          <div class="grid">
            {select('method', METHODS)}
            <Field id="f-token" label={LABELS.token} error={errors.token} hint={job?.callback.hasAuthToken ? 'Set: type a new one to replace it' : 'Optional: sent as Authorization: Bearer …'}>
              <input
                {...ctl('token')}
                type="password"
                autocomplete="new-password"
                spellcheck={false}
                placeholder={job?.callback.hasAuthToken ? 'unchanged' : ''}
                value={state.token}
                onInput={(e) => set('token', e.currentTarget.value)}
              />
            </Field>
            {text('codes', 'Codes or classes, comma-separated', { placeholder: '2xx, 304', spellcheck: false })}
            {text('timeout', '1000 to 60000', { inputMode: 'numeric' })}
          </div>
          {area('headers', 'X-Team: ops')}
        </fieldset>

        <fieldset>
          <legend>Retries</legend>
          <div class="grid">
            {select('strategy', STRATEGIES)}
            {text('attempts', 'The first attempt included', { inputMode: 'numeric' })}
            {text('initial', undefined, { inputMode: 'numeric' })}
            {text('maxDelay', undefined, { inputMode: 'numeric' })}
          </div>
        </fieldset>

        <fieldset>
          <legend>Delivery</legend>
          <div class="grid">
            {text('relevancy', 'Empty: none. A run not started this long after its time is expired, never sent', { inputMode: 'decimal' })}
            {select('delivery', DELIVERY_MODES, 'at-most-once never re-sends after an ambiguous outcome')}
            {text('pause', 'Failed runs in a row before the job pauses; 0 = never', { inputMode: 'numeric' })}
          </div>
          <details class="advanced" open={advancedInvalid || undefined}>
            <summary>More options: backoff multiplier, retry jitter, overlap, catch-up, jitter</summary>
            <div class="grid">
              {text('multiplier', 'Exponential backoff: 1 to 10', { inputMode: 'decimal' })}
              {select('overlap', OVERLAP_POLICIES, 'skip: no new run while the previous one is in flight')}
              {select('catchUp', CATCH_UP_POLICIES, 'After downtime: one missed run, all, or none')}
              {text('jitter', 'Each run fires up to this much later (stable per job)', { inputMode: 'numeric' })}
            </div>
            <div class={`field check${errors.retryJitter ? ' invalid' : ''}`}>
              <input {...ctl('retryJitter')} type="checkbox" checked={state.retryJitter} onChange={(e) => set('retryJitter', e.currentTarget.checked)} />
              <label for="f-retryJitter">{LABELS.retryJitter}</label>
              {errors.retryJitter && (
                <small class="field-error" id="f-retryJitter-error" role="alert">
                  {errors.retryJitter}
                </small>
              )}
            </div>
          </details>
        </fieldset>

        <fieldset>
          <legend>Data</legend>
          {area('metadata', 'team=ops', 'At most 20 pairs')}
          {area('payload', '{ "report": "daily" }', 'The JSON body of each callback (not for GET)')}
        </fieldset>

        <div class="actions">
          <button type="submit" class="primary" disabled={saving}>
            {edit ? 'Save changes' : 'Create job'}
          </button>
          <a class="button" href={job ? `/console/jobs/${job.jobId}` : '/console/jobs'}>
            Back
          </a>
          <span role="status" class="field-error">
            {notSaved && !saving ? 'Not saved: see the messages above.' : ''}
          </span>
        </div>
      </form>
    </>
  );
}

/** The live preview: the schedule in words and its next occurrences, or why there are none. */
function SchedulePreview({ preview, unreadable }: { preview: Preview; unreadable: string[] }) {
  let content: ComponentChildren;
  if (unreadable.length) content = <p class="muted">No preview: {unreadable.join('; ')}</p>;
  else if (preview === null) content = <p class="muted">Fill in the schedule to see when it runs.</p>;
  else if ('message' in preview) content = <p class="field-error">{preview.message}</p>;
  else
    content = (
      <>
        <p>{describeSchedule(preview.schedule)}</p>
        <ol class="occurrences" aria-label="Next occurrences">
          {preview.occurrences.map((iso) => (
            <li>
              <Time iso={iso} />
            </li>
          ))}
        </ol>
      </>
    );
  return (
    <section class="preview" aria-labelledby="preview-h" aria-live="polite">
      <h2 id="preview-h">Next occurrences</h2>
      {content}
    </section>
  );
}

/** Loads the job to edit, then its form. */
function EditJob({ jobId }: { jobId: string }) {
  const { api } = useSession();
  const job = useAsync(() => api<Job>('GET', `/v1/jobs/${encodeURIComponent(jobId)}`), [jobId]);
  if (isNoSuchJob(job.error)) return <NoSuchJob jobId={jobId} />;
  if (job.error) return <ErrorNote error={job.error} />;
  if (!job.data) return <p class="muted">Loading…</p>;
  if (job.data.status === 'canceled') {
    return (
      <>
        <h1>Edit job</h1>
        <p class="notice">
          This job is canceled and cannot be changed. <a href={`/console/jobs/${job.data.jobId}`}>Back to the job</a>
        </p>
      </>
    );
  }
  return <JobForm key={job.data.jobId} job={job.data} />;
}

/** `/console/jobs/new` and `/console/jobs/:jobId/edit`: the job form, empty or prefilled. */
export function JobFormPage() {
  const jobId = useRoute().params['jobId'];
  return jobId ? <EditJob jobId={jobId} /> : <JobForm key="new" job={null} />;
}
