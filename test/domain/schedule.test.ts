/**
 * Named examples for src/domain/schedule.ts: the 2026 daylight-saving changes of Europe/Berlin, America/New_York,
 * Australia/Lord_Howe (a 30-minute shift) and Pacific/Chatham, against the rule in schedule.ts's header:
 * a local time in a skipped interval fires at the same offset past the gap; a local time in a repeated interval
 * fires once (at its first instance) unless the hour field names every hour. Expected instants are worked out by
 * hand from the zones' offsets, noted next to each.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CRON_MACROS,
  isRecurring,
  jitterOffsetMs,
  nextOccurrence,
  normalizeSchedule,
  occurrences,
  type Schedule,
  scheduleIssues,
} from '../../src/domain/schedule.ts';

const iso = (t: number): string => new Date(t).toISOString();
const at = (s: string): number => Date.parse(s);

/** The next `count` runs of a cron expression in `timezone` after `after`, as ISO strings. */
function runs(expression: string, timezone: string, after: string, count: number): string[] {
  const s = normalizeSchedule({ type: 'cron', expression, timezone }, at(after));
  return occurrences(s, at(after), count).map(iso);
}

describe('Europe/Berlin, 2026-03-29: 02:00 CET (+1) → 03:00 CEST (+2) at 01:00Z', () => {
  it('`30 2 * * *` fires at 03:30 CEST, the same offset past the gap', () => {
    expect(runs('30 2 * * *', 'Europe/Berlin', '2026-03-28T00:00:00Z', 3)).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:30:00.000Z', // 02:30 does not exist → 03:30 CEST
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
    ]);
  });

  it('`59 2 * * *` fires at 03:59 CEST', () => {
    expect(runs('59 2 * * *', 'Europe/Berlin', '2026-03-29T00:00:00Z', 1)).toEqual(['2026-03-29T01:59:00.000Z']);
  });

  it('`30 2,3 * * *` fires once when the shifted 02:30 meets 03:30', () => {
    expect(runs('30 2,3 * * *', 'Europe/Berlin', '2026-03-29T00:00:00Z', 3)).toEqual([
      '2026-03-29T01:30:00.000Z', // 02:30 → 03:30 CEST, which is also the 03:30 run
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-30T01:30:00.000Z', // 03:30 CEST
    ]);
  });

  it('`0 * * * *` fires once per elapsed hour', () => {
    expect(runs('0 * * * *', 'Europe/Berlin', '2026-03-28T22:30:00Z', 4)).toEqual([
      '2026-03-28T23:00:00.000Z', // 00:00 CET
      '2026-03-29T00:00:00.000Z', // 01:00 CET
      '2026-03-29T01:00:00.000Z', // 02:00 → 03:00 CEST (and 03:00 itself): once
      '2026-03-29T02:00:00.000Z', // 04:00 CEST
    ]);
  });

  it('`*/30 * * * *` fires every 30 minutes of elapsed time', () => {
    expect(runs('*/30 * * * *', 'Europe/Berlin', '2026-03-29T00:00:00Z', 4)).toEqual([
      '2026-03-29T00:30:00.000Z', // 01:30 CET
      '2026-03-29T01:00:00.000Z', // 02:00 → 03:00 CEST
      '2026-03-29T01:30:00.000Z', // 02:30 → 03:30 CEST
      '2026-03-29T02:00:00.000Z', // 04:00 CEST
    ]);
  });
});

