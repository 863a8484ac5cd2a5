/**
 * Calendars (API.md "Richer schedules"): a tenant's business days in the calendar's own IANA time zone, and how an
 * occurrence that falls on a weekend day or a holiday is treated. Pure arithmetic over UTC epoch ms, no I/O.
 */
import { instantOfWallClock, nextOccurrence, type Schedule } from './schedule.ts';
import { zoneOffsetMs } from './zone-offset.ts';

/** What an occurrence on a non-business day does: `skip` it (a `skipped` run), or move it to the `next` / `previous` business day. */
export const CALENDAR_ROLLS = ['skip', 'next', 'previous'] as const;
export type CalendarRoll = (typeof CALENDAR_ROLLS)[number];

/** A job's calendar: the tenant's calendar `key`, and the roll. */
export type CalendarRef = { key: string; roll: CalendarRoll };

/** A calendar as stored: its zone, weekend days (0 = Sunday … 6 = Saturday) and holidays (local dates, `YYYY-MM-DD`). */
export type Calendar = { timezone: string; weekendDays: number[]; holidays: string[] };

/** Most holidays in one calendar. */
export const MAX_HOLIDAYS = 1000;
/** The default weekend: Saturday and Sunday. */
export const DEFAULT_WEEKEND_DAYS: readonly number[] = Object.freeze([0, 6]);
/**
 * Farthest a roll looks for a business day, in days: an occurrence with none that close (a calendar of holidays
 * back to back for more than a month) is skipped.
 */
export const MAX_ROLL_DAYS = 31;

const DAY_MS = 86_400_000;

/**
 * Most groups of days `nextCalendarOccurrence` looks through before it answers that none is left: a schedule whose
 * every occurrence falls on days the calendar skips (a weekly job on a weekend day) would otherwise be searched to year
 * 9999. Each group is at least a day, so this is years of business days for any schedule that fires at all.
 */
export const MAX_CALENDAR_SCAN = 500;

/** A calendar prepared for lookups: local day numbers (days since 1970-01-01 in the calendar's zone) → business or not. */
type Days = { tz: string; weekend: ReadonlySet<number>; holidays: ReadonlySet<string> };
const prepared = new WeakMap<Calendar, Days>();

function daysOf(cal: Calendar): Days {
  let d = prepared.get(cal);
  if (d === undefined) {
    d = { tz: cal.timezone, weekend: new Set(cal.weekendDays), holidays: new Set(cal.holidays) };
    prepared.set(cal, d);
  }
  return d;
}

/** The local day number of day `n`'s date, as `YYYY-MM-DD`. */
const dateOfDay = (n: number): string => new Date(n * DAY_MS).toISOString().slice(0, 10);

/** Whether local day `n` (days since 1970-01-01 in the calendar's zone) is a business day: not a weekend day, not a holiday. */
function isBusiness(d: Days, n: number): boolean {
  const weekday = (((n + 4) % 7) + 7) % 7; // 1970-01-01 was a Thursday
  return !d.weekend.has(weekday) && !d.holidays.has(dateOfDay(n));
}

/** An instant's local day number and time of day (ms since local midnight) in `tz`. */
function localOf(t: number, tz: string): { day: number; timeMs: number } {
  const wall = t + zoneOffsetMs(t, tz);
  const day = Math.floor(wall / DAY_MS);
  return { day, timeMs: wall - day * DAY_MS };
}

/** The instant of local day `day` at `timeMs` past midnight in `tz` (DST rule of schedule.ts). */
const instantOf = (tz: string, day: number, timeMs: number): number => instantOfWallClock(tz, day * DAY_MS + timeMs);

/**
 * Whether the instant `t` (UTC epoch ms) falls on a business day of the calendar, in the calendar's time zone.
 */
export function isBusinessInstant(cal: Calendar, t: number): boolean {
  const d = daysOf(cal);
  return isBusiness(d, localOf(t, d.tz).day);
}

/**
 * Where an occurrence `t` (UTC epoch ms) fires under a calendar: itself on a business day; otherwise, for `next` /
 * `previous`, the same local time (in the calendar's zone) on the nearest business day after / before it, and for
 * `skip`, or when no business day is within MAX_ROLL_DAYS, null (it does not fire).
 */
export function rollOccurrence(cal: Calendar, roll: CalendarRoll, t: number): number | null {
  const d = daysOf(cal);
  const { day, timeMs } = localOf(t, d.tz);
  if (isBusiness(d, day)) return t;
  if (roll === 'skip') return null;
  const step = roll === 'next' ? 1 : -1;
  for (let k = 1; k <= MAX_ROLL_DAYS; k++) {
    if (isBusiness(d, day + k * step)) return instantOf(d.tz, day + k * step, timeMs);
  }
  return null;
}

