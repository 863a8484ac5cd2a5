/**
 * `Retry-After` (RFC 9110 §10.2.3), read the same way by the client's retries and by Chime's dispatcher
 * (src/domain/retry.ts re-exports it): self-contained, no imports.
 */

/**
 * Parses an HTTP `Retry-After` value (RFC 9110 §10.2.3): delay-seconds or an HTTP-date (§5.6.7: IMF-fixdate, or the
 * obsolete RFC 850 and asctime forms; always GMT).
 * @param nowMs the reader's now, epoch ms (default `Date.now()`)
 * @returns milliseconds from `nowMs` (0 for a date in the past), or null when absent or unparseable (`1.5`, `soon`)
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number = Date.now()): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = parseHttpDate(v, nowMs);
  return t === null ? null : Math.max(0, t - nowMs);
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const MON = '(?<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '(?<hh>\\d\\d):(?<mm>\\d\\d):(?<ss>\\d\\d)';
// Date.parse is no help here: it takes "1.5" or "soon 1" for dates in 2001 and reads asctime as local time.
const HTTP_DATES = [
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (?<day>\\d\\d) ${MON} (?<year>\\d{4}) ${TIME} GMT$`, // IMF-fixdate
  `^(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, (?<day>\\d\\d)-${MON}-(?<year>\\d\\d) ${TIME} GMT$`, // RFC 850
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MON} (?<day>[ \\d]\\d) ${TIME} (?<year>\\d{4})$`, // asctime
].map((re) => new RegExp(re, 'i'));

/** An RFC 9110 HTTP-date as UTC epoch ms, or null when `v` is none or names no real time. */
function parseHttpDate(v: string, nowMs: number): number | null {
  let g: Record<string, string | undefined> | undefined;
  for (const re of HTTP_DATES) if ((g = re.exec(v)?.groups)) break;
  if (g === undefined) return null;
  const [day, hh, mm, ss] = [g.day, g.hh, g.mm, g.ss].map(Number) as [number, number, number, number];
  let year = Number(g.year);
  if (g.year?.length === 2) {
    // A two-digit year more than 50 years ahead is the most recent past year with those digits (§5.6.7).
    const thisYear = new Date(nowMs).getUTCFullYear();
    year += thisYear - (thisYear % 100);
    if (year > thisYear + 50) year -= 100;
  }
  const d = new Date(Date.UTC(2000, MONTHS.indexOf(g.mon?.toLowerCase() ?? ''), day, hh, mm, ss));
  d.setUTCFullYear(year); // Date.UTC would read years below 100 as 19xx
  // Out-of-range fields (31 Apr, 24:00, :60) roll over; refuse them.
  const exact = d.getUTCDate() === day && d.getUTCHours() === hh;
  return exact && d.getUTCMinutes() === mm && d.getUTCSeconds() === ss ? d.getTime() : null;
}