describe('Europe/Berlin, 2026-10-25: 03:00 CEST (+2) → 02:00 CET (+1) at 01:00Z', () => {
  it('`30 2 * * *` fires once, at the first 02:30', () => {
    expect(runs('30 2 * * *', 'Europe/Berlin', '2026-10-24T00:00:00Z', 3)).toEqual([
      '2026-10-24T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T00:30:00.000Z', // 02:30 CEST; 02:30 CET (01:30Z) does not fire
      '2026-10-26T01:30:00.000Z', // 02:30 CET
    ]);
  });

  it('`*/30 2 * * *` fires in the first 02:xx only', () => {
    expect(runs('*/30 2 * * *', 'Europe/Berlin', '2026-10-24T23:00:00Z', 4)).toEqual([
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T00:30:00.000Z', // 02:30 CEST
      '2026-10-26T01:00:00.000Z', // 02:00 CET, next day
      '2026-10-26T01:30:00.000Z',
    ]);
  });

  it('`0 * * * *` fires once per elapsed hour, both 02:00s included', () => {
    expect(runs('0 * * * *', 'Europe/Berlin', '2026-10-24T22:30:00Z', 4)).toEqual([
      '2026-10-24T23:00:00.000Z', // 01:00 CEST
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET
      '2026-10-25T02:00:00.000Z', // 03:00 CET
    ]);
  });

  it('`*/30 * * * *` fires every 30 minutes of elapsed time', () => {
    expect(runs('*/30 * * * *', 'Europe/Berlin', '2026-10-25T00:00:00Z', 4)).toEqual([
      '2026-10-25T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET
      '2026-10-25T01:30:00.000Z', // 02:30 CET
      '2026-10-25T02:00:00.000Z', // 03:00 CET
    ]);
  });

  it('asked from inside the second 02:xx, a fixed 02:30 waits for the next day', () => {
    const s: Schedule = { type: 'cron', expression: '30 2 * * *', timezone: 'Europe/Berlin' };
    expect(iso(nextOccurrence(s, at('2026-10-25T01:10:00Z'))!)).toBe('2026-10-26T01:30:00.000Z');
  });
});

describe('America/New_York, 2026-03-08: 02:00 EST (−5) → 03:00 EDT (−4) at 07:00Z', () => {
  it('`30 2 * * *` fires at 03:30 EDT', () => {
    expect(runs('30 2 * * *', 'America/New_York', '2026-03-07T00:00:00Z', 3)).toEqual([
      '2026-03-07T07:30:00.000Z', // 02:30 EST
      '2026-03-08T07:30:00.000Z', // 02:30 does not exist → 03:30 EDT
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
    ]);
  });

  it('`0 * * * *` fires once per elapsed hour', () => {
    expect(runs('0 * * * *', 'America/New_York', '2026-03-08T05:30:00Z', 3)).toEqual([
      '2026-03-08T06:00:00.000Z', // 01:00 EST
      '2026-03-08T07:00:00.000Z', // 02:00 → 03:00 EDT
      '2026-03-08T08:00:00.000Z', // 04:00 EDT
    ]);
  });

  it('`*/30 * * * *` fires every 30 minutes of elapsed time', () => {
    expect(runs('*/30 * * * *', 'America/New_York', '2026-03-08T06:00:00Z', 4)).toEqual([
      '2026-03-08T06:30:00.000Z', // 01:30 EST
      '2026-03-08T07:00:00.000Z', // 02:00 → 03:00 EDT
      '2026-03-08T07:30:00.000Z', // 02:30 → 03:30 EDT
      '2026-03-08T08:00:00.000Z', // 04:00 EDT
    ]);
  });
});

describe('America/New_York, 2026-11-01: 02:00 EDT (−4) → 01:00 EST (−5) at 06:00Z', () => {
  it('`30 1 * * *` fires once, at the first 01:30', () => {
    expect(runs('30 1 * * *', 'America/New_York', '2026-10-31T00:00:00Z', 3)).toEqual([
      '2026-10-31T05:30:00.000Z', // 01:30 EDT
      '2026-11-01T05:30:00.000Z', // 01:30 EDT; 01:30 EST (06:30Z) does not fire
      '2026-11-02T06:30:00.000Z', // 01:30 EST
    ]);
  });

  it('`30 2 * * *` is not affected: 02:30 exists once', () => {
    expect(runs('30 2 * * *', 'America/New_York', '2026-10-31T12:00:00Z', 2)).toEqual([
      '2026-11-01T07:30:00.000Z', // 02:30 EST
      '2026-11-02T07:30:00.000Z',
    ]);
  });

  it('`0 * * * *` fires once per elapsed hour, both 01:00s included', () => {
    expect(runs('0 * * * *', 'America/New_York', '2026-11-01T04:30:00Z', 3)).toEqual([
      '2026-11-01T05:00:00.000Z', // 01:00 EDT
      '2026-11-01T06:00:00.000Z', // 01:00 EST
      '2026-11-01T07:00:00.000Z', // 02:00 EST
    ]);
  });

  it('`*/30 * * * *` fires every 30 minutes of elapsed time', () => {
    expect(runs('*/30 * * * *', 'America/New_York', '2026-11-01T05:00:00Z', 4)).toEqual([
      '2026-11-01T05:30:00.000Z', // 01:30 EDT
      '2026-11-01T06:00:00.000Z', // 01:00 EST
      '2026-11-01T06:30:00.000Z', // 01:30 EST
      '2026-11-01T07:00:00.000Z', // 02:00 EST
    ]);
  });
});

