/**
 * Property tests for src/domain/schedule.ts: every schedule kind after `normalizeSchedule`, and cron evaluation
 * checked against croner (an independent cron implementation) and against a reference implementation of the
 * daylight-saving rule in schedule.ts's header (test/domain/cron-oracle.ts).
 *
 * Where croner and Chime legitimately disagree (documented in cron-oracle.ts `inDstWindow`):
 * - a local time in a skipped interval: Chime fires it at the same offset past the gap (03:30 for 02:30 when clocks
 *   go 02:00 → 03:00); croner fires it when the gap ends (03:00), or not at all when a later time of the same
 *   expression follows in that hour;
 * - a local time in a repeated interval: Chime fires it once, at its first instance (both instances only when the
 *   hour field names every hour); croner, asked for the next run from inside the second pass, fires it again.
 * Outside those windows the two must agree exactly; inside them Chime must match the reference rule.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MAX_DATES,
  MIN_INTERVAL_MS,
  nextOccurrence,
  normalizeSchedule,
  occurrences,
  type Schedule,
  scheduleIssues,
} from '../../src/domain/schedule.ts';
import {
  cronArb,
  cronerNext,
  DAY,
  type GenCron,
  HOUR,
  inDstWindow,
  MINUTE,
  offsetMs,
  referenceNextCron,
  SPAN_END,
  SPAN_START,
  transitionsOf,
  wallOf,
  wallString,
  ZONES,
} from './cron-oracle.ts';

const instant = fc.integer({ min: SPAN_START, max: SPAN_END });
const zone = fc.constantFrom(...ZONES);
const iso = (t: number): string => new Date(t).toISOString();

/** The same instant written as RFC 3339 with an arbitrary UTC offset (normalization must not care). */
function rfc3339(t: number, offsetMinutes: number): string {
  const local = new Date(t + offsetMinutes * MINUTE).toISOString().slice(0, 23);
  const a = Math.abs(offsetMinutes);
  const hh = String(Math.floor(a / 60)).padStart(2, '0');
  const mm = String(a % 60).padStart(2, '0');
  return `${local}${offsetMinutes < 0 ? '-' : '+'}${hh}:${mm}`;
}
const offsetMinutes = fc.integer({ min: -14 * 60, max: 14 * 60 });

/**
 * What every schedule owes: `occurrences` are strictly increasing, each strictly after the previous (the first
 * after `after`), each is what `nextOccurrence` returns from the previous one, and all lie within [start, end].
 */
function checkChain(s: Schedule, after: number, count: number, start = -Infinity, end = Infinity): number[] {
  const occ = occurrences(s, after, count);
  expect(occ.length).toBeLessThanOrEqual(count);
  let prev = after;
  for (const t of occ) {
    expect(t).toBeGreaterThan(prev);
    expect(nextOccurrence(s, prev)).toBe(t);
    expect(t).toBeGreaterThanOrEqual(start);
    expect(t).toBeLessThanOrEqual(end);
    prev = t;
  }
  // Fewer than asked for means the schedule has run out.
  if (occ.length < count) expect(nextOccurrence(s, prev)).toBeNull();
  return occ;
}

describe('once', () => {
  it('fires exactly at `at`, only when `at` is strictly after the query time', () => {
    fc.assert(
      fc.property(instant, offsetMinutes, instant, (at, off, t) => {
        const s = normalizeSchedule({ type: 'once', at: rfc3339(at, off) }, SPAN_START);
        expect(s).toEqual({ type: 'once', at: iso(at) });
        expect(nextOccurrence(s, t)).toBe(at > t ? at : null);
        expect(nextOccurrence(s, at)).toBeNull();
        expect(nextOccurrence(s, at - 1)).toBe(at);
        expect(checkChain(s, t, 3)).toEqual(at > t ? [at] : []);
      }),
    );
  });
});

