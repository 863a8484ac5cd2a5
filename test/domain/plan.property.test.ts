/**
 * The planner's arithmetic (src/domain/plan.ts, src/domain/schedule.ts) against brute-force oracles: a union's
 * occurrences are its members' merged and de-duplicated; `maxRuns` stops after exactly that many scheduled runs; the
 * jitter modes stay inside [occurrence, occurrence + jitterMs) and `random` differs per occurrence while being the same
 * on every evaluation; and a re-plan after a calendar change (`replanAfterMs`) neither repeats an occurrence already
 * fired nor loses one still ahead.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Calendar } from '../../src/domain/calendar.ts';
import { jitterOffset, type PlanRule, planAfter, replanAfterMs } from '../../src/domain/plan.ts';
import { nextOccurrence, normalizeSchedule, type Schedule, type UnionMember } from '../../src/domain/schedule.ts';
import { DAY, HOUR, ZONES } from './cron-oracle.ts';

const SPAN_START = Date.UTC(2025, 0, 1);
const SPAN_END = Date.UTC(2028, 0, 1);
const iso = (t: number): string => new Date(t).toISOString();

/** Occurrences of `s` in (after, to]. */
function chainOf(s: Schedule, after: number, to: number): number[] {
  const out: number[] = [];
  for (let t = nextOccurrence(s, after); t !== null && t <= to; t = nextOccurrence(s, t)) out.push(t);
  return out;
}

const member: fc.Arbitrary<UnionMember> = fc.oneof(
  fc
    .record({ m: fc.integer({ min: 0, max: 59 }), h: fc.integer({ min: 0, max: 23 }), tz: fc.constantFrom(...ZONES) })
    .map(({ m, h, tz }) => ({ type: 'cron' as const, expression: `${m} ${h} * * *`, timezone: tz })),
  fc
    .record({ s: fc.integer({ min: 0, max: 59 }), k: fc.integer({ min: 2, max: 9 }) })
    .map(({ s, k }) => ({ type: 'cron' as const, expression: `${s} 0 */${k} * * *` })),
  fc
    .record({ start: fc.integer({ min: SPAN_START, max: SPAN_END }), hours: fc.integer({ min: 1, max: 30 }) })
    .map(({ start, hours }) => ({ type: 'interval' as const, everyMs: hours * HOUR, startAt: iso(start) })),
  fc
    .uniqueArray(fc.integer({ min: 0, max: 40 * 24 }), { minLength: 1, maxLength: 20 })
    .map((hours) => ({ type: 'dates' as const, dates: hours.map((h) => iso(SPAN_START + 500 * DAY + h * HOUR)) })),
);

describe('unions (property, against a merge of the members)', () => {
  it('occurrences are the members’ merged in order, an instant two members share firing once', () => {
    fc.assert(
      fc.property(fc.array(member, { minLength: 2, maxLength: 4 }), fc.integer({ min: SPAN_START, max: SPAN_END }), (members, after) => {
        const union = normalizeSchedule({ type: 'union', schedules: members }, SPAN_START) as Schedule;
        const to = after + 20 * DAY;
        const merged = [...new Set((union as { schedules: Schedule[] }).schedules.flatMap((m) => chainOf(m, after, to)))].sort(
          (a, b) => a - b,
        );
        expect(chainOf(union, after, to).map(iso)).toEqual(merged.map(iso));
      }),
      { numRuns: 80 },
    );
  });

  it('a union of a schedule with itself fires exactly as the schedule does', () => {
    const s: UnionMember = { type: 'cron', expression: '0 9 * * 1-5', timezone: 'Europe/Berlin' };
    const after = Date.UTC(2026, 2, 1);
    expect(chainOf({ type: 'union', schedules: [s, s] }, after, after + 30 * DAY)).toEqual(chainOf(s, after, after + 30 * DAY));
  });
});

const rule = (o: Partial<PlanRule> & { schedule: Schedule }): PlanRule => ({
  jobId: '0190e6a0-0000-7000-8000-000000000001',
  calendar: null,
  roll: null,
  jitterMs: 0,
  jitterMode: 'stable',
  maxRuns: null,
  scheduledRuns: 0,
  ...o,
});

describe('maxRuns (property, against counting)', () => {
  it('the claims plan exactly maxRuns scheduled runs, the schedule’s first maxRuns occurrences, then none', () => {
    fc.assert(
      fc.property(member, fc.integer({ min: 1, max: 12 }), fc.integer({ min: SPAN_START, max: SPAN_END }), (m, maxRuns, after) => {
        const schedule = normalizeSchedule(m, SPAN_START);
        const planned: number[] = [];
        // Registration plans the first (0 made so far); each claim of a scheduled run plans the next with one more made.
        let next = planAfter(rule({ schedule, maxRuns, scheduledRuns: 0 }), after);
        while (next !== null && planned.length < 100) {
          planned.push(next.occurrenceMs);
          next = planAfter(rule({ schedule, maxRuns, scheduledRuns: planned.length }), next.occurrenceMs);
        }
        const expected: number[] = [];
        for (let t = nextOccurrence(schedule, after); t !== null && expected.length < maxRuns; t = nextOccurrence(schedule, t)) {
          expected.push(t);
        }
        expect(planned).toEqual(expected);
      }),
      { numRuns: 150 },
    );
  });
});

