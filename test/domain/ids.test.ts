import fc from 'fast-check';
import { v7 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { uuidV7LowerBound } from '../../src/domain/ids.ts';

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