describe('delay', () => {
  it('fires once, delayMs after registration, strictly after the query time', () => {
    fc.assert(
      fc.property(instant, fc.integer({ min: 0, max: 30 * DAY }), instant, (now, delayMs, t) => {
        const s = normalizeSchedule({ type: 'delay', delayMs }, now);
        expect(s).toEqual({ type: 'delay', delayMs, at: iso(now + delayMs) });
        expect(nextOccurrence(s, now - 1)).toBe(now + delayMs);
        expect(nextOccurrence(s, t)).toBe(now + delayMs > t ? now + delayMs : null);
        expect(checkChain(s, t, 3)).toEqual(now + delayMs > t ? [now + delayMs] : []);
        expect(scheduleIssues({ type: 'delay', delayMs }, now)).toEqual([]);
      }),
    );
  });
});

describe('interval', () => {
  const intervalCase = fc.record({
    now: instant,
    start: fc.option(instant, { nil: undefined }),
    everyMs: fc.oneof(fc.integer({ min: MIN_INTERVAL_MS, max: 10 * MINUTE }), fc.integer({ min: MIN_INTERVAL_MS, max: 30 * DAY })),
    // endAt as a distance from startAt, so it is never before it (scheduleIssues refuses that)
    endAfter: fc.option(fc.integer({ min: 0, max: 200 * DAY }), { nil: undefined }),
    off: offsetMinutes,
    t: instant,
  });

  it('occurrences are exactly startAt + k·everyMs, consecutive, within [startAt, endAt]', () => {
    fc.assert(
      fc.property(intervalCase, ({ now, start, everyMs, endAfter, off, t }) => {
        const startAt = start ?? now;
        const endAt = endAfter === undefined ? undefined : startAt + endAfter;
        const s = normalizeSchedule(
          {
            type: 'interval',
            everyMs,
            ...(start !== undefined ? { startAt: rfc3339(start, off) } : {}),
            ...(endAt !== undefined ? { endAt: rfc3339(endAt, -off) } : {}),
          },
          now,
        );
        expect(s).toEqual({
          type: 'interval',
          everyMs,
          startAt: iso(startAt),
          ...(endAt !== undefined ? { endAt: iso(endAt) } : {}),
        });
        const occ = checkChain(s, t, 20, startAt, endAt);
        occ.forEach((o, i) => {
          expect((o - startAt) % everyMs).toBe(0);
          if (i > 0) expect(o - occ[i - 1]!).toBe(everyMs);
        });
        // The first is the smallest multiple after t: the one before it is not after t, or there is none.
        const first = occ[0];
        if (first !== undefined) expect(first === startAt || first - everyMs <= t).toBe(true);
        // None left exactly when t has reached the last multiple inside endAt.
        const last = endAt === undefined ? Infinity : startAt + Math.floor((endAt - startAt) / everyMs) * everyMs;
        expect(nextOccurrence(s, t) === null).toBe(t >= last);
      }),
    );
  });

  it('an interval registered now fires now and is accepted', () => {
    fc.assert(
      fc.property(instant, fc.integer({ min: MIN_INTERVAL_MS, max: DAY }), (now, everyMs) => {
        const s = normalizeSchedule({ type: 'interval', everyMs }, now);
        expect(occurrences(s, now - 1, 3)).toEqual([now, now + everyMs, now + 2 * everyMs]);
        expect(scheduleIssues({ type: 'interval', everyMs }, now)).toEqual([]);
      }),
    );
  });
});

describe('dates', () => {
  it('normalized dates are the input dates at or after now, as a sorted, de-duplicated subset', () => {
    const datesCase = fc
      .record({
        now: instant,
        // some instants repeat, written with different offsets
        pool: fc.uniqueArray(instant, { minLength: 1, maxLength: 12 }),
        picks: fc.array(fc.tuple(fc.nat(), offsetMinutes), { minLength: 1, maxLength: 40 }),
        nowIsADate: fc.boolean(),
      })
      .map(({ now, pool, picks, nowIsADate }) => {
        const all = nowIsADate ? [...pool, now] : pool;
        const inputs = picks.map(([i, off]) => ({ t: all[i % all.length]!, off }));
        return { now, inputs };
      });
    fc.assert(
      fc.property(datesCase, instant, ({ now, inputs }, t) => {
        const s = normalizeSchedule({ type: 'dates', dates: inputs.map((d) => rfc3339(d.t, d.off)) }, now);
        if (s.type !== 'dates') throw new Error('expected dates');
        const out = s.dates.map((d) => Date.parse(d));
        const expected = [...new Set(inputs.map((d) => d.t))].filter((d) => d >= now).sort((a, b) => a - b);
        expect(out).toEqual(expected);
        expect(s.dates).toEqual(expected.map(iso)); // RFC 3339 UTC with milliseconds
        for (let i = 1; i < out.length; i++) expect(out[i]!).toBeGreaterThan(out[i - 1]!);
        const inputSet = new Set(inputs.map((d) => d.t));
        for (const d of out) expect(inputSet.has(d)).toBe(true);
        // Every normalized date fires, in order, and nothing else does.
        expect(checkChain(s, now - 1, MAX_DATES)).toEqual(out);
        expect(nextOccurrence(s, t)).toBe(out.find((d) => d > t) ?? null);
        expect(scheduleIssues({ type: 'dates', dates: inputs.map((d) => rfc3339(d.t, d.off)) }, now)).toEqual(
          out.length === 0 ? [{ path: 'dates', message: expect.any(String) }] : [],
        );
      }),
    );
  });
});