describe('Australia/Lord_Howe, 2026-04-05: 02:00 (+11) → 01:30 (+10:30) at 2026-04-04T15:00Z', () => {
  it('`45 1 * * *` fires once, at the first 01:45', () => {
    expect(runs('45 1 * * *', 'Australia/Lord_Howe', '2026-04-03T00:00:00Z', 3)).toEqual([
      '2026-04-03T14:45:00.000Z', // 04-04 01:45 +11
      '2026-04-04T14:45:00.000Z', // 04-05 01:45 +11; 01:45 +10:30 (15:15Z) does not fire
      '2026-04-05T15:15:00.000Z', // 04-06 01:45 +10:30
    ]);
  });

  it('`30 1 * * *` fires once, at the first 01:30', () => {
    expect(runs('30 1 * * *', 'Australia/Lord_Howe', '2026-04-04T12:00:00Z', 2)).toEqual([
      '2026-04-04T14:30:00.000Z', // 01:30 +11
      '2026-04-05T15:00:00.000Z', // 04-06 01:30 +10:30
    ]);
  });

  it('`*/30 * * * *` fires every 30 minutes of elapsed time, both 01:30s included', () => {
    expect(runs('*/30 * * * *', 'Australia/Lord_Howe', '2026-04-04T13:45:00Z', 5)).toEqual([
      '2026-04-04T14:00:00.000Z', // 01:00 +11
      '2026-04-04T14:30:00.000Z', // 01:30 +11
      '2026-04-04T15:00:00.000Z', // 01:30 +10:30
      '2026-04-04T15:30:00.000Z', // 02:00 +10:30
      '2026-04-04T16:00:00.000Z', // 02:30 +10:30
    ]);
  });

  it('`0 * * * *` fires at every wall-clock hour (01:00 and 02:00 are 90 minutes apart)', () => {
    expect(runs('0 * * * *', 'Australia/Lord_Howe', '2026-04-04T13:30:00Z', 3)).toEqual([
      '2026-04-04T14:00:00.000Z', // 01:00 +11
      '2026-04-04T15:30:00.000Z', // 02:00 +10:30
      '2026-04-04T16:30:00.000Z', // 03:00 +10:30
    ]);
  });
});

