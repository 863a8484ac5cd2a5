/**
 * The claim-sharing policy of src/domain/fair-share.ts: `shareClaim` shares a claim's `limit` out over the buckets
 * with runs due by the horizon (exactly `limit` in all, at least 1 each, as even as whole runs allow, due buckets
 * only, in round order from the rotation's start, wrapping past the last bucket), and successive claims with one
 * `Rotation` serve the due buckets round-robin, so that none starves when the limit is smaller than their number;
 * `shareLeftover` shares what a first pass left over only among the buckets that filled their share.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BucketDue, type BucketShare, Rotation, shareClaim, shareLeftover } from '../../src/domain/fair-share.ts';
import { SHARD_COUNT } from '../../src/domain/shard.ts';

const HORIZON = 1_000_000;

/** A rotation starting at `start`. */
function rotationAt(start: number): Rotation {
  const r = new Rotation();
  r.start = start;
  return r;
}

/** Buckets due (at or before HORIZON) for each shard of `shards`. */
const dueAll = (shards: readonly number[]): BucketDue[] => shards.map((shard) => ({ shard, dueAtMs: HORIZON - 1 }));

const sum = (shares: readonly BucketShare[]) => shares.reduce((n, s) => n + s.limit, 0);
const shardsOf = (shares: readonly BucketShare[]) => shares.map((s) => s.shard);

/** Distinct shards in [0, SHARD_COUNT), in random order. */
const shardSetArb = (minLength: number, maxLength = SHARD_COUNT) =>
  fc.uniqueArray(fc.integer({ min: 0, max: SHARD_COUNT - 1 }), { minLength, maxLength });

/**
 * Buckets in random order, each due by HORIZON or not (some exactly at it, some just after), with the due set
 * returned alongside.
 */
const bucketsArb = fc
  .array(
    fc.record({
      shard: fc.integer({ min: 0, max: SHARD_COUNT - 1 }),
      dueAtMs: fc.oneof(
        fc.integer({ min: 0, max: HORIZON }),
        fc.constant(HORIZON),
        fc.constant(HORIZON + 1),
        fc.integer({ min: HORIZON + 1, max: 2 * HORIZON }),
      ),
    }),
    { maxLength: SHARD_COUNT },
  )
  .map((bs) => {
    // One entry per shard, as the due-buckets query returns them.
    const seen = new Set<number>();
    return bs.filter((b) => {
      if (seen.has(b.shard)) return false;
      seen.add(b.shard);
      return true;
    });
  });

/** A rotation start as a dispatcher may hold one: any bucket, or one past the last (after serving bucket 63). */
const startArb = fc.integer({ min: 0, max: SHARD_COUNT });
const limitArb = fc.oneof(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 300 }));

/** The due shards of `buckets` in round order: ascending from the first at or after `start`, then wrapping around. */
function roundOrder(buckets: readonly BucketDue[], start: number): number[] {
  const due = buckets
    .filter((b) => b.dueAtMs <= HORIZON)
    .map((b) => b.shard)
    .sort((a, b) => a - b);
  const first = due.findIndex((s) => s >= start);
  return first <= 0 ? due : [...due.slice(first), ...due.slice(0, first)];
}