describe('cron', () => {
  const TRANSITIONS = ZONES.flatMap((tz) => transitionsOf(tz).map((tr) => ({ tz, tr })));

  /** Asserts our next run equals the reference rule, and croner's next run outside DST windows. */
  function checkAgainstOracles(gen: GenCron, tz: string, from: number): void {
    const s = normalizeSchedule({ type: 'cron', expression: gen.expression, timezone: tz }, from);
    const ours = nextOccurrence(s, from);
    const croner = cronerNext(gen.expression, tz, from);
    const reference = referenceNextCron(gen, tz, from);
    const context = `${gen.expression} in ${tz} after ${iso(from)}: ours ${ours && iso(ours)}, croner ${
      croner && iso(croner)
    }, reference ${reference && iso(reference)}`;
    expect(ours, context).not.toBeNull();
    expect(ours, context).toBe(reference);
    if (ours !== croner) {
      expect(inDstWindow(tz, Math.min(ours!, croner ?? Infinity)), `outside a DST window: ${context}`).toBe(true);
    }
  }

  it('agrees with croner (and the reference rule) on generated expressions at arbitrary times', () => {
    fc.assert(
      fc.property(cronArb(), zone, instant, (gen, tz, from) => checkAgainstOracles(gen, tz, from)),
      { numRuns: 250 },
    );
  });

  it('6 fields (seconds first): agrees with the reference rule everywhere and croner outside DST windows', () => {
    fc.assert(
      fc.property(cronArb({ seconds: true, frequent: true }), zone, instant, (gen, tz, from) => checkAgainstOracles(gen, tz, from)),
      { numRuns: 120 },
    );
  });

  it('6 fields (seconds first) around every DST change of the covered zones', () => {
    fc.assert(
      fc.property(
        cronArb({ seconds: true, frequent: true }),
        fc.constantFrom(...TRANSITIONS),
        fc.integer({ min: -2 * HOUR, max: 2 * HOUR }),
        (gen, { tz, tr }, delta) => checkAgainstOracles(gen, tz, tr.at + delta),
      ),
      { numRuns: 120 },
    );
  });

  it('agrees with croner in zones without DST, exactly', () => {
    fc.assert(
      fc.property(cronArb(), fc.constantFrom('UTC', 'Asia/Kolkata'), instant, (gen, tz, from) => {
        const s = normalizeSchedule({ type: 'cron', expression: gen.expression, timezone: tz }, from);
        expect(nextOccurrence(s, from), gen.expression).toBe(cronerNext(gen.expression, tz, from));
      }),
      { numRuns: 150 },
    );
  });

  it('agrees with croner (and the reference rule) around every DST change of the covered zones', () => {
    fc.assert(
      fc.property(
        cronArb({ frequent: true }),
        fc.constantFrom(...TRANSITIONS),
        fc.integer({ min: -4 * HOUR, max: 3 * HOUR }),
        (gen, { tz, tr }, delta) => checkAgainstOracles(gen, tz, tr.at + delta),
      ),
      { numRuns: 400 },
    );
  });

  it('reads day of month and day of week restricted together as either one (as croner does)', () => {
    fc.assert(
      fc.property(cronArb({ domAndDow: true }), zone, instant, (gen, tz, from) => checkAgainstOracles(gen, tz, from)),
      { numRuns: 100 },
    );
  });

  it('occurrences are strictly increasing and stay within [startAt, endAt]', () => {
    fc.assert(
      fc.property(
        cronArb({ frequent: true }),
        zone,
        fc.oneof(
          instant,
          fc.constantFrom(...TRANSITIONS).map(({ tr }) => tr.at - 2 * HOUR),
        ),
        fc.option(fc.integer({ min: -DAY, max: DAY }), { nil: undefined }),
        fc.option(fc.integer({ min: 0, max: 2 * DAY }), { nil: undefined }),
        (gen, tz, from, startDelta, endDelta) => {
          const startAt = startDelta === undefined ? undefined : from + startDelta;
          const endAt = endDelta === undefined ? undefined : Math.max(from, startAt ?? from) + endDelta;
          const s = normalizeSchedule(
            {
              type: 'cron',
              expression: gen.expression,
              timezone: tz,
              ...(startAt !== undefined ? { startAt: iso(startAt) } : {}),
              ...(endAt !== undefined ? { endAt: iso(endAt) } : {}),
            },
            from,
          );
          const occ = checkChain(s, from, 15, startAt ?? -Infinity, endAt ?? Infinity);
          // startAt and endAt only cut the unbounded schedule: the same runs, none added or moved.
          const unbounded = { type: 'cron', expression: gen.expression, timezone: tz } as const;
          const lo = startAt === undefined ? from : Math.max(from, startAt - 1);
          expect(occ).toEqual(occurrences(unbounded, lo, 15).filter((t) => endAt === undefined || t <= endAt));
        },
      ),
      { numRuns: 120 },
    );
  });
});