describe('Australia/Lord_Howe, 2026-10-04: 02:00 (+10:30) → 02:30 (+11) at 2026-10-03T15:30Z', () => {
  it('`15 2 * * *` fires at 02:45, the same offset past the gap', () => {
    expect(runs('15 2 * * *', 'Australia/Lord_Howe', '2026-10-02T00:00:00Z', 3)).toEqual([
      '2026-10-02T15:45:00.000Z', // 10-03 02:15 +10:30
      '2026-10-03T15:45:00.000Z', // 10-04 02:15 does not exist → 02:45 +11
      '2026-10-04T15:15:00.000Z', // 10-05 02:15 +11
    ]);
  });

  it('`0 2 * * *` fires at 02:30; `30 2 * * *` exists and fires at 02:30', () => {
    expect(runs('0 2 * * *', 'Australia/Lord_Howe', '2026-10-03T00:00:00Z', 1)).toEqual(['2026-10-03T15:30:00.000Z']);
    expect(runs('30 2 * * *', 'Australia/Lord_Howe', '2026-10-03T00:00:00Z', 2)).toEqual([
      '2026-10-03T15:30:00.000Z', // 02:30 +11
      '2026-10-04T15:30:00.000Z',
    ]);
  });

  it('`*/30 * * * *` fires every 30 minutes of elapsed time', () => {
    expect(runs('*/30 * * * *', 'Australia/Lord_Howe', '2026-10-03T14:45:00Z', 4)).toEqual([
      '2026-10-03T15:00:00.000Z', // 01:30 +10:30
      '2026-10-03T15:30:00.000Z', // 02:00 → 02:30 +11, which is also the 02:30 run
      '2026-10-03T16:00:00.000Z', // 03:00 +11
      '2026-10-03T16:30:00.000Z', // 03:30 +11
    ]);
  });

  it('`0 * * * *` fires for every wall-clock hour, 02:00 at 02:30', () => {
    expect(runs('0 * * * *', 'Australia/Lord_Howe', '2026-10-03T14:00:00Z', 3)).toEqual([
      '2026-10-03T14:30:00.000Z', // 01:00 +10:30
      '2026-10-03T15:30:00.000Z', // 02:00 → 02:30 +11
      '2026-10-03T16:00:00.000Z', // 03:00 +11
    ]);
  });
});

describe('Pacific/Chatham, 2026: changes at 02:45 local standard time', () => {
  it('2026-09-27 02:45 (+12:45) → 03:45 (+13:45): `0 3 * * *` fires at 04:00', () => {
    expect(runs('0 3 * * *', 'Pacific/Chatham', '2026-09-26T00:00:00Z', 2)).toEqual([
      '2026-09-26T14:15:00.000Z', // 09-27 03:00 does not exist → 04:00 +13:45
      '2026-09-27T13:15:00.000Z', // 09-28 03:00 +13:45
    ]);
  });

  it('2026-04-05 03:45 (+13:45) → 02:45 (+12:45): `0 3 * * *` fires once', () => {
    expect(runs('0 3 * * *', 'Pacific/Chatham', '2026-04-04T00:00:00Z', 2)).toEqual([
      '2026-04-04T13:15:00.000Z', // 04-05 03:00 +13:45; 03:00 +12:45 (14:15Z) does not fire
      '2026-04-05T14:15:00.000Z', // 04-06 03:00 +12:45
    ]);
  });
});

describe('macros', () => {
  const after = '2026-01-01T12:00:00Z'; // a Thursday
  it.each([
    ['@yearly', ['2027-01-01T00:00:00.000Z', '2028-01-01T00:00:00.000Z']],
    ['@annually', ['2027-01-01T00:00:00.000Z', '2028-01-01T00:00:00.000Z']],
    ['@monthly', ['2026-02-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z']],
    ['@weekly', ['2026-01-04T00:00:00.000Z', '2026-01-11T00:00:00.000Z']], // Sundays
    ['@daily', ['2026-01-02T00:00:00.000Z', '2026-01-03T00:00:00.000Z']],
    ['@hourly', ['2026-01-01T13:00:00.000Z', '2026-01-01T14:00:00.000Z']],
  ])('%s is accepted and fires as expected in UTC', (macro, expected) => {
    expect(scheduleIssues({ type: 'cron', expression: macro }, at(after))).toEqual([]);
    expect(runs(macro, 'UTC', after, 2)).toEqual(expected);
  });

  it('every listed macro is accepted, surrounding whitespace too', () => {
    for (const m of CRON_MACROS) {
      expect(scheduleIssues({ type: 'cron', expression: ` ${m} `, timezone: 'Europe/Berlin' }, at(after))).toEqual([]);
    }
  });

  it('@daily follows local midnight across a DST change', () => {
    expect(runs('@daily', 'Europe/Berlin', '2026-03-28T12:00:00Z', 2)).toEqual([
      '2026-03-28T23:00:00.000Z', // 03-29 00:00 CET
      '2026-03-29T22:00:00.000Z', // 03-30 00:00 CEST
    ]);
  });
});