describe('shareClaim: examples', () => {
  it('shares 10 runs over 4 due buckets as 3, 3, 2, 2 from the rotation start, and starts the next round a bucket later', () => {
    const rotation = rotationAt(5);
    const shares = shareClaim(dueAll([2, 7, 9, 40]), 10, HORIZON, rotation);
    expect(shares).toEqual([
      { shard: 7, limit: 3 },
      { shard: 9, limit: 3 },
      { shard: 40, limit: 2 },
      { shard: 2, limit: 2 },
    ]);
    // Every due bucket was served: the next round starts after this round's first, so the extra runs move on.
    expect(rotation.start).toBe(8);
  });

  it('moves the extra runs of a remainder round by round: over 4 calls of 5 runs to 4 buckets, each gets one extra', () => {
    const rotation = rotationAt(0);
    const extras = new Map<number, number>();
    for (let call = 0; call < 4; call++) {
      for (const s of shareClaim(dueAll([0, 1, 2, 3]), 5, HORIZON, rotation))
        if (s.limit === 2) extras.set(s.shard, (extras.get(s.shard) ?? 0) + 1);
    }
    expect([...extras.entries()].sort((a, b) => a[0] - b[0])).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
  });

  it('gives 1 run each to the first `limit` buckets of the round when more buckets are due than the limit', () => {
    const rotation = rotationAt(0);
    expect(shareClaim(dueAll([1, 2, 3, 4, 5]), 2, HORIZON, rotation)).toEqual([
      { shard: 1, limit: 1 },
      { shard: 2, limit: 1 },
    ]);
    expect(rotation.start).toBe(3);
    expect(shareClaim(dueAll([1, 2, 3, 4, 5]), 2, HORIZON, rotation)).toEqual([
      { shard: 3, limit: 1 },
      { shard: 4, limit: 1 },
    ]);
    expect(rotation.start).toBe(5);
  });

  it('counts a bucket due exactly at the horizon as due, and one due 1 ms after it as not due', () => {
    const shares = shareClaim(
      [
        { shard: 4, dueAtMs: HORIZON },
        { shard: 5, dueAtMs: HORIZON + 1 },
      ],
      6,
      HORIZON,
      new Rotation(),
    );
    expect(shares).toEqual([{ shard: 4, limit: 6 }]);
  });

  it('returns no shares, and leaves the rotation where it was, when no bucket is due or the limit is 0', () => {
    const rotation = rotationAt(17);
    expect(shareClaim([], 10, HORIZON, rotation)).toEqual([]);
    expect(shareClaim([{ shard: 3, dueAtMs: HORIZON + 1 }], 10, HORIZON, rotation)).toEqual([]);
    expect(shareClaim(dueAll([3, 20]), 0, HORIZON, rotation)).toEqual([]);
    expect(rotation.start).toBe(17);
  });

  it('wraps around: a start past the last due bucket begins the round at the lowest one', () => {
    const rotation = rotationAt(61);
    const buckets = dueAll([60, 3, 10]);
    const served: number[] = [];
    for (let i = 0; i < 4; i++) served.push(...shardsOf(shareClaim(buckets, 1, HORIZON, rotation)));
    expect(served).toEqual([3, 10, 60, 3]);
  });

  it('wraps around from a start of SHARD_COUNT (the last bucket, 63, was served last)', () => {
    const rotation = rotationAt(SHARD_COUNT);
    expect(shareClaim(dueAll([63, 0, 1]), 2, HORIZON, rotation)).toEqual([
      { shard: 0, limit: 1 },
      { shard: 1, limit: 1 },
    ]);
    expect(shareClaim(dueAll([63, 0, 1]), 2, HORIZON, rotation)).toEqual([
      { shard: 63, limit: 1 },
      { shard: 0, limit: 1 },
    ]);
    expect(rotation.start).toBe(1);
  });

  it('takes the buckets in any order', () => {
    const a = shareClaim(dueAll([30, 2, 17, 9]), 6, HORIZON, rotationAt(10));
    const b = shareClaim(dueAll([2, 9, 17, 30]), 6, HORIZON, rotationAt(10));
    expect(a).toEqual(b);
    expect(shardsOf(a)).toEqual([17, 30, 2, 9]);
  });
});

