/**
 * Time zones for the console: the viewer's zone, the IANA names a picker offers, and wall-clock times in a named zone
 * both ways. Pure (Intl only), so the job form's model and its unit tests use it outside a browser.
 *
 * Why a rename table: ICU, and so `Intl` in Chromium and Node, still reports some zones under the spelling CLDR froze
 * years ago (`Asia/Calcutta`, `Europe/Kiev`) while the IANA database and users know the current one (`Asia/Kolkata`,
 * `Europe/Kyiv`). Both spellings are accepted by `Intl` (so by the API's check); the console shows the current one.
 */

import { zoneOffsetMs } from '../../domain/zone-offset.ts';

/** Old spellings `Intl.supportedValuesOf('timeZone')` reports, mapped to the current IANA names (tzdata `backward`). */
export const RENAMED_ZONES: Readonly<Record<string, string>> = Object.freeze({
  'Africa/Asmera': 'Africa/Asmara',
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Catamarca': 'America/Argentina/Catamarca',
  'America/Coral_Harbour': 'America/Atikokan',
  'America/Cordoba': 'America/Argentina/Cordoba',
  'America/Godthab': 'America/Nuuk',
  'America/Indianapolis': 'America/Indiana/Indianapolis',
  'America/Jujuy': 'America/Argentina/Jujuy',
  'America/Louisville': 'America/Kentucky/Louisville',
  'America/Mendoza': 'America/Argentina/Mendoza',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh',
  'Atlantic/Faeroe': 'Atlantic/Faroe',
  'Europe/Kiev': 'Europe/Kyiv',
  'Pacific/Enderbury': 'Pacific/Kanton',
  'Pacific/Ponape': 'Pacific/Pohnpei',
  'Pacific/Truk': 'Pacific/Chuuk',
});

/** The current IANA name of `zone` (`Asia/Calcutta` → `Asia/Kolkata`); any other name as it is. */
export function currentZoneName(zone: string): string {
  return RENAMED_ZONES[zone] ?? zone;
}

/** The viewer's own IANA time zone (the browser's, by its current name); `UTC` when the browser names none. */
export function viewerZone(): string {
  try {
    return currentZoneName(Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC');
  } catch {
    return 'UTC';
  }
}

/** `UTC`, then every zone `Intl` knows by its current name, sorted; `keep` (a stored job's zone) added when missing. */
export function zoneChoices(keep?: string): string[] {
  let known: string[] = [];
  try {
    known = Intl.supportedValuesOf('timeZone');
  } catch {
    known = [];
  }
  const names = new Set(known.map(currentZoneName));
  names.delete('UTC');
  const all = ['UTC', ...[...names].sort()];
  if (keep && !all.includes(keep)) all.push(keep);
  return all;
}

/** Whether two zone names are the same zone (one may be an old spelling of the other). */
export function sameZone(a: string, b: string): boolean {
  return currentZoneName(a) === currentZoneName(b);
}

/** The zone's offset from UTC at an instant (shared with the schedule arithmetic: domain/zone-offset.ts). */
export { zoneOffsetMs };

/** A wall-clock time (month 1-12), as typed. */
export type WallTime = { year: number; month: number; day: number; hour: number; minute: number; second: number; ms: number };

/**
 * The instant a wall-clock time of `zone` names, in ms since the epoch. A time the clocks skip (a spring-forward gap)
 * is read as `Date` reads it, after the change; a time that happens twice (fall back) as the earlier one.
 */
export function instantOfWallTime(t: WallTime, zone: string): number {
  const asUtc = Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second, t.ms);
  const before = zoneOffsetMs(asUtc, zone);
  const first = asUtc - before;
  if (zoneOffsetMs(first, zone) === before) return first;
  const after = zoneOffsetMs(first, zone);
  const second = asUtc - after;
  return zoneOffsetMs(second, zone) === after ? second : first;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** An instant as a `datetime-local` value on `zone`'s wall clock, to the minute (`2026-12-01T09:00`); '' when unreadable. */
export function wallInputOf(iso: string | undefined | null, zone: string): string {
  if (!iso) return '';
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return '';
  const wall = new Date(ms + zoneOffsetMs(ms, zone)); // the zone's wall clock, read through the UTC getters
  return `${pad(wall.getUTCFullYear(), 4)}-${pad(wall.getUTCMonth() + 1)}-${pad(wall.getUTCDate())}T${pad(wall.getUTCHours())}:${pad(wall.getUTCMinutes())}`;
}

/**
 * A `datetime-local` value (`2026-12-01T09:00`, seconds optional) on `zone`'s wall clock as a UTC ISO instant; ''
 * for '' or a value that is not a time.
 */
export function isoOfWallInput(value: string, zone: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(value.trim());
  if (!m) return '';
  const [year, month, day, hour, minute, second] = m.slice(1).map((x) => Number(x ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return new Date(instantOfWallTime({ year, month, day, hour, minute, second, ms: 0 }, zone)).toISOString();
}

/** An instant with the date, the time to the second and the zone's short name: "Jan 5, 2026, 12:00:00 AM PST". */
export function formatInstant(iso: string, zone?: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'long', ...(zone ? { timeZone: zone } : {}) });
}

/** An instant, short, with the zone's short name: "Jan 5, 2026, 12:00 AM PST". */
export function formatInstantShort(iso: string, zone?: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: 'numeric',
    minute: '2-digit',
    timeZoneName: 'short',
    ...(zone ? { timeZone: zone } : {}),
  });
}

/** An instant on `zone`'s wall clock followed by the zone's IANA name: "Jan 5, 2026, 9:00:00 AM Europe/Paris". */
export function formatInZone(iso: string, zone: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium', timeZone: zone })} ${currentZoneName(zone)}`;
}