describe('the daylight-saving rule, explicitly', () => {
  const changes = (kind: 'gap' | 'overlap') =>
    ZONES.flatMap((tz) =>
      transitionsOf(tz)
        .filter((tr) => (kind === 'gap' ? tr.after > tr.before : tr.after < tr.before))
        .map((tr) => ({ tz, tr })),
    );

  it('a local time inside a skipped interval fires at the same offset past the gap', () => {
    fc.assert(
      fc.property(fc.constantFrom(...changes('gap')), fc.nat(), (c, k) => {
        const { tz, tr } = c;
        const gapMinutes = (tr.after - tr.before) / MINUTE;
        const wall = tr.at + tr.before + (k % gapMinutes) * MINUTE; // a wall-clock time in the gap
        const d = new Date(wall);
        const s = { type: 'cron', expression: `${d.getUTCMinutes()} ${d.getUTCHours()} * * *`, timezone: tz } as const;
        const t = nextOccurrence(s, tr.at - 12 * HOUR);
        expect(t, `${s.expression} in ${tz} on ${wallString(wall)}`).toBe(wall - tr.before);
        expect(wallOf(tz, t!)).toBe(wall + (tr.after - tr.before)); // e.g. 02:30 → 03:30
      }),
    );
  });

  it('a local time inside a repeated interval fires once, or at both instances when every hour is named', () => {
    fc.assert(
      fc.property(fc.constantFrom(...changes('overlap')), fc.nat(), (c, k) => {
        const { tz, tr } = c;
        const repeatedMinutes = (tr.before - tr.after) / MINUTE;
        const wall = tr.at + tr.after + (k % repeatedMinutes) * MINUTE; // a wall-clock time read twice
        const [first, second] = [wall - tr.before, wall - tr.after];
        expect(offsetMs(tz, first)).toBe(tr.before);
        expect(offsetMs(tz, second)).toBe(tr.after);
        const d = new Date(wall);
        const [m, h] = [d.getUTCMinutes(), d.getUTCHours()];
        const around = (expression: string) =>
          occurrences({ type: 'cron', expression, timezone: tz }, tr.at - 6 * HOUR, 20).filter(
            (t) => t < tr.at + 6 * HOUR && wallOf(tz, t) === wall,
          );
        expect(around(`${m} ${h} * * *`)).toEqual([first]);
        expect(around(`${m} * * * *`)).toEqual([first, second]);
        expect(around(`${m} 0-23 * * *`)).toEqual([first, second]);
      }),
    );
  });
});