describe('shareClaim: properties', () => {
  it('shares out exactly `limit` runs when at least one bucket is due, and none otherwise', () => {
    fc.assert(
      fc.property(bucketsArb, limitArb, startArb, (buckets, limit, start) => {
        const anyDue = buckets.some((b) => b.dueAtMs <= HORIZON);
        const shares = shareClaim(buckets, limit, HORIZON, rotationAt(start));
        expect(sum(shares)).toBe(anyDue ? limit : 0);
      }),
      { numRuns: 500 },
    );
  });

  it('gives every share a whole number of runs, at least 1', () => {
    fc.assert(
      fc.property(bucketsArb, limitArb, startArb, (buckets, limit, start) => {
        for (const s of shareClaim(buckets, limit, HORIZON, rotationAt(start))) {
          expect(Number.isInteger(s.limit)).toBe(true);
          expect(s.limit).toBeGreaterThanOrEqual(1);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('gives no share to a bucket not due by the horizon, and at most one share to each bucket', () => {
    fc.assert(
      fc.property(bucketsArb, limitArb, startArb, (buckets, limit, start) => {
        const due = new Set(buckets.filter((b) => b.dueAtMs <= HORIZON).map((b) => b.shard));
        const shards = shardsOf(shareClaim(buckets, limit, HORIZON, rotationAt(start)));
        for (const s of shards) expect(due.has(s)).toBe(true);
        expect(new Set(shards).size).toBe(shards.length);
      }),
      { numRuns: 500 },
    );
  });

  it('when the limit is at least the number of due buckets, gives every due bucket a share, differing by at most 1', () => {
    fc.assert(
      fc.property(bucketsArb, fc.integer({ min: 0, max: 300 }), startArb, (buckets, extra, start) => {
        const due = buckets.filter((b) => b.dueAtMs <= HORIZON).map((b) => b.shard);
        fc.pre(due.length > 0);
        const shares = shareClaim(buckets, due.length + extra, HORIZON, rotationAt(start));
        expect(shardsOf(shares).sort((a, b) => a - b)).toEqual([...due].sort((a, b) => a - b));
        const limits = shares.map((s) => s.limit);
        expect(Math.max(...limits) - Math.min(...limits)).toBeLessThanOrEqual(1);
        // The larger shares come first in the round.
        expect([...limits].sort((a, b) => b - a)).toEqual(limits);
      }),
      { numRuns: 500 },
    );
  });

  it('when the limit is below the number of due buckets, gives 1 run each to `limit` buckets', () => {
    fc.assert(
      fc.property(shardSetArb(2), fc.nat(), startArb, (shards, l, start) => {
        const limit = 1 + (l % (shards.length - 1));
        const shares = shareClaim(dueAll(shards), limit, HORIZON, rotationAt(start));
        expect(shares).toHaveLength(limit);
        for (const s of shares) expect(s.limit).toBe(1);
      }),
      { numRuns: 500 },
    );
  });

  it('serves the buckets in round order from the rotation start, and moves the start past the last served (a full round: past its first)', () => {
    fc.assert(
      fc.property(bucketsArb, limitArb, startArb, (buckets, limit, start) => {
        const rotation = rotationAt(start);
        const shares = shareClaim(buckets, limit, HORIZON, rotation);
        const order = roundOrder(buckets, start);
        expect(shardsOf(shares)).toEqual(order.slice(0, shares.length));
        const next = shares.length === order.length ? shares[0] : shares[shares.length - 1];
        expect(rotation.start).toBe(next === undefined ? start : next.shard + 1);
      }),
      { numRuns: 500 },
    );
  });

  it('round-robin: with k due buckets and limit < k, successive claims serve every due bucket within ceil(k / limit) claims', () => {
    fc.assert(
      fc.property(shardSetArb(2), fc.nat(), startArb, (shards, l, start) => {
        const k = shards.length;
        const limit = 1 + (l % (k - 1));
        const rotation = rotationAt(start);
        const served: number[] = [];
        for (let call = 0; call < Math.ceil(k / limit); call++)
          served.push(...shardsOf(shareClaim(dueAll(shards), limit, HORIZON, rotation)));
        expect(new Set(served).size).toBe(k);
        // And no bucket comes round a second time before every bucket has come once.
        expect(new Set(served.slice(0, k)).size).toBe(k);
      }),
      { numRuns: 500 },
    );
  });

  it('round-robin: over many claims of limit < k, every due bucket is served the same number of times, give or take 1', () => {
    fc.assert(
      fc.property(shardSetArb(2), fc.nat(), startArb, fc.integer({ min: 1, max: 40 }), (shards, l, start, calls) => {
        const k = shards.length;
        const limit = 1 + (l % (k - 1));
        const rotation = rotationAt(start);
        const count = new Map<number, number>(shards.map((s) => [s, 0]));
        for (let call = 0; call < calls; call++) {
          for (const s of shareClaim(dueAll(shards), limit, HORIZON, rotation)) count.set(s.shard, count.get(s.shard)! + s.limit);
        }
        const counts = [...count.values()];
        expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
      }),
      { numRuns: 300 },
    );
  });
});

describe('shareLeftover', () => {
  it('shares the leftover only over buckets that claimed their whole share', () => {
    const shares = shareLeftover(
      [
        { shard: 1, limit: 3, claimed: 3 },
        { shard: 2, limit: 3, claimed: 1 },
        { shard: 5, limit: 2, claimed: 2 },
        { shard: 8, limit: 2, claimed: 0 },
      ],
      3,
    );
    expect(shares).toEqual([
      { shard: 1, limit: 2 },
      { shard: 5, limit: 1 },
    ]);
  });

  it('returns nothing when nothing is left or no bucket filled its share', () => {
    const full = [{ shard: 1, limit: 2, claimed: 2 }];
    expect(shareLeftover(full, 0)).toEqual([]);
    expect(
      shareLeftover(
        [
          { shard: 1, limit: 2, claimed: 1 },
          { shard: 4, limit: 1, claimed: 0 },
        ],
        5,
      ),
    ).toEqual([]);
  });

  it('a short bucket does not set the rotation back: the next claim serves the buckets after the first pass', () => {
    // 10 due buckets, claims of 3, bucket 2 always short: the leftover goes to bucket 0, the next round still starts at 3.
    const rotation = rotationAt(0);
    const first = shareClaim(dueAll([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]), 3, HORIZON, rotation);
    const served = first.map((s) => ({ ...s, claimed: s.shard === 2 ? 0 : s.limit }));
    expect(shareLeftover(served, 1)).toEqual([{ shard: 0, limit: 1 }]);
    expect(rotation.start).toBe(3);
    expect(shardsOf(shareClaim(dueAll([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]), 3, HORIZON, rotation))).toEqual([3, 4, 5]);
  });

  const servedArb = fc
    .tuple(
      shardSetArb(0),
      fc.array(fc.tuple(fc.integer({ min: 1, max: 20 }), fc.boolean(), fc.nat()), { minLength: SHARD_COUNT, maxLength: SHARD_COUNT }),
    )
    .map(([shards, draws]) =>
      shards.map((shard, i) => {
        const [limit, filled, short] = draws[i]!;
        return { shard, limit, claimed: filled ? limit : short % limit };
      }),
    );

  it('gives only to buckets that filled their share, shares out exactly `left` when one did, each share at least 1', () => {
    fc.assert(
      fc.property(servedArb, fc.integer({ min: 0, max: 200 }), (served, left) => {
        const full = new Set(served.filter((s) => s.claimed >= s.limit).map((s) => s.shard));
        const shares = shareLeftover(served, left);
        for (const s of shares) {
          expect(full.has(s.shard)).toBe(true);
          expect(s.limit).toBeGreaterThanOrEqual(1);
        }
        expect(new Set(shardsOf(shares)).size).toBe(shares.length);
        expect(sum(shares)).toBe(full.size > 0 ? left : 0);
      }),
      { numRuns: 500 },
    );
  });
});
