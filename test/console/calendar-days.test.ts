/**
 * The console's calendar helpers without a browser (src/console/app/parts/calendar-days.ts, holidays.ts): why an
 * occurrence is not a business day, on the calendar's own wall clock (not the viewer's, not UTC); the lines a preview
 * shows for what a calendar moved or skipped; and holidays as the calendars page reads them.
 */
import { describe, expect, it } from 'vitest';
import { localDay, nonBusinessReason, occurrenceLines } from '../../src/console/app/parts/calendar-days.ts';
import { isLocalDate, mergeHolidays, readHolidays, weekdayOf } from '../../src/console/app/parts/holidays.ts';

const UK = { timezone: 'Europe/London', weekendDays: [0, 6], holidays: ['2026-12-25', '2026-12-28'] };

describe('a calendar day', () => {
  it("is read on the calendar's wall clock", () => {
    // 23:30 UTC on Thursday 24 December is already Friday 25 December in Auckland.
    expect(localDay('2026-12-24T23:30:00Z', 'Pacific/Auckland')).toEqual({ date: '2026-12-25', weekday: 5 });
    expect(localDay('2026-12-24T23:30:00Z', 'Europe/London')).toEqual({ date: '2026-12-24', weekday: 4 });
    expect(localDay('2026-12-25T07:00:00Z', 'America/Los_Angeles')).toEqual({ date: '2026-12-24', weekday: 4 });
  });

  it('is a holiday, a weekend day, or a business day', () => {
    expect(nonBusinessReason('2026-12-25T09:00:00Z', UK)).toBe('holiday');
    expect(nonBusinessReason('2026-12-26T09:00:00Z', UK)).toBe('weekend: Saturday');
    expect(nonBusinessReason('2026-12-24T09:00:00Z', UK)).toBeNull();
    // A Friday-Saturday weekend.
    expect(nonBusinessReason('2026-12-24T09:00:00Z', { ...UK, weekendDays: [4, 5] })).toBe('weekend: Thursday');
    expect(nonBusinessReason('2026-12-24T09:00:00Z', { ...UK, timezone: 'Not/AZone' })).toBeNull();
  });
});

describe('the lines of a preview with a calendar', () => {
  it('puts each moved occurrence beside the time it fires, each skipped one at its own time, in order', () => {
    const lines = occurrenceLines(
      ['2026-12-24T09:00:00.000Z', '2026-12-29T09:00:00.000Z', '2026-12-30T09:00:00.000Z'],
      [
        { occurrence: '2026-12-25T09:00:00.000Z', firesAt: '2026-12-29T09:00:00.000Z' },
        { occurrence: '2026-12-26T09:00:00.000Z', firesAt: null },
        { occurrence: '2026-12-28T09:00:00.000Z', firesAt: '2026-12-29T09:00:00.000Z' },
        // Moved past the last time listed: its line would be beyond the list.
        { occurrence: '2026-12-31T09:00:00.000Z', firesAt: '2027-01-04T09:00:00.000Z' },
      ],
    );
    expect(lines).toEqual([
      { kind: 'fires', at: '2026-12-24T09:00:00.000Z', from: [] },
      { kind: 'skipped', at: '2026-12-26T09:00:00.000Z' },
      { kind: 'fires', at: '2026-12-29T09:00:00.000Z', from: ['2026-12-25T09:00:00.000Z', '2026-12-28T09:00:00.000Z'] },
      { kind: 'fires', at: '2026-12-30T09:00:00.000Z', from: [] },
    ]);
  });

  it('without a calendar, is the occurrences themselves', () => {
    const list = ['2026-12-24T09:00:00.000Z', '2026-12-25T09:00:00.000Z'];
    expect(occurrenceLines(list).map((l) => l.at)).toEqual(list);
  });
});

describe('holidays as typed and pasted', () => {
  it('are dates of the calendar', () => {
    expect(['2026-12-25', '2028-02-29'].map(isLocalDate)).toEqual([true, true]);
    expect(['2026-02-29', '2026-13-01', '2026-12-25T00:00', '25/12/2026', ''].map(isLocalDate)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it('are read one per line, blank lines ignored, the lines that are not dates named', () => {
    expect(readHolidays(' 2026-12-25\n\n2026-12-26 \nBoxing day\n2026-02-30')).toEqual({
      dates: ['2026-12-25', '2026-12-26'],
      bad: ['line 4: "Boxing day"', 'line 5: "2026-02-30"'],
    });
  });

  it('are kept sorted and distinct', () => {
    expect(mergeHolidays(['2026-12-25', '2027-01-01'], ['2026-12-26', '2026-12-25'])).toEqual(['2026-12-25', '2026-12-26', '2027-01-01']);
    expect(weekdayOf('2026-12-25')).toBe('Fri');
  });
});
