/**
 * A calendar's days as the previews show them (pure, Intl only): why an occurrence is not on a business day of a
 * calendar (a holiday, a weekend day, in the calendar's own time zone), and the lines of a previewed list of
 * occurrences with what the calendar moved or skipped.
 */
import type { Calendar, CalendarMove } from '../types.ts';

/** The calendar facts the reasons need. */
export type CalendarDays = Pick<Calendar, 'timezone' | 'weekendDays' | 'holidays'>;

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
export const WEEKDAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'] as const;

/** The local date (`YYYY-MM-DD`) and weekday (0 = Sunday) of `iso` on `zone`'s wall clock. */
export function localDay(iso: string, zone: string): { date: string; weekday: number } {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    weekday: 'short',
  }).formatToParts(new Date(iso));
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  return { date: `${part('year')}-${part('month')}-${part('day')}`, weekday: WEEKDAYS.indexOf(part('weekday')) };
}

/**
 * Why `iso` is not a business day of `calendar`: "holiday", "weekend: Saturday"; null when it is one (or the zone is
 * unknown to this browser).
 */
export function nonBusinessReason(iso: string, calendar: CalendarDays): string | null {
  let day: { date: string; weekday: number };
  try {
    day = localDay(iso, calendar.timezone);
  } catch {
    return null;
  }
  if (calendar.holidays.includes(day.date)) return 'holiday';
  if (calendar.weekendDays.includes(day.weekday)) return `weekend: ${WEEKDAY_NAMES[day.weekday]}`;
  return null;
}

/**
 * One line of a previewed list: a firing time (with the occurrences the calendar moved onto it, if any), or an
 * occurrence the calendar skipped.
 */
export type OccurrenceLine = { kind: 'fires'; at: string; from: string[] } | { kind: 'skipped'; at: string };

/**
 * The lines of a preview: each of `occurrences` (the firing times, the calendar applied), the occurrences `moves` moved
 * beside the time they fire at, and those it skipped, in time order. A move to a time past the last occurrence listed
 * is left out (its line would be beyond the list).
 */
export function occurrenceLines(occurrences: readonly string[], moves: readonly CalendarMove[] = []): OccurrenceLine[] {
  const ms = (iso: string) => Date.parse(iso);
  const last = occurrences.length ? Math.max(...occurrences.map(ms)) : Number.POSITIVE_INFINITY;
  const fires = new Map<number, { kind: 'fires'; at: string; from: string[] }>();
  for (const at of occurrences) if (!fires.has(ms(at))) fires.set(ms(at), { kind: 'fires', at, from: [] });
  const lines: OccurrenceLine[] = [];
  for (const m of moves) {
    if (m.firesAt === null) {
      lines.push({ kind: 'skipped', at: m.occurrence });
      continue;
    }
    const t = ms(m.firesAt);
    if (t > last) continue;
    let line = fires.get(t);
    if (!line) {
      line = { kind: 'fires', at: m.firesAt, from: [] };
      fires.set(t, line);
    }
    line.from.push(m.occurrence);
  }
  for (const line of fires.values()) line.from.sort((a, b) => ms(a) - ms(b));
  return [...fires.values(), ...lines].sort((a, b) => ms(a.at) - ms(b.at));
}