describe('scheduleIssues', () => {
  const now = at('2026-06-01T10:00:00Z');

  it('refuses an expression that names no real day, with path `expression`', () => {
    for (const expression of ['0 0 30 2 *', '0 0 31 4 *', '0 0 31 2,4 *']) {
      expect(scheduleIssues({ type: 'cron', expression }, now), expression).toEqual([
        { path: 'expression', message: expect.stringMatching(/day of month/) },
      ]);
    }
    // 29 February exists, every four years
    expect(scheduleIssues({ type: 'cron', expression: '0 0 29 2 *' }, now)).toEqual([]);
    expect(iso(nextOccurrence({ type: 'cron', expression: '0 0 29 2 *' }, now)!)).toBe('2028-02-29T00:00:00.000Z');
  });

  it('refuses a cron schedule whose endAt comes before its first occurrence, with path `endAt`', () => {
    const s = { type: 'cron', expression: '0 9 * * *', timezone: 'UTC' } as const;
    expect(scheduleIssues({ ...s, endAt: '2026-06-02T08:59:59.999Z' }, now)).toEqual([{ path: 'endAt', message: expect.any(String) }]);
    expect(scheduleIssues({ ...s, endAt: '2026-06-02T09:00:00Z' }, now)).toEqual([]); // endAt is inclusive
    expect(scheduleIssues({ ...s, startAt: '2026-07-01T00:00:00Z', endAt: '2026-06-30T00:00:00Z' }, now)).toEqual([
      { path: 'endAt', message: 'endAt is before startAt' },
    ]);
  });

  it('refuses an interval whose endAt comes before its first occurrence, with path `endAt`', () => {
    expect(
      scheduleIssues({ type: 'interval', everyMs: 3_600_000, startAt: '2026-01-01T00:00:00Z', endAt: '2026-01-01T05:30:00Z' }, now),
    ).toEqual([{ path: 'endAt', message: expect.any(String) }]);
    expect(scheduleIssues({ type: 'interval', everyMs: 60_000, endAt: '2026-06-01T09:00:00Z' }, now)).toEqual([
      { path: 'endAt', message: expect.any(String) },
    ]);
    expect(
      scheduleIssues({ type: 'interval', everyMs: 60_000, startAt: '2026-06-02T00:00:00Z', endAt: '2026-06-01T00:00:00Z' }, now),
    ).toEqual([{ path: 'endAt', message: 'endAt is before startAt' }]);
  });

  it('refuses dates that are all past, with path `dates`; a date at now counts', () => {
    expect(scheduleIssues({ type: 'dates', dates: ['2026-01-01T00:00:00Z', '2026-05-31T23:59:59Z'] }, now)).toEqual([
      { path: 'dates', message: expect.any(String) },
    ]);
    expect(scheduleIssues({ type: 'dates', dates: [] }, now)).toEqual([{ path: 'dates', message: expect.any(String) }]);
    expect(scheduleIssues({ type: 'dates', dates: ['2026-01-01T00:00:00Z', iso(now)] }, now)).toEqual([]);
    const s = normalizeSchedule({ type: 'dates', dates: ['2026-01-01T00:00:00Z', iso(now)] }, now);
    expect(s).toEqual({ type: 'dates', dates: [iso(now)] });
    expect(nextOccurrence(s, now - 1)).toBe(now);
  });

  it('refuses a past `once`, with path `at`; `at` = now is accepted like a zero delay', () => {
    expect(scheduleIssues({ type: 'once', at: '2026-06-01T09:59:59.999Z' }, now)).toEqual([{ path: 'at', message: expect.any(String) }]);
    expect(scheduleIssues({ type: 'once', at: iso(now) }, now)).toEqual([]);
    expect(scheduleIssues({ type: 'delay', delayMs: 0 }, now)).toEqual([]);
  });

  it.each(['0 0 * * * * *', '0 * * *', '*', '', '   '])('refuses %j (not 5 or 6 fields)', (expression) => {
    expect(scheduleIssues({ type: 'cron', expression }, now)).toEqual([
      { path: 'expression', message: expect.stringMatching(/expected 5 fields .*or 6 with seconds first/) },
    ]);
  });

  it('takes 6 fields as seconds first (API.md "Richer schedules"): every 15 s, and 30 s past 09:00 in Berlin', () => {
    expect(scheduleIssues({ type: 'cron', expression: '*/15 * * * * *' }, now)).toEqual([]);
    const every15 = normalizeSchedule({ type: 'cron', expression: '*/15 * * * * *' }, now);
    expect(occurrences(every15, now, 3).map(iso)).toEqual([
      '2026-06-01T10:00:15.000Z',
      '2026-06-01T10:00:30.000Z',
      '2026-06-01T10:00:45.000Z',
    ]);
    const berlin = normalizeSchedule({ type: 'cron', expression: '30 0 9 * * *', timezone: 'Europe/Berlin' }, now);
    expect(iso(nextOccurrence(berlin, now)!)).toBe('2026-06-02T07:00:30.000Z');
    // A hashed value is refused in the 6-field form too, and a month name is still not taken for one.
    expect(scheduleIssues({ type: 'cron', expression: '0 H * * * *' }, now)).toEqual([
      { path: 'expression', message: expect.stringMatching(/hashed values/) },
    ]);
    expect(scheduleIssues({ type: 'cron', expression: '0 0 9 * MAR,APR THU' }, now)).toEqual([]);
  });

  it.each(['@minutely', '@weekdays', '@reboot', '@every 5m', '@DAILY', '@'])('refuses the unknown macro %j', (expression) => {
    expect(scheduleIssues({ type: 'cron', expression }, now)).toEqual([
      { path: 'expression', message: expect.stringMatching(/unknown macro/) },
    ]);
  });

  it.each(['Mars/Olympus_Mons', 'Europe/Berln', '', '+05:30', 'local'])('refuses the unknown time zone %j', (timezone) => {
    expect(scheduleIssues({ type: 'cron', expression: '0 * * * *', timezone }, now)).toEqual([
      { path: 'timezone', message: expect.stringMatching(/time zone/) },
    ]);
  });

  it('reports a bad expression and a bad zone together', () => {
    expect(scheduleIssues({ type: 'cron', expression: '0 0 * * *  *  *', timezone: 'Nowhere/Land' }, now).map((i) => i.path)).toEqual([
      'expression',
      'timezone',
    ]);
  });

  it('refuses garbage and out-of-range fields', () => {
    for (const expression of ['0 24 * * *', '60 * * * *', '* * 0 * *', '* * * 13 *', 'a b c d e', '0 0 * FOO *']) {
      expect(scheduleIssues({ type: 'cron', expression }, now), expression).toEqual([{ path: 'expression', message: expect.any(String) }]);
    }
  });

  it('refuses hashed (H) fields, which cron-parser would draw anew on every evaluation', () => {
    for (const expression of ['H * * * *', 'H/15 * * * *', '0 H(0-5) * * *', '0 0 H * *', '0 0 * * H']) {
      expect(scheduleIssues({ type: 'cron', expression }, now), expression).toEqual([
        { path: 'expression', message: expect.stringMatching(/H/) },
      ]);
    }
    // month and weekday names containing an H are not hashes
    expect(scheduleIssues({ type: 'cron', expression: '0 0 * MAR THU' }, now)).toEqual([]);
    expect(scheduleIssues({ type: 'cron', expression: '0 0 * * sun,thu' }, now)).toEqual([]);
  });

  it('accepts good schedules', () => {
    const good: Schedule[] = [
      { type: 'cron', expression: '*/15 9-17 * * 1-5', timezone: 'America/New_York' },
      { type: 'cron', expression: '  30 2 * * *  ', timezone: 'Australia/Lord_Howe', startAt: '2026-07-01T00:00:00Z' },
      { type: 'interval', everyMs: 1000 },
      { type: 'once', at: '2026-06-01T10:00:00.001Z' },
      { type: 'dates', dates: ['2027-01-01T00:00:00+01:00'] },
    ];
    for (const s of good) expect(scheduleIssues(s, now), JSON.stringify(s)).toEqual([]);
  });
});