describe('jitter modes (property)', () => {
  it('every offset is in [0, jitterMs); random is the same on every evaluation and not one offset for all occurrences', () => {
    fc.assert(
      fc.property(
        fc.uuid(),
        fc.integer({ min: 1, max: 86_400_000 }),
        fc.array(fc.integer({ min: SPAN_START, max: SPAN_END }), { minLength: 1, maxLength: 20 }),
        (jobId, jitterMs, occurrences) => {
          for (const mode of ['stable', 'random', 'spread'] as const) {
            for (const t of occurrences) {
              const o = jitterOffset({ jobId, jitterMs, jitterMode: mode }, t);
              expect(o).toBeGreaterThanOrEqual(0);
              expect(o).toBeLessThan(jitterMs);
              expect(jitterOffset({ jobId, jitterMs, jitterMode: mode }, t)).toBe(o);
            }
          }
        },
      ),
    );
    // Over a year of hourly occurrences, `random` takes many offsets; `stable` one.
    const hours = Array.from({ length: 24 * 365 }, (_, i) => SPAN_START + i * HOUR);
    const id = '0190e6a0-0000-7000-8000-00000000abcd';
    expect(new Set(hours.map((t) => jitterOffset({ jobId: id, jitterMs: 60_000, jitterMode: 'random' }, t))).size).toBeGreaterThan(5000);
    expect(new Set(hours.map((t) => jitterOffset({ jobId: id, jitterMs: 60_000, jitterMode: 'stable' }, t))).size).toBe(1);
  });
});

describe('re-plan after a calendar change (property): no occurrence lost or fired twice', () => {
  const calendarOf = (holidays: number[], weekendDays: number[]): Calendar => ({
    timezone: 'Europe/Berlin',
    weekendDays,
    holidays: holidays.map((d) => iso(SPAN_START + 400 * DAY + d * DAY).slice(0, 10)),
  });
  const holidays = fc.uniqueArray(fc.integer({ min: 0, max: 60 }), { maxLength: 15 });
  const weekend = fc.uniqueArray(fc.integer({ min: 0, max: 6 }), { maxLength: 2 });

  it('fired = the old calendar’s occurrences up to the change, then the new one’s after it, strictly increasing', () => {
    fc.assert(
      fc.property(
        holidays,
        weekend,
        holidays,
        weekend,
        fc.constantFrom('next', 'previous', 'skip' as const),
        fc.integer({ min: 5, max: 40 }),
        fc.integer({ min: 0, max: 3 * DAY }),
        (h1, w1, h2, w2, roll, changeDay, lag) => {
          const schedule: Schedule = { type: 'cron', expression: '30 8,17 * * *', timezone: 'America/New_York' };
          const before = rule({ schedule, calendar: calendarOf(h1, w1), roll });
          const after = rule({ schedule, calendar: calendarOf(h2, w2), roll });
          const start = SPAN_START + 400 * DAY;
          const change = start + changeDay * DAY + 7 * HOUR;
          // Dispatchers may lag: everything due by `change - lag` has been claimed when the calendar changes.
          const claimedBy = change - lag;
          const fired: number[] = [];
          let pending = planAfter(before, start)!;
          while (pending.occurrenceMs <= claimedBy) {
            fired.push(pending.occurrenceMs);
            pending = planAfter(before, pending.occurrenceMs)!;
          }
          const last = fired.length > 0 ? fired[fired.length - 1]! : null;
          const from = replanAfterMs(last, pending.occurrenceMs, change);
          for (let p = planAfter(after, from); p !== null && p.occurrenceMs <= change + 30 * DAY; p = planAfter(after, p.occurrenceMs)) {
            fired.push(p.occurrenceMs);
          }
          // Strictly increasing: nothing fired twice.
          for (let i = 1; i < fired.length; i++) expect(fired[i]!).toBeGreaterThan(fired[i - 1]!);
          // Nothing lost: every occurrence of the new calendar after the change (and after the last fired) fired.
          const owed: number[] = [];
          for (
            let p = planAfter(after, Math.max(change, last ?? -Infinity));
            p !== null && p.occurrenceMs <= change + 30 * DAY;
            p = planAfter(after, p.occurrenceMs)
          ) {
            owed.push(p.occurrenceMs);
          }
          for (const t of owed) expect(fired).toContain(t);
        },
      ),
      { numRuns: 60 },
    );
  });
});
