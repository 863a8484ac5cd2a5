/**
 * Calendars (src/domain/calendar.ts): where an occurrence fires under a calendar's roll, and the planner's "next
 * occurrence under a calendar" checked against a brute-force oracle (roll every occurrence of the schedule one by one,
 * sort, de-duplicate), for cron and union schedules in several zones, the calendar in another zone than the job.
 * Named cases: a holiday on a DST-change day, a roll that lands on another holiday and keeps rolling, `previous` across
 * a month boundary, a job in another zone rolling by the calendar's local dates.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Calendar,
  type CalendarRoll,
  isBusinessInstant,
  MAX_ROLL_DAYS,
  nextCalendarOccurrence,
  rollOccurrence,
} from '../../src/domain/calendar.ts';
import { nextOccurrence, normalizeSchedule, type Schedule } from '../../src/domain/schedule.ts';
import { DAY, HOUR, ZONES } from './cron-oracle.ts';

const iso = (t: number): string => new Date(t).toISOString();
const at = (s: string): number => Date.parse(s);

/** Every occurrence of `s` in (from, to], by `nextOccurrence`. */
function rawOccurrences(s: Schedule, from: number, to: number): number[] {
  const out: number[] = [];
  for (let t = nextOccurrence(s, from); t !== null && t <= to; t = nextOccurrence(s, t)) out.push(t);
  return out;
}

/** The most non-business days in a row within 60 days either side of the span (at most MAX_ROLL_DAYS), plus 2. */
function rollPadDays(cal: Calendar, from: number, to: number): number {
  let longest = 0;
  let run = 0;
  for (let t = from - 60 * DAY; t <= to + 60 * DAY; t += DAY) {
    run = isBusinessInstant(cal, t) ? 0 : run + 1;
    longest = Math.max(longest, run);
  }
  return Math.min(longest, MAX_ROLL_DAYS) + 2;
}

/** The oracle: every occurrence rolled on its own, those after `after` sorted and de-duplicated. */
function oracle(s: Schedule, cal: Calendar, roll: CalendarRoll, after: number, to: number): number[] {
  const pad = rollPadDays(cal, after, to) * DAY;
  const rolled = rawOccurrences(s, after - pad, to + pad)
    .map((t) => rollOccurrence(cal, roll, t))
    .filter((t): t is number => t !== null && t > after && t <= to);
  return [...new Set(rolled)].sort((a, b) => a - b);
}

/** The planner's chain from `after` up to `to`. */
function chain(s: Schedule, cal: Calendar, roll: CalendarRoll, after: number, to: number): number[] {
  const out: number[] = [];
  for (let t = nextCalendarOccurrence(s, cal, roll, after); t !== null && t <= to; t = nextCalendarOccurrence(s, cal, roll, t)) {
    out.push(t);
  }
  return out;
}

const SPAN_START = Date.UTC(2025, 0, 1);
const SPAN_END = Date.UTC(2028, 0, 1);
const zone = fc.constantFrom(...ZONES);
const roll = fc.constantFrom<CalendarRoll>('skip', 'next', 'previous');

/** Cron expressions that fire at most every few hours (so the oracle's enumeration stays small). */
const cronExpr = fc.oneof(
  fc.tuple(fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 23 })).map(([m, h]) => `${m} ${h} * * *`),
  fc
    .tuple(fc.integer({ min: 0, max: 59 }), fc.uniqueArray(fc.integer({ min: 0, max: 23 }), { minLength: 2, maxLength: 2 }))
    .map(([m, hours]) => `${m} ${hours.join(',')} * * *`),
  fc.tuple(fc.integer({ min: 0, max: 59 }), fc.integer({ min: 4, max: 12 })).map(([m, k]) => `${m} */${k} * * *`),
  fc
    .tuple(fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 6 }))
    .map(([m, h, d]) => `${m} ${h} * * ${d}`),
  fc
    .tuple(fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 1, max: 28 }))
    .map(([m, h, d]) => `${m} ${h} ${d} * *`),
  fc.tuple(fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 23 })).map(([s, m]) => `${s} ${m} 9 * * 1-5`),
);
const cron = fc.record({ expression: cronExpr, timezone: zone }).map((c) => ({ type: 'cron' as const, ...c }));
const schedule: fc.Arbitrary<Schedule> = fc.oneof(
  { weight: 3, arbitrary: cron },
  { weight: 1, arbitrary: fc.tuple(cron, cron).map(([a, b]) => ({ type: 'union' as const, schedules: [a, b] })) },
  {
    weight: 1,
    arbitrary: fc
      .record({ startAt: fc.integer({ min: SPAN_START, max: SPAN_END }), everyHours: fc.integer({ min: 5, max: 50 }) })
      .map((v) => ({ type: 'interval' as const, everyMs: v.everyHours * HOUR + 7 * 60_000, startAt: iso(v.startAt) })),
  },
);

