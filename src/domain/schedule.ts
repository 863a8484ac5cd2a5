/**
 * Schedules: when a job's runs fall due. Pure arithmetic over UTC epoch milliseconds, no I/O.
 *
 * Kinds (API.md "Jobs"): `once` at a time, `delay` after a duration, `interval` every N ms inside a date range,
 * `dates` from an explicit list, `cron` (5-field expressions, 6-field ones with seconds first as cron-parser and
 * pg_cron read them, and `@hourly`-style macros; parsed by cron-parser and evaluated in an IANA time zone), and
 * `union` (API.md "Richer schedules": 2..10 of the others but `delay`, merged, an instant produced twice firing once).
 *
 * Daylight-saving rule for cron (cron-parser matches the fields against local wall-clock time; `nextCron` below
 * maps wall-clock times to instants by this rule):
 * - a local time inside a skipped interval (spring forward) is not lost: it fires at the same offset past the gap,
 *   e.g. `30 2 * * *` in Europe/Berlin fires at 03:30 CEST on the day clocks go from 02:00 to 03:00, and
 *   `15 2 * * *` in Australia/Lord_Howe at 02:45 on the day clocks go from 02:00 to 02:30;
 * - a local time inside a repeated interval (fall back) fires once, at its first instance, unless the expression's
 *   hour field names every hour: then it fires at both instances.
 * So schedules whose fields name every hour (`0 * * * *`) keep firing once per elapsed hour across both changes
 * in zones that shift by a whole hour. (Vixie/ISC cron and croner instead run a skipped time when the gap ends.)
 */
import { type CronExpression, CronExpressionParser } from 'cron-parser';
import { zoneOffsetMs } from './zone-offset.ts';

export type OnceSchedule = { type: 'once'; at: string };
export type DelaySchedule = { type: 'delay'; delayMs: number; at?: string };
export type IntervalSchedule = { type: 'interval'; everyMs: number; startAt?: string; endAt?: string };
export type DatesSchedule = { type: 'dates'; dates: string[] };
export type CronSchedule = { type: 'cron'; expression: string; timezone?: string; startAt?: string; endAt?: string };

/** A schedule that may be a member of a union (API.md "Richer schedules"): not `delay`, not another union. */
export type UnionMember = OnceSchedule | IntervalSchedule | DatesSchedule | CronSchedule;
/** Several schedules as one: their occurrences merged in order, an instant produced twice firing once. */
export type UnionSchedule = { type: 'union'; schedules: UnionMember[] };

/** A schedule as a client sends it (times are RFC 3339 strings, durations integer ms). */
export type Schedule = OnceSchedule | DelaySchedule | IntervalSchedule | DatesSchedule | CronSchedule | UnionSchedule;

/** A problem with one field of a schedule; `path` is relative to the schedule object (`expression`, `dates.3`). */
export type ScheduleIssue = { path: string; message: string };

/** Smallest interval between runs of an `interval` schedule, in ms. */
export const MIN_INTERVAL_MS = 1000;
/** Most dates in a `dates` schedule. */
export const MAX_DATES = 1000;
/** Fewest and most schedules in a union. */
export const MIN_UNION_SCHEDULES = 2;
export const MAX_UNION_SCHEDULES = 10;
/** The macros accepted besides 5-field expressions. */
export const CRON_MACROS = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@hourly'] as const;

/**
 * The instants Chime takes and stores, UTC epoch ms: years 0001..9999 in UTC. PostgreSQL's timestamptz spans more,
 * but a JavaScript Date outside these years is sent as `0000-…` or `+010000-…`, which PostgreSQL refuses (a 500).
 */
export const MIN_INSTANT_MS = Date.parse('0001-01-01T00:00:00.000Z');
export const MAX_INSTANT_MS = Date.parse('9999-12-31T23:59:59.999Z');
/** Longest jitter, in ms: a job's runs fall due up to this much after their occurrences (24 h). */
export const MAX_JITTER_MS = 24 * 3_600_000;
/**
 * The latest occurrence a schedule has (epoch ms): a later one, due up to MAX_JITTER_MS after it, could fall past
 * MAX_INSTANT_MS. A schedule ends there, so no claim or re-plan ever writes a run PostgreSQL cannot store.
 */
export const LATEST_OCCURRENCE_MS = MAX_INSTANT_MS - MAX_JITTER_MS;

