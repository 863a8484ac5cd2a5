/**
 * A time zone's offset from UTC at an instant, read from the runtime's IANA database through `Intl.DateTimeFormat`
 * (ECMA-402): pure and dependency-free, so the schedule arithmetic and the console's browser bundle share it.
 */

const wallClockFormats = new Map<string, Intl.DateTimeFormat>();
/** Formats kept per zone before the cache starts over (a zone is any string a request may name). */
const MAX_CACHED_ZONES = 1000;

/**
 * How far `zone`'s wall clock is ahead of UTC at the instant `ms` (ms since the epoch), in ms: the wall-clock time read
 * as UTC is `ms + offset` (to the second). `Europe/Paris` in January: 3,600,000.
 * @throws RangeError for a zone the runtime does not know (Intl's error)
 */
export function zoneOffsetMs(ms: number, zone: string): number {
  // The default zone of every schedule: no formatting needed (each formatToParts costs microseconds).
  if (zone === 'UTC') return 0;
  let f = wallClockFormats.get(zone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    if (wallClockFormats.size >= MAX_CACHED_ZONES) wallClockFormats.clear();
    wallClockFormats.set(zone, f);
  }
  const p: Partial<Record<Intl.DateTimeFormatPartTypes, number>> = {};
  for (const { type, value } of f.formatToParts(ms)) p[type] = Number(value);
  const wall = Date.UTC(p.year ?? NaN, (p.month ?? NaN) - 1, p.day, p.hour, p.minute, p.second);
  return wall - Math.floor(ms / 1000) * 1000;
}