/** A calendar: 0..3 weekend days, and holidays clustered around `near` (runs of up to a week, so rolls chain). */
const calendarNear = (near: number): fc.Arbitrary<Calendar> =>
  fc
    .record({
      timezone: zone,
      weekendDays: fc.uniqueArray(fc.integer({ min: 0, max: 6 }), { maxLength: 3 }),
      runs: fc.array(fc.record({ startDay: fc.integer({ min: -20, max: 60 }), length: fc.integer({ min: 1, max: 7 }) }), { maxLength: 6 }),
    })
    .map(({ timezone, weekendDays, runs }) => ({
      timezone,
      weekendDays,
      holidays: [
        ...new Set(runs.flatMap((r) => Array.from({ length: r.length }, (_, i) => iso(near + (r.startDay + i) * DAY).slice(0, 10)))),
      ],
    }));

describe('calendars: the next occurrence under a roll (property, against the brute-force oracle)', () => {
  it('every occurrence after `after`, rolled one by one, sorted and de-duplicated, is what the planner chains through', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: SPAN_START, max: SPAN_END })
          .chain((after) => fc.record({ after: fc.constant(after), cal: calendarNear(after), roll, schedule })),
        ({ after, cal, roll, schedule }) => {
          const s = normalizeSchedule(schedule, after);
          const to = after + 21 * DAY;
          expect(chain(s, cal, roll, after, to).map(iso)).toEqual(oracle(s, cal, roll, after, to).map(iso));
        },
      ),
      { numRuns: Number(process.env.CHIME_PROPERTY_RUNS ?? 60) },
    );
  });

  it('what fires is never on a non-business day, and `skip` fires exactly the business-day occurrences', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: SPAN_START, max: SPAN_END })
          .chain((after) => fc.record({ after: fc.constant(after), cal: calendarNear(after), schedule })),
        ({ after, cal, schedule }) => {
          const s = normalizeSchedule(schedule, after);
          const to = after + 14 * DAY;
          for (const r of ['next', 'previous', 'skip'] as const) {
            for (const t of chain(s, cal, r, after, to)) expect(isBusinessInstant(cal, t), `${r} ${iso(t)}`).toBe(true);
          }
          expect(chain(s, cal, 'skip', after, to)).toEqual(rawOccurrences(s, after, to).filter((t) => isBusinessInstant(cal, t)));
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('calendars: named cases', () => {
  const berlin = (holidays: string[]): Calendar => ({ timezone: 'Europe/Berlin', weekendDays: [0, 6], holidays });
  const daily = (expression: string, timezone = 'Europe/Berlin'): Schedule => ({ type: 'cron', expression, timezone });

  it('a holiday on a DST-change day: 29 March 2026 (Berlin springs forward) is a Sunday; a Monday-after-Easter holiday on 6 April; 25 Oct 2026 (falls back)', () => {
    // Daily 02:30 Berlin; 30 March 2026 is a holiday too: the Sunday 29 March (DST day, 02:30 does not exist: fires
    // 03:30 CEST) rolls with `next` over the Monday holiday to Tuesday 31 March 02:30 CEST.
    const cal = berlin(['2026-03-29', '2026-03-30']);
    const s = daily('30 2 * * *');
    const fri = at('2026-03-27T01:30:00Z'); // Friday 02:30 CET
    expect(iso(nextCalendarOccurrence(s, cal, 'next', fri)!)).toBe('2026-03-31T00:30:00.000Z'); // Tue 02:30 CEST
    // A move keeps the occurrence's local time, and Sunday's is 03:30 (02:30 does not exist that day): with `next` it
    // lands on Tuesday 03:30 CEST, after Tuesday's own 02:30 (onto which Saturday's and Monday's land, once).
    expect(chain(s, cal, 'next', fri, at('2026-03-31T12:00:00Z')).map(iso)).toEqual([
      '2026-03-31T00:30:00.000Z',
      '2026-03-31T01:30:00.000Z',
    ]);
    // `previous`: Saturday's and Monday's 02:30 roll back onto Friday 02:30 CET, which already fired; Sunday's 03:30
    // CEST onto Friday 03:30 CET, after it (found past a DST gap: the planner once missed it, Chatham's 02:45 too).
    expect(chain(s, cal, 'previous', fri, at('2026-03-31T12:00:00Z')).map(iso)).toEqual([
      '2026-03-27T02:30:00.000Z',
      '2026-03-31T00:30:00.000Z',
    ]);
    // A holiday on the fall-back day (Sunday 25 Oct 2026, on a calendar with a Sunday-only weekend... Saturday business):
    const oct = { timezone: 'Europe/Berlin', weekendDays: [0], holidays: ['2026-10-26'] };
    // Sat 24 Oct 02:30 CEST fires; the Sunday (fall back, 02:30 twice: the first) and the Monday holiday roll to Tuesday.
    expect(iso(nextCalendarOccurrence(s, oct, 'next', at('2026-10-23T00:30:00Z'))!)).toBe('2026-10-24T00:30:00.000Z');
    expect(iso(nextCalendarOccurrence(s, oct, 'next', at('2026-10-24T00:30:00Z'))!)).toBe('2026-10-27T01:30:00.000Z');
    expect(rollOccurrence(oct, 'previous', at('2026-10-25T00:30:00Z'))).toBe(at('2026-10-24T00:30:00Z'));
  });

  it('a roll that lands on another holiday keeps rolling: Christmas 2026 (Fri 25, Sat 26) rolls to Monday 28 December', () => {
    const cal = berlin(['2026-12-25', '2026-12-28']);
    expect(iso(rollOccurrence(cal, 'next', at('2026-12-25T08:00:00Z'))!)).toBe('2026-12-29T08:00:00.000Z');
    expect(iso(rollOccurrence(cal, 'previous', at('2026-12-28T08:00:00Z'))!)).toBe('2026-12-24T08:00:00.000Z');
    // The daily 09:00 job: Thursday 24th fires; 25th–28th all land on Tuesday 29th, once.
    const s = daily('0 9 * * *');
    expect(chain(s, cal, 'next', at('2026-12-23T08:00:00Z'), at('2026-12-31T00:00:00Z')).map(iso)).toEqual([
      '2026-12-24T08:00:00.000Z',
      '2026-12-29T08:00:00.000Z',
      '2026-12-30T08:00:00.000Z',
    ]);
  });

  it('`previous` across a month boundary: Monday 1 June 2026 (a holiday) fires on Friday 29 May', () => {
    const cal = berlin(['2026-06-01']);
    const s = daily('0 9 1 * *'); // monthly, on the 1st
    expect(iso(nextCalendarOccurrence(s, cal, 'previous', at('2026-05-02T00:00:00Z'))!)).toBe('2026-05-29T07:00:00.000Z');
    expect(iso(nextCalendarOccurrence(s, cal, 'next', at('2026-05-02T00:00:00Z'))!)).toBe('2026-06-02T07:00:00.000Z');
    expect(iso(nextCalendarOccurrence(s, cal, 'skip', at('2026-05-02T00:00:00Z'))!)).toBe('2026-07-01T07:00:00.000Z');
  });

  it('a job in another zone rolls by the calendar’s local dates', () => {
    // 23:00 in New York on Thursday 24 Dec 2026 is 05:00 on Friday 25 Dec in Berlin: a Berlin holiday.
    const cal = berlin(['2026-12-25']);
    const s = daily('0 23 * * *', 'America/New_York');
    const thu = at('2026-12-25T04:00:00Z');
    expect(isBusinessInstant(cal, thu)).toBe(false);
    // `next`: Fri 25 (holiday), Sat, Sun → Monday 28 Dec 05:00 Berlin time (04:00Z), the NY occurrence of Sunday 27th.
    expect(iso(rollOccurrence(cal, 'next', thu)!)).toBe('2026-12-28T04:00:00.000Z');
    expect(iso(nextCalendarOccurrence(s, cal, 'next', at('2026-12-24T04:00:00Z'))!)).toBe('2026-12-28T04:00:00.000Z');
  });

  it('a calendar with no business day within a month either way skips the occurrence', () => {
    const all = Array.from({ length: 80 }, (_, i) => iso(at('2026-07-01T00:00:00Z') + i * DAY).slice(0, 10));
    const cal = berlin(all);
    expect(rollOccurrence(cal, 'next', at('2026-08-05T08:00:00Z'))).toBeNull();
    expect(rollOccurrence(cal, 'previous', at('2026-08-05T08:00:00Z'))).toBeNull();
  });
});
