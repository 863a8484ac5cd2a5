import fc from 'fast-check';
import { v7 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { IdGenerator, isUuid, newId, uuidV7LowerBound } from '../../src/domain/ids.ts';

describe('uuidV7LowerBound', () => {
  it('sorts above every v7 id of an earlier millisecond and at or below every id of that millisecond', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 47 }), fc.uint8Array({ minLength: 16, maxLength: 16 }), (ms, random) => {
        const bound = uuidV7LowerBound(ms);
        expect(v7({ msecs: ms - 1, random }) < bound).toBe(true);
        expect(v7({ msecs: ms, random }) >= bound).toBe(true);
      }),
    );
  });

  it('is a well-formed UUID v7', () => {
    expect(uuidV7LowerBound(Date.UTC(2030, 0, 1))).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7000-8000-000000000000$/);
  });
});

describe('IdGenerator', () => {
  const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  it('makes well-formed v7 ids that strictly increase, whatever the clock does (also backwards)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 2 ** 47 }), { minLength: 1, maxLength: 600 }), (times) => {
        let i = 0;
        const gen = new IdGenerator(() => times[Math.min(i++, times.length - 1)]!);
        const ids = times.map(() => gen.next());
        for (const id of ids) expect(id).toMatch(V7);
        for (let k = 1; k < ids.length; k++) expect(ids[k]! > ids[k - 1]!).toBe(true);
      }),
      { numRuns: 50 },
    );
  });

  it('carries the millisecond it was made in, so uuidV7LowerBound selects by creation time', () => {
    const ms = Date.UTC(2031, 5, 1, 12);
    const gen = new IdGenerator(() => ms);
    const ids = Array.from({ length: 1000 }, () => gen.next()); // four pool refills
    expect(ids.every((id) => id >= uuidV7LowerBound(ms) && id < uuidV7LowerBound(ms + 1))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    // The last 48 bits are random bytes of each id's own (a collision among 1,000 has odds of ~2e-9).
    expect(new Set(ids.map((id) => id.slice(-12))).size).toBe(ids.length);
  });

  it('draws fresh random bits for every id: two generators on one clock do not collide', () => {
    const a = new IdGenerator(() => 1_000);
    const b = new IdGenerator(() => 1_000);
    const seen = new Set(Array.from({ length: 500 }, () => [a.next(), b.next()]).flat());
    expect(seen.size).toBe(1000);
  });

  it('newId is a valid, increasing UUID', () => {
    const x = newId();
    const y = newId();
    expect(isUuid(x) && isUuid(y)).toBe(true);
    expect(y > x).toBe(true);
  });
});
