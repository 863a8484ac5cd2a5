/**
 * A calendar's holidays as the calendars page edits them (pure): local dates `YYYY-MM-DD`, kept sorted and distinct;
 * many read at once from pasted text, one a line.
 */

/** Most holidays in one calendar (src/domain/calendar.ts `MAX_HOLIDAYS`). */
export { MAX_HOLIDAYS } from '../../../domain/calendar.ts';

const LOCAL_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Whether `text` is a date of the calendar (`2026-12-25`; not `2026-02-30`). */
export function isLocalDate(text: string): boolean {
  const m = LOCAL_DATE.exec(text);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const probe = new Date(Date.UTC(year, month - 1, day));
  return probe.getUTCFullYear() === year && probe.getUTCMonth() === month - 1 && probe.getUTCDate() === day;
}

/** `list` and `more` as one sorted list without duplicates. */
export function mergeHolidays(list: readonly string[], more: readonly string[]): string[] {
  return [...new Set([...list, ...more])].sort();
}

/**
 * The dates of pasted text, one a line (blank lines ignored, spaces trimmed), and the lines that are not dates.
 * @returns the dates read, and each unreadable line as `line n: "text"`
 */
export function readHolidays(text: string): { dates: string[]; bad: string[] } {
  const dates: string[] = [];
  const bad: string[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    if (isLocalDate(line)) dates.push(line);
    else bad.push(`line ${i + 1}: "${line}"`);
  });
  return { dates, bad };
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

/** The weekday of a local date, short ("Fri"). */
export function weekdayOf(date: string): string {
  return WEEKDAYS[new Date(`${date}T00:00:00Z`).getUTCDay()] ?? '';
}
