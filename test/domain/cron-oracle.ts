/**
 * Test-only helpers for the schedule tests: UTC offsets and DST transitions read from Intl independently of
 * src/domain/schedule.ts, a generator of 5-field cron expressions both cron-parser and croner read the same way,
 * and a reference implementation of the daylight-saving rule in schedule.ts's header, built on croner.
 */
import { Cron } from 'croner';
import fc from 'fast-check';

export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

/** The zones the property tests cover: no DST, whole-hour DST, 30-minute DST, and DST at :45 local time. */
export const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'Pacific/Chatham'] as const;
export type Zone = (typeof ZONES)[number];

/** The span of instants the generators draw from (and transitions are precomputed for). */
export const SPAN_START = Date.UTC(2024, 0, 1);
export const SPAN_END = Date.UTC(2031, 0, 1);

const offsetFormats = new Map<string, Intl.DateTimeFormat>();

/** Offset of `tz` from UTC at instant `t` in ms, from Intl's `longOffset` name ("GMT+05:30"). */
export function offsetMs(tz: string, t: number): number {
  let f = offsetFormats.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, timeZoneName: 'longOffset' });
    offsetFormats.set(tz, f);
  }
  const name = f.formatToParts(t).find((p) => p.type === 'timeZoneName')?.value ?? '';
  const m = /^GMT(?:([+-])(\d\d):(\d\d))?$/.exec(name);
  if (!m) throw new Error(`unexpected offset name ${name}`);
  if (!m[1]) return 0;
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) * MINUTE;
}

/** An offset change: from `at` on (UTC epoch ms) the offset is `after` instead of `before`. */
export type Transition = { at: number; before: number; after: number };

const transitionCache = new Map<string, Transition[]>();

/** The offset changes of `tz` within [SPAN_START − 1 year, SPAN_END + 1 year], found by a daily scan and bisection. */
export function transitionsOf(tz: string): Transition[] {
  const cached = transitionCache.get(tz);
  if (cached) return cached;
  const out: Transition[] = [];
  for (let t = SPAN_START - 366 * DAY; t < SPAN_END + 366 * DAY; t += DAY) {
    const before = offsetMs(tz, t);
    const after = offsetMs(tz, t + DAY);
    if (before === after) continue;
    let lo = t; // offset `before`
    let hi = t + DAY; // offset `after`
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (offsetMs(tz, mid) === before) lo = mid;
      else hi = mid;
    }
    out.push({ at: hi, before, after });
  }
  transitionCache.set(tz, out);
  return out;
}

/** Reads a UTC epoch ms value as a wall-clock time: "2026-03-29 02:30". */
export function wallString(wall: number): string {
  return new Date(wall).toISOString().slice(0, 16).replace('T', ' ');
}

/** An instant as the wall-clock time of `tz`, as UTC epoch ms of the same reading. */
export function wallOf(tz: string, t: number): number {
  return t + offsetMs(tz, t);
}

// ---------------------------------------------------------------------------------------------------------------
// Cron expressions

/** One generated field: its text and the values it names. */
export type GenField = { text: string; values: number[] };

function range(a: number, b: number, step = 1): number[] {
  const out: number[] = [];
  for (let v = a; v <= b; v += step) out.push(v);
  return out;
}

/**
 * A cron field over [min, max] in the forms both libraries read alike: `*`, `*` with a step, `a`, `a,b,c`, `a-b`,
 * `a-b/s` (steps no larger than the range, which croner refuses).
 */
export function fieldArb(min: number, max: number): fc.Arbitrary<GenField> {
  const span = max - min;
  return fc.oneof(
    fc.constant({ text: '*', values: range(min, max) }),
    fc.integer({ min: 1, max: Math.min(30, span) }).map((s) => ({ text: `*/${s}`, values: range(min, max, s) })),
    fc.integer({ min, max }).map((v) => ({ text: String(v), values: [v] })),
    fc
      .uniqueArray(fc.integer({ min, max }), { minLength: 2, maxLength: 4 })
      .map((a) => ({ text: a.join(','), values: [...a].sort((x, y) => x - y) })),
    fc
      .tuple(fc.integer({ min, max }), fc.integer({ min, max }))
      .map(([a, b]) => [Math.min(a, b), Math.max(a, b)] as const)
      .map(([a, b]) => ({ text: `${a}-${b}`, values: range(a, b) })),
    fc
      .tuple(fc.integer({ min, max }), fc.integer({ min, max }), fc.integer({ min: 1, max: 10 }))
      .map(([a, b, s]) => [Math.min(a, b), Math.max(a, b), s] as const)
      .map(([a, b, s]) => {
        const step = Math.min(s, Math.max(1, b - a));
        return { text: `${a}-${b}/${step}`, values: range(a, b, step) };
      }),
  );
}