describe('normalizeSchedule and startAt', () => {
  it('trims the expression and defaults the zone to UTC', () => {
    expect(normalizeSchedule({ type: 'cron', expression: '  0 9 * * *\t' }, 0)).toEqual({
      type: 'cron',
      expression: '0 9 * * *',
      timezone: 'UTC',
    });
  });

  it('startAt is inclusive: a run exactly at startAt fires', () => {
    const s: Schedule = { type: 'cron', expression: '0 9 * * *', startAt: '2026-06-05T09:00:00Z' };
    expect(iso(nextOccurrence(s, at('2026-06-01T00:00:00Z'))!)).toBe('2026-06-05T09:00:00.000Z');
    const later: Schedule = { ...s, startAt: '2026-06-05T09:00:00.001Z' };
    expect(iso(nextOccurrence(later, at('2026-06-01T00:00:00Z'))!)).toBe('2026-06-06T09:00:00.000Z');
  });

  it('isRecurring', () => {
    expect(isRecurring({ type: 'cron', expression: '@daily' })).toBe(true);
    expect(isRecurring({ type: 'interval', everyMs: 1000 })).toBe(true);
    expect(isRecurring({ type: 'dates', dates: ['2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z'] })).toBe(true);
    expect(isRecurring({ type: 'dates', dates: ['2026-01-01T00:00:00Z'] })).toBe(false);
    expect(isRecurring({ type: 'once', at: '2026-01-01T00:00:00Z' })).toBe(false);
    expect(isRecurring({ type: 'delay', delayMs: 5 })).toBe(false);
  });
});

