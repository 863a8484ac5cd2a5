/**
 * The active-jobs quota's per-tenant estimates (src/store/open-jobs.ts): trusted only with room to spare, never the
 * reason for a refusal, and stale after OPEN_JOBS_RECOUNT_MS.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.ts';
import { OPEN_JOBS_RECOUNT_MS, OpenJobsEstimates } from '../../src/store/open-jobs.ts';

const T0 = Date.UTC(2026, 10, 23);

describe('OpenJobsEstimates', () => {
  it('asks for a count until it has one, then answers from the count plus what this process added', () => {
    const e = new OpenJobsEstimates(new ManualClock(T0));
    expect(e.room('t', 1000, 1)).toBeNull();
    e.added('t', 5); // no count yet: nothing to add to
    expect(e.room('t', 1000, 1)).toBeNull();
    e.counted('t', 100);
    expect(e.room('t', 1000, 1)).toBe(900);
    e.added('t', 10);
    expect(e.room('t', 1000, 1)).toBe(890);
    expect(e.room('other', 1000, 1)).toBeNull();
  });

  it('asks for a count again once the last one is older than OPEN_JOBS_RECOUNT_MS', () => {
    const clock = new ManualClock(T0);
    const e = new OpenJobsEstimates(clock);
    e.counted('t', 0);
    clock.advance(OPEN_JOBS_RECOUNT_MS);
    expect(e.room('t', 1000, 1)).toBe(1000);
    clock.advance(1);
    expect(e.room('t', 1000, 1)).toBeNull();
  });

  it('asks for a count within a twentieth of the quota (at least one job) of it', () => {
    const e = new OpenJobsEstimates(new ManualClock(T0));
    e.counted('t', 940);
    expect(e.room('t', 1000, 10)).toBe(60); // 50 to spare
    expect(e.room('t', 1000, 11)).toBeNull(); // 49 to spare: under the margin of 50
    e.counted('small', 1);
    expect(e.room('small', 3, 1)).toBe(2); // 1 to spare
    e.added('small', 1);
    expect(e.room('small', 3, 1)).toBeNull(); // none to spare
  });

  it('never answers a room too small for the jobs asked about: a refusal always follows an exact count', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200_000 }),
        fc.nat(200_000),
        fc.nat(1_000),
        fc.integer({ min: 1, max: 2_000 }),
        (limit, open, added, adding) => {
          const e = new OpenJobsEstimates(new ManualClock(T0));
          e.counted('t', Math.min(open, limit));
          e.added('t', added);
          const room = e.room('t', limit, adding);
          if (room !== null) expect(room).toBeGreaterThan(adding);
        },
      ),
    );
  });
});