/** True for an instant (epoch ms) within MIN_INSTANT_MS..MAX_INSTANT_MS; false for NaN. */
export function isStorableInstant(t: number): boolean {
  return t >= MIN_INSTANT_MS && t <= MAX_INSTANT_MS;
}

const ms = (iso: string): number => Date.parse(iso);
const iso = (t: number): string => new Date(t).toISOString();

/**
 * Resolves what a schedule leaves relative to the time it is registered, so later evaluation needs no context:
 * `delay` gets `at` = now + delayMs; `interval` gets `startAt` (default now); `dates` are de-duplicated, sorted and
 * the past ones (before nowMs) dropped; every time is rewritten as RFC 3339 UTC with milliseconds.
 * @param s a schedule that passed `scheduleIssues`
 * @param nowMs registration time, UTC epoch ms
 */
export function normalizeSchedule(s: Schedule, nowMs: number): Schedule {
  switch (s.type) {
    case 'once':
      return { type: 'once', at: iso(ms(s.at)) };
    case 'delay':
      return { type: 'delay', delayMs: s.delayMs, at: iso(nowMs + s.delayMs) };
    case 'interval':
      return {
        type: 'interval',
        everyMs: s.everyMs,
        startAt: iso(s.startAt ? ms(s.startAt) : nowMs),
        ...(s.endAt ? { endAt: iso(ms(s.endAt)) } : {}),
      };
    case 'dates': {
      const times = [...new Set(s.dates.map(ms))].filter((t) => t >= nowMs).sort((a, b) => a - b);
      return { type: 'dates', dates: times.map(iso) };
    }
    case 'cron':
      return {
        type: 'cron',
        expression: s.expression.trim(),
        timezone: s.timezone ?? 'UTC',
        ...(s.startAt ? { startAt: iso(ms(s.startAt)) } : {}),
        ...(s.endAt ? { endAt: iso(ms(s.endAt)) } : {}),
      };
    case 'union':
      return { type: 'union', schedules: s.schedules.map((m) => normalizeSchedule(m, nowMs) as UnionMember) };
  }
}

/**
 * The first occurrence strictly after `afterMs` (UTC epoch ms), or null when the schedule has none left (none up to
 * LATEST_OCCURRENCE_MS). `delay` and `interval` schedules must be normalized first (`normalizeSchedule`).
 * @throws Error for a cron expression or time zone that `scheduleIssues` would have refused
 */
export function nextOccurrence(s: Schedule, afterMs: number): number | null {
  const t = unboundedNextOccurrence(s, afterMs);
  return t !== null && t <= LATEST_OCCURRENCE_MS ? t : null;
}

function unboundedNextOccurrence(s: Schedule, afterMs: number): number | null {
  switch (s.type) {
    case 'once':
    case 'delay': {
      const at = s.type === 'once' ? ms(s.at) : ms(s.at ?? '');
      return at > afterMs ? at : null;
    }
    case 'interval': {
      const start = ms(s.startAt ?? '');
      const k = afterMs < start ? 0 : Math.floor((afterMs - start) / s.everyMs) + 1;
      const t = start + k * s.everyMs;
      return s.endAt !== undefined && t > ms(s.endAt) ? null : t;
    }
    case 'dates': {
      for (const d of s.dates) {
        const t = ms(d);
        if (t > afterMs) return t;
      }
      return null;
    }
    case 'cron':
      return nextCron(s, afterMs);
    case 'union': {
      // The earliest of the members' next occurrences: an instant two members share comes out once.
      let best: number | null = null;
      for (const m of s.schedules) {
        const t = unboundedNextOccurrence(m, afterMs);
        if (t !== null && (best === null || t < best)) best = t;
      }
      return best;
    }
  }
}

/** Up to `count` occurrences strictly after `afterMs`, in order (for previews and tests). */
export function occurrences(s: Schedule, afterMs: number, count: number): number[] {
  const out: number[] = [];
  let t: number | null = afterMs;
  while (out.length < count && (t = nextOccurrence(s, t)) !== null) out.push(t);
  return out;
}