describe('jitterOffsetMs', () => {
  it('is the FNV-1a 32-bit hash of the id, modulo jitterMs', () => {
    // Reference FNV-1a values (http://www.isthe.com/chongo/tech/comp/fnv/)
    expect(jitterOffsetMs('', 2 ** 32)).toBe(0x811c9dc5);
    expect(jitterOffsetMs('a', 2 ** 32)).toBe(0xe40c292c);
    expect(jitterOffsetMs('foobar', 2 ** 32)).toBe(0xbf9cf968);
    expect(jitterOffsetMs('foobar', 60_000)).toBe(0xbf9cf968 % 60_000);
  });

  it('is 0 without a jitter window', () => {
    expect(jitterOffsetMs('job-1', 0)).toBe(0);
    expect(jitterOffsetMs('job-1', -5)).toBe(0);
  });

  it('is stable and within [0, jitterMs)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.integer({ min: 1, max: 2 ** 31 }), (id, jitterMs) => {
        const j = jitterOffsetMs(id, jitterMs);
        expect(Number.isInteger(j)).toBe(true);
        expect(j).toBeGreaterThanOrEqual(0);
        expect(j).toBeLessThan(jitterMs);
        expect(jitterOffsetMs(id, jitterMs)).toBe(j);
      }),
    );
  });

  it('spreads many ids over the whole window', () => {
    const TENTHS = 10;
    const spread = (ids: string[], jitterMs: number): number[] => {
      const buckets = new Array<number>(TENTHS).fill(0);
      for (const id of ids) buckets[Math.floor((jitterOffsetMs(id, jitterMs) / jitterMs) * TENTHS)]! += 1;
      return buckets;
    };
    // Sequential ids, as a naive client would make them: each tenth of the window gets 60%-140% of its share.
    const sequential = spread(
      Array.from({ length: 2000 }, (_, i) => `job-${i}`),
      60_000,
    );
    for (const n of sequential) {
      expect(n).toBeGreaterThanOrEqual(120);
      expect(n).toBeLessThanOrEqual(280);
    }
    // Random ids: no tenth of the window is empty or holds more than 2.5 times its share.
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.uuid(), { minLength: 400, maxLength: 400 }),
        fc.integer({ min: 1000, max: 3_600_000 }),
        (ids, jitterMs) => {
          for (const n of spread(ids, jitterMs)) {
            expect(n).toBeGreaterThan(0);
            expect(n).toBeLessThanOrEqual(100);
          }
        },
      ),
      { numRuns: 30 },
    );
  });
});