/** A generated expression with the hours it names (to know whether it names every hour). */
export type GenCron = { expression: string; hours: number[] };

/**
 * 5-field expressions (6 with `seconds`, seconds first): minutes, hours, days of month 1-28, months, weekdays 0-6. Day of month and day of week are
 * never both restricted unless `domAndDow` (cron's OR rule for that case is tested on its own).
 */
export function cronArb(opts: { frequent?: boolean; domAndDow?: boolean; seconds?: boolean } = {}): fc.Arbitrary<GenCron> {
  const star: fc.Arbitrary<GenField> = fc.constant({ text: '*', values: [] });
  // `frequent` leaves the calendar fields alone so that runs near a DST change are actually exercised.
  const day = opts.frequent ? star : fieldArb(1, 28);
  const month = opts.frequent ? star : fieldArb(1, 12);
  const weekday = opts.frequent ? star : fieldArb(0, 6);
  return fc
    .record({ second: fieldArb(0, 59), minute: fieldArb(0, 59), hour: fieldArb(0, 23), day, month, weekday, which: fc.nat(2) })
    .map(({ second, minute, hour, day, month, weekday, which }) => {
      // which: 0 restricts neither day field, 1 day of month only, 2 day of week only (both with domAndDow).
      const dom = opts.domAndDow || which === 1 ? day.text : '*';
      const dow = opts.domAndDow || which === 2 ? weekday.text : '*';
      const seconds = opts.seconds ? `${second.text} ` : '';
      return { expression: `${seconds}${minute.text} ${hour.text} ${dom} ${month.text} ${dow}`, hours: hour.values };
    });
}

// ---------------------------------------------------------------------------------------------------------------
// Reference implementation of schedule.ts's daylight-saving rule

/**
 * The instants at which the wall-clock time `wall` fires in `tz` under the documented rule: skipped → the same
 * offset past the gap; repeated → first instance only, or both when the expression names every hour.
 */
export function referenceFirings(tz: string, wall: number, everyHour: boolean): number[] {
  for (const tr of transitionsOf(tz)) {
    const lo = tr.at + Math.min(tr.before, tr.after);
    const hi = tr.at + Math.max(tr.before, tr.after);
    if (wall < lo || wall >= hi) continue;
    if (tr.after > tr.before) return [wall - tr.before]; // skipped interval
    return everyHour ? [wall - tr.before, wall - tr.after] : [wall - tr.before]; // repeated interval
  }
  const o = offsetMs(tz, wall - offsetMs(tz, wall));
  if (offsetMs(tz, wall - o) !== o) throw new Error(`reference: no offset for ${wallString(wall)} in ${tz}`);
  return [wall - o];
}

/**
 * The first firing strictly after `afterMs` under the documented rule: croner, run in UTC, lists the wall-clock
 * times the expression matches, and `referenceFirings` maps them to instants. Assumes offset changes of at most 1 h.
 */
export function referenceNextCron(gen: GenCron, tz: string, afterMs: number): number | null {
  const wallMatcher = new Cron(gen.expression, { timezone: 'UTC' });
  const everyHour = new Set(gen.hours).size === 24;
  let best = Infinity;
  let next = wallMatcher.nextRun(new Date(wallOf(tz, afterMs) - 2 * HOUR));
  while (next !== null) {
    const wall = next.getTime();
    if (best !== Infinity && wall > wallOf(tz, best) + 2 * HOUR) break;
    for (const t of referenceFirings(tz, wall, everyHour)) if (t > afterMs && t < best) best = t;
    next = wallMatcher.nextRun(next);
  }
  return best === Infinity ? null : best;
}

/** croner's next run strictly after `afterMs` in `tz`. */
export function cronerNext(expression: string, tz: string, afterMs: number): number | null {
  return new Cron(expression, { timezone: tz }).nextRun(new Date(afterMs))?.getTime() ?? null;
}

/**
 * True when `t` falls where croner legitimately departs from the documented rule: inside the window
 * [change, change + |shift|) of an offset change, i.e. among the instants that fire skipped local times (which
 * croner runs when the gap ends, or skips) or repeat local times (which croner runs again when asked from inside
 * the second pass).
 */
export function inDstWindow(tz: string, t: number): boolean {
  return transitionsOf(tz).some((tr) => t >= tr.at && t < tr.at + Math.abs(tr.after - tr.before));
}