/**
 * The first occurrence of `s` strictly after `afterMs` as the calendar makes it fire (UTC epoch ms), or null when
 * none is left: the least `rollOccurrence` of the schedule's occurrences that is after `afterMs`. Rolls can reorder
 * occurrences (Saturday 09:00 and Sunday 08:00 both move to Monday, 08:00 first) and merge them (an instant reached
 * twice fires once), so the search goes business day by business day: the occurrences that land on business day B are
 * those of B itself and of the non-business days that roll onto it (before B for `next`, after it for `previous`), and
 * on each of those days only the first occurrence past the bound matters. Cost: one `nextOccurrence` per day looked at,
 * over at most MAX_CALENDAR_SCAN groups of days (null beyond: the calendar leaves the schedule nothing to fire).
 * For `skip`, occurrences on non-business days are passed over (the planner still makes their `skipped` runs: see
 * src/domain/claim-plan.ts).
 * @throws Error as `nextOccurrence`
 */
export function nextCalendarOccurrence(s: Schedule, cal: Calendar, roll: CalendarRoll, afterMs: number): number | null {
  const d = daysOf(cal);
  const after = localOf(afterMs, d.tz);
  let t = nextOccurrence(s, roll === 'next' ? instantOf(d.tz, streakStart(d, after.day, -1), 0) - 1 : afterMs);
  for (let scanned = 0; t !== null && scanned < MAX_CALENDAR_SCAN; scanned++) {
    // The business day the occurrence t lands on, then the least occurrence landing on that day past `afterMs`.
    const landing = landingDay(d, roll, localOf(t, d.tz).day);
    if (landing !== null && landing >= after.day) {
      const best = firstLandingOn(s, d, roll, landing, landing === after.day ? after.timeMs : -1);
      if (best !== null) return best;
    }
    // Nothing lands on that day past the bound: go on from the end of the days that land there (or the day of t).
    const lastDay = landing === null ? localOf(t, d.tz).day : roll === 'previous' ? streakEnd(d, landing, 1) : landing;
    t = nextOccurrence(s, Math.max(t, instantOf(d.tz, lastDay + 1, 0) - 1));
  }
  return null;
}

/** The business day an occurrence on local day `day` lands on, or null (skipped). */
function landingDay(d: Days, roll: CalendarRoll, day: number): number | null {
  if (isBusiness(d, day)) return day;
  if (roll === 'skip') return null;
  const step = roll === 'next' ? 1 : -1;
  for (let k = 1; k <= MAX_ROLL_DAYS; k++) if (isBusiness(d, day + k * step)) return day + k * step;
  return null;
}

/** The first day of the run of non-business days that ends at `day` (going `dir` = -1 back), `day` itself when the day before is a business day. */
function streakStart(d: Days, day: number, dir: -1): number {
  let first = day;
  for (let k = 1; k <= MAX_ROLL_DAYS && !isBusiness(d, day + k * dir); k++) first = day + k * dir;
  return first;
}

/** The last non-business day after business day `day` (its `previous` streak), or `day` when the next day is a business day. */
function streakEnd(d: Days, day: number, dir: 1): number {
  let last = day;
  for (let k = 1; k <= MAX_ROLL_DAYS && !isBusiness(d, day + k * dir); k++) last = day + k * dir;
  return last;
}

/**
 * The least instant, on business day `landing`, of the occurrences that land there with a local time of day after
 * `afterTimeMs` (-1: any); null when none does.
 */
function firstLandingOn(s: Schedule, d: Days, roll: CalendarRoll, landing: number, afterTimeMs: number): number | null {
  const days = [landing];
  if (roll !== 'skip') {
    const step = roll === 'next' ? -1 : 1;
    for (let k = 1; k <= MAX_ROLL_DAYS && !isBusiness(d, landing + k * step); k++) days.push(landing + k * step);
  }
  let best: number | null = null;
  for (const day of days) {
    // The first occurrence on `day` past the time of day; later ones on that day land later on `landing`. From just
    // before the instant of that time of day: in a skipped interval (a DST gap) the instant is past the gap, where an
    // occurrence with a later local time may stand (Chatham's 02:45 is 03:45); one at the time of day itself is passed.
    const from = instantOf(d.tz, day, Math.max(0, afterTimeMs)) - 1;
    let t = nextOccurrence(s, from);
    while (t !== null && afterTimeMs >= 0) {
      const l = localOf(t, d.tz);
      if (l.day !== day || l.timeMs > afterTimeMs) break;
      t = nextOccurrence(s, t);
    }
    if (t === null) continue;
    const local = localOf(t, d.tz);
    if (local.day !== day || local.timeMs <= afterTimeMs) continue;
    if (day !== landing && landingDay(d, roll, day) !== landing) continue;
    const at = day === landing ? t : instantOf(d.tz, landing, local.timeMs);
    if (best === null || at < best) best = at;
  }
  return best;
}
