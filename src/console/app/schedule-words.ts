/**
 * Schedules and retry policies in English, for the job pages. Times are shown in the viewer's time zone, named; a
 * cron schedule names its own zone. Cron expressions are described by `cronstrue` (24-hour clock), with the most common
 * forms ("every day at 09:00") worded here first.
 */
import { toString as cronToString } from 'cronstrue';
import type { Job, Schedule } from './types.ts';
import { formatInstantShort } from './zones.ts';

/** A schedule as sent, or as stored: the API stores a `delay` with the instant it resolved to (`at`). */
export type AnySchedule = Schedule | { type: 'delay'; delayMs: number; at?: string };

/** An instant in the viewer's zone, short and named ("Dec 1, 2026, 9:00 AM PST"); the text itself when it is not a time. */
export function when(iso: string): string {
  return formatInstantShort(iso);
}

const UNITS: [ms: number, one: string, many: string][] = [
  [86_400_000, 'day', 'days'],
  [3_600_000, 'hour', 'hours'],
  [60_000, 'minute', 'minutes'],
  [1000, 'second', 'seconds'],
];

/** A duration in ms as words, in the largest unit that divides it ("90 minutes", "1 hour", "250 ms"). */
export function durationWords(ms: number): string {
  if (ms === 0) return '0 seconds';
  for (const [size, one, many] of UNITS) {
    if (ms % size === 0) {
      const n = ms / size;
      return `${n} ${n === 1 ? one : many}`;
    }
  }
  return `${ms} ms`;
}

/** "minute", "30 minutes": the period of "every …". */
function period(ms: number): string {
  const words = durationWords(ms);
  return words.startsWith('1 ') ? words.slice(2) : words;
}

const pad = (n: number) => String(n).padStart(2, '0');
const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** The common cron forms in words, or null for cronstrue to describe. */
function commonCron(expr: string): string | null {
  if (expr === '@daily' || expr === '@midnight') return 'Every day at 00:00';
  if (expr === '@hourly') return 'Every hour';
  const f = expr.split(/\s+/);
  // Seconds first: at second 0, the same words as the 5 fields after it; any other second is cronstrue's.
  if (f.length === 6 && f[0] === '0') return commonCron(f.slice(1).join(' '));
  if (f.length !== 5) return null;
  const [min, hour, dom, mon, dow] = f as [string, string, string, string, string];
  const num = (s: string, max: number) => (/^\d{1,2}$/.test(s) && Number(s) <= max ? Number(s) : null);
  const m = num(min, 59);
  const h = num(hour, 23);
  if (min === '*' && hour === '*' && dom === '*' && mon === '*' && dow === '*') return 'Every minute';
  const step = /^\*\/(\d+)$/.exec(min);
  if (step && hour === '*' && dom === '*' && mon === '*' && dow === '*') return `Every ${step[1]} minutes`;
  if (m !== null && hour === '*' && dom === '*' && mon === '*' && dow === '*') return m === 0 ? 'Every hour' : `Every hour at minute ${m}`;
  if (m === null || h === null) return null;
  const at = `${pad(h)}:${pad(m)}`;
  if (dom === '*' && mon === '*' && dow === '*') return `Every day at ${at}`;
  const d = num(dow, 7);
  if (dom === '*' && mon === '*' && d !== null) return `Every ${WEEKDAYS[d % 7]} at ${at}`;
  const day = num(dom, 31);
  if (day !== null && day >= 1 && mon === '*' && dow === '*') return `On day ${day} of every month at ${at}`;
  return null;
}

/** A cron expression in words, or `cron "<expression>"` when it cannot be described. */
export function describeCron(expression: string): string {
  const expr = expression.trim();
  const common = commonCron(expr);
  if (common) return common;
  try {
    return cronToString(expr, { use24HourTimeFormat: true, throwExceptionOnParseError: true });
  } catch {
    return `cron "${expr}"`;
  }
}

function range(startAt: string | undefined, endAt: string | undefined): string {
  return `${startAt ? ` from ${when(startAt)}` : ''}${endAt ? ` until ${when(endAt)}` : ''}`;
}

/**
 * A schedule in English: "Every day at 09:00 (Europe/Paris)", "Once at …", "Every 30 minutes from … until …",
 * "On 3 dates", "Each of: Every day at 09:00 (UTC); On 3 dates".
 */
export function describeSchedule(schedule: AnySchedule): string {
  switch (schedule.type) {
    case 'once':
      return `Once at ${when(schedule.at)}`;
    case 'delay': {
      const after = durationWords(schedule.delayMs);
      const at = 'at' in schedule && schedule.at ? schedule.at : undefined;
      return at ? `${after} after it was created (${when(at)})` : `${after} after it is saved`;
    }
    case 'interval':
      return `Every ${period(schedule.everyMs)}${range(schedule.startAt, schedule.endAt)}`;
    case 'dates':
      return schedule.dates.length === 1 ? `On ${when(schedule.dates[0]!)}` : `On ${schedule.dates.length} dates`;
    case 'cron':
      return `${describeCron(schedule.expression)} (${schedule.timezone ?? 'UTC'})${range(schedule.startAt, schedule.endAt)}`;
    case 'union':
      return `Each of: ${schedule.schedules.map((m) => describeSchedule(m)).join('; ')}`;
  }
}

/** A retry policy in English: "Up to 5 attempts; backoff from 1 second, ×2 each time, at most 1 hour, with jitter". */
export function describeRetry(retry: Job['retry']): string {
  const strategy = retry.strategy ?? 'exponential';
  const attempts = retry.maxAttempts ?? 5;
  if (strategy === 'none' || attempts <= 1) return 'No retries (a single attempt)';
  const initial = durationWords(retry.initialDelayMs ?? 1000);
  const cap = `at most ${durationWords(retry.maxDelayMs ?? 3_600_000)}`;
  const jitter = (retry.jitter ?? true) ? ', with jitter' : '';
  const upTo = `Up to ${attempts} attempts`;
  switch (strategy) {
    case 'exponential':
      return `${upTo}; exponential backoff from ${initial}, ×${retry.multiplier ?? 2} each time, ${cap}${jitter}`;
    case 'linear':
      return `${upTo}; linear backoff: ${initial}, then ${initial} more each time, ${cap}${jitter}`;
    case 'fixed':
      return `${upTo}, ${initial} apart${jitter}`;
    case 'schedule': {
      const delays = retry.delaysMs ?? [];
      return `Up to ${delays.length + 1} attempts, retries after ${delays.map(durationWords).join(', ')}${jitter}`;
    }
  }
}
