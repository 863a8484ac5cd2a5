/**
 * The tenant shard key of src/domain/shard.ts: `shardOf` maps a tenant id to a bucket in [0, SHARD_COUNT), the same
 * for the same id whatever its case or dashes, and throws a TypeError for what does not end in 8 hex digits; it
 * agrees with its SQL twin `chime_shard_of` (migration 0013) on a migrated PGlite database, upper-case input and ids
 * with the high bit of their last 32 bits set included; and tenant ids as Chime makes them (v7) and random v4 ids
 * spread over every bucket, none holding more than 2.5 times its fair part.
 */

import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { v4 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdGenerator } from '../../src/domain/ids.ts';
import { SHARD_COUNT, shardOf } from '../../src/domain/shard.ts';
import { query } from '../../src/store/db.ts';
import { openTestStore, type TestStore } from '../support/store.ts';

describe('shardOf', () => {
  it('is 64 buckets', () => {
    expect(SHARD_COUNT).toBe(64);
  });

  it('maps every UUID to an integer in [0, SHARD_COUNT)', () => {
    fc.assert(
      fc.property(fc.uuid(), (id) => {
        const s = shardOf(id);
        expect(Number.isInteger(s)).toBe(true);
        expect(s).toBeGreaterThanOrEqual(0);
        expect(s).toBeLessThan(SHARD_COUNT);
      }),
      { numRuns: 1000 },
    );
  });

  it('is the low 32 bits of the id modulo 64, on fixed examples', () => {
    expect(shardOf('00000000-0000-0000-0000-000000000000')).toBe(0);
    expect(shardOf('00000000-0000-0000-0000-00000000003f')).toBe(63);
    expect(shardOf('00000000-0000-0000-0000-000000000040')).toBe(0);
    expect(shardOf('00000000-0000-0000-0000-000000000041')).toBe(1);
    expect(shardOf('ffffffff-ffff-ffff-ffff-ffffffffffff')).toBe(63);
    expect(shardOf('0190f4c2-1a2b-7c3d-8e4f-00008000002a')).toBe(42);
    // Only the last 32 bits count: the rest of the id may be anything.
    expect(shardOf('ffffffff-ffff-7fff-bfff-ffff0000002a')).toBe(42);
  });

  it('is stable: the same id gives the same bucket every time, whatever its case and with or without dashes', () => {
    fc.assert(
      fc.property(fc.uuid(), (id) => {
        const s = shardOf(id);
        expect(shardOf(id)).toBe(s);
        expect(shardOf(String(id))).toBe(s);
        expect(shardOf(id.toUpperCase())).toBe(s);
        expect(shardOf(id.replaceAll('-', ''))).toBe(s);
      }),
      { numRuns: 500 },
    );
  });

  it.each([
    ['the empty string', ''],
    ['a word', 'tenant'],
    ['too few hex digits at the end', '1234567'],
    ['a UUID cut short', '0190f4c2-1a2b-7c3d-8e4f-0000800'],
    ['a non-hex digit at the end', '0190f4c2-1a2b-7c3d-8e4f-00008000002g'],
    ['a UUID with a trailing space', '0190f4c2-1a2b-7c3d-8e4f-00008000002a '],
    ['a UUID in braces', '{0190f4c2-1a2b-7c3d-8e4f-00008000002a}'],
  ])('throws a TypeError for %s', (_what, input) => {
    expect(() => shardOf(input)).toThrow(TypeError);
  });
});

describe('shardOf and chime_shard_of (migration 0013) on PGlite', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore({ kind: 'pglite' });
  });
  afterAll(async () => {
    await store?.close();
  });

  async function sqlShard(id: string): Promise<number> {
    const [row] = await query<{ s: number }>(store.database.db, sql`select chime_shard_of(${id}::uuid) as s`);
    return Number(row!.s);
  }

  it('agree on fixed examples, the high bit of the last 32 bits set or not', async () => {
    for (const id of [
      '00000000-0000-0000-0000-000000000000',
      '00000000-0000-0000-0000-00000000003f',
      '00000000-0000-0000-0000-00007fffffff',
      '00000000-0000-0000-0000-000080000000',
      '00000000-0000-0000-0000-0000ffffffc1',
      'ffffffff-ffff-ffff-ffff-ffffffffffff',
      'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFE',
    ]) {
      expect({ id, shard: await sqlShard(id) }).toEqual({ id, shard: shardOf(id) });
    }
  });

  it('agree on random ids, lower- and upper-case', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uuid(), fc.boolean(), async (id, upper) => {
        const input = upper ? id.toUpperCase() : id;
        expect(await sqlShard(input)).toBe(shardOf(input));
      }),
      { numRuns: 400 },
    );
  });

  it('agree on the ids Chime makes (v7) and v4 ids, 500 of each in one statement', async () => {
    const gen = new IdGenerator();
    const ids = [...Array.from({ length: 500 }, () => gen.next()), ...Array.from({ length: 500 }, () => v4().toUpperCase())];
    const rows = await query<{ id: string; s: number }>(
      store.database.db,
      sql`select t.id, chime_shard_of(t.id::uuid) as s from unnest(${`{${ids.join(',')}}`}::text[]) as t(id)`,
    );
    expect(rows).toHaveLength(ids.length);
    const mismatches = rows.filter((r) => Number(r.s) !== shardOf(r.id));
    expect(mismatches).toEqual([]);
  });
});

/** `gen`'s ids, one a call. */
const idsOf = (gen: IdGenerator) => () => gen.next();
/** A clock one millisecond further on at each reading. */
function steppingClock(): () => number {
  let t = Date.UTC(2030, 0, 1);
  return () => t++;
}

describe('shardOf spreads tenants over the buckets', () => {
  /** How many of `ids` fall in each bucket. */
  function histogram(ids: readonly string[]): number[] {
    const counts = new Array<number>(SHARD_COUNT).fill(0);
    for (const id of ids) counts[shardOf(id)]!++;
    return counts;
  }

  it.each([
    ['v4 (random)', () => v4()],
    ['v7 (as Chime makes tenant ids, many in one millisecond)', idsOf(new IdGenerator())],
    ['v7 (one per millisecond)', idsOf(new IdGenerator(steppingClock()))],
  ])('10,000 %s ids fill all 64 buckets, none with more than 2.5 times the mean', (_what, make) => {
    const counts = histogram(Array.from({ length: 10_000 }, make));
    const mean = 10_000 / SHARD_COUNT;
    expect(counts.filter((c) => c === 0)).toEqual([]);
    expect(Math.max(...counts)).toBeLessThanOrEqual(2.5 * mean);
  });
});