/** True for schedules that can fire more than once. */
export function isRecurring(s: Schedule): boolean {
  return s.type === 'union' || s.type === 'interval' || s.type === 'cron' || (s.type === 'dates' && s.dates.length > 1);
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/*
 * Cron evaluation. cron-parser matches the fields against wall-clock times, evaluated in UTC (which has no DST) on
 * wall-clock readings stored as if they were UTC epoch ms; this module then maps each wall-clock time to instants
 * in the schedule's zone by the rule in the header. (cron-parser's own zone handling assumes whole-hour shifts and
 * loses or skips times around the 30-minute changes of Australia/Lord_Howe.) Offsets come from Intl; the code
 * assumes at most one offset change within any two days, which holds for every IANA zone.
 */
function nextCron(s: CronSchedule, afterMs: number): number | null {
  const tz = s.timezone ?? 'UTC';
  const startMs = s.startAt ? ms(s.startAt) : -Infinity;
  // Strictly after `from`; starting one ms before startAt lets startAt itself match.
  const from = Math.max(afterMs, startMs - 1);
  // A firing t belongs to the wall-clock time t + offset; the smallest offset around `from` bounds where to start.
  const lo = from + Math.min(...[-2 * DAY_MS, 0, 2 * DAY_MS].map((d) => zoneOffsetMs(from + d, tz)));
  // cron-parser's next() is strictly after currentDate: start one ms early so that `lo` itself can match.
  const it = cronFrom(s.expression, new Date(lo - 1));
  const everyHour = it.fields.hour.values.length === 24;
  let best = Infinity;
  // Later wall-clock times cannot fire before `best` once past best + the largest offset around it.
  let limit = Infinity;
  for (let wall = it.next().getTime(); wall <= limit; wall = it.next().getTime()) {
    for (const t of wallClockFirings(tz, wall, everyHour)) {
      if (t > from && t < best) {
        best = t;
        limit = t + Math.max(zoneOffsetMs(t - 2 * DAY_MS, tz), zoneOffsetMs(t, tz));
      }
    }
  }
  return s.endAt !== undefined && best > ms(s.endAt) ? null : best;
}

/** Most parsed expressions `cronFrom` keeps (the oldest parsed goes first). */
const PARSED_CRON_MAX = 1_000;
/**
 * Parsed cron expressions by text, evaluated in UTC (above): parsing costs more than a search for the next occurrence,
 * and a claim, a re-plan or a backfill searches the same few expressions over and over. A pure function's memo: each use
 * resets the iterator and runs to its end synchronously, so no two uses share its position.
 */
const parsedCron = new Map<string, CronExpression>();

/** cron-parser's iterator of `expression` (UTC), positioned at `currentDate` (its next() is strictly after it). */
function cronFrom(expression: string, currentDate: Date): CronExpression {
  const cached = parsedCron.get(expression);
  if (cached) {
    cached.reset(currentDate);
    return cached;
  }
  const it = CronExpressionParser.parse(expression, { currentDate, tz: 'UTC' });
  if (parsedCron.size >= PARSED_CRON_MAX) parsedCron.delete(parsedCron.keys().next().value!);
  parsedCron.set(expression, it);
  return it;
}

/**
 * The instants, ascending, at which the wall-clock time `wall` (read as UTC epoch ms) fires in `tz`: its one instant;
 * in a skipped interval, the same offset past the gap (read with the offset before it); in a repeated interval, the
 * first instance, or both when the expression names every hour (`everyHour`).
 */
function wallClockFirings(tz: string, wall: number, everyHour: boolean): number[] {
  const before = zoneOffsetMs(wall - DAY_MS, tz);
  const after = zoneOffsetMs(wall + DAY_MS, tz);
  const out: number[] = [];
  for (const o of before === after ? [before] : [before, after]) {
    if (zoneOffsetMs(wall - o, tz) === o) out.push(wall - o);
  }
  if (out.length === 0) return [wall - before];
  out.sort((a, b) => a - b);
  return everyHour ? out : out.slice(0, 1);
}

/**
 * The instant (UTC epoch ms) of the wall-clock time `wallMs` (a local reading stored as if it were UTC epoch ms) in
 * `tz`, by the DST rule of this module's header: in a skipped interval, the same offset past the gap; in a repeated
 * interval, the first instance.
 */
export function instantOfWallClock(tz: string, wallMs: number): number {
  return wallClockFirings(tz, wallMs, false)[0]!;
}

/** True when `name` is an IANA time zone this runtime knows. */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks what a schema cannot: that the cron expression parses (5 fields, or 6 with seconds first, without `H`; or a
 * macro), that the time
 * zone exists, that ranges are ordered, that no date is past LATEST_OCCURRENCE_MS, and that the schedule fires at
 * least once at or after `nowMs` and by LATEST_OCCURRENCE_MS. Shape (types, required fields, integer bounds, times
 * within MIN_INSTANT_MS..MAX_INSTANT_MS) is the API schema's job and is assumed here.
 * @returns the issues found, empty when the schedule is good
 */
export function scheduleIssues(s: Schedule, nowMs: number): ScheduleIssue[] {
  if (s.type === 'union') {
    // Each member is checked as a schedule of its own (a member that never fires is dead weight: named, not kept).
    return s.schedules.flatMap((m, i) => scheduleIssues(m, nowMs).map((issue) => ({ ...issue, path: `schedules.${i}.${issue.path}` })));
  }
  const issues: ScheduleIssue[] = [];
  if (s.type === 'cron') {
    const expr = s.expression.trim();
    const fields = expr.split(/\s+/);
    if (expr.startsWith('@')) {
      if (!(CRON_MACROS as readonly string[]).includes(expr)) {
        issues.push({ path: 'expression', message: `unknown macro; use one of ${CRON_MACROS.join(', ')}` });
      }
    } else if (fields.length !== 5 && fields.length !== 6) {
      issues.push({
        path: 'expression',
        message: `expected 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first, got ${fields.length}`,
      });
    } else if (fields.some((f, i) => (i >= fields.length - 2 ? f.replace(/[a-z]{3}/gi, '') : f).includes('H'))) {
      // cron-parser draws `H` from an unseeded random source on every parse, so each evaluation would differ.
      issues.push({ path: 'expression', message: 'hashed values (H) are not supported; use jitterMs to spread jobs' });
    }
    if (s.timezone !== undefined && !isTimeZone(s.timezone)) {
      issues.push({ path: 'timezone', message: `unknown IANA time zone "${s.timezone}"` });
    }
    if (issues.length === 0) {
      try {
        CronExpressionParser.parse(expr, { tz: s.timezone ?? 'UTC', strict: false });
      } catch (err) {
        issues.push({ path: 'expression', message: `invalid cron expression: ${(err as Error).message}` });
      }
    }
  }
  if ((s.type === 'interval' || s.type === 'cron') && s.startAt && s.endAt && ms(s.endAt) < ms(s.startAt)) {
    issues.push({ path: 'endAt', message: 'endAt is before startAt' });
  }
  if (s.type === 'dates') {
    // Named one by one: nextOccurrence would pass over them in silence.
    s.dates.forEach((d, i) => {
      if (ms(d) > LATEST_OCCURRENCE_MS)
        issues.push({ path: `dates.${i}`, message: `after ${iso(LATEST_OCCURRENCE_MS)}, the latest Chime schedules` });
    });
  }
  if (issues.length > 0) return issues;

  let first: number | null;
  try {
    first = unboundedNextOccurrence(normalizeSchedule(s, nowMs), nowMs - 1);
  } catch (err) {
    return [{ path: 'expression', message: `cron expression never fires: ${(err as Error).message}` }];
  }
  if (first === null) issues.push({ path: neverFiresPath(s, false), message: 'the schedule has no occurrence after now' });
  else if (first > LATEST_OCCURRENCE_MS) {
    issues.push({
      path: neverFiresPath(s, true),
      message: `the schedule has no occurrence between now and ${iso(LATEST_OCCURRENCE_MS)}, the latest Chime schedules`,
    });
  }
  return issues;
}

/** The field to name for a schedule without an occurrence: for one whose first is too late, what set it so late. */
function neverFiresPath(s: Exclude<Schedule, UnionSchedule>, tooLate: boolean): string {
  switch (s.type) {
    case 'once':
      return 'at';
    case 'delay':
      return 'delayMs';
    case 'dates':
      return 'dates';
    case 'interval':
    case 'cron':
      return tooLate && s.startAt !== undefined ? 'startAt' : 'endAt';
  }
}

/**
 * A stable per-job offset in [0, jitterMs): FNV-1a (32-bit) of the job id's UTF-16 code units, modulo jitterMs, so
 * that many jobs with the same schedule spread out over the window while each keeps its own rhythm.
 */
export function jitterOffsetMs(jobId: string, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < jobId.length; i++) {
    h ^= jobId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % jitterMs;
}
