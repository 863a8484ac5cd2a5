/**
 * The fairness policy of claims (docs/design.md, "Partitioning and fairness"): a claim of `limit` runs is shared out
 * over the buckets that have runs due, round-robin, so that one tenant's backlog (which sits in its bucket) takes at
 * most its share of each claim and never delays the runs of other buckets behind it. Within a bucket, runs are
 * claimed in due order, so a tenant's own runs keep their order.
 */

/**
 * A bucket with waiting runs and the due time of its earliest (epoch ms); `flows`: it has flow controls, whose runs the
 * claim takes through them (src/store/queue/claim-flow-runs.ts).
 */
export type BucketDue = { shard: number; dueAtMs: number; flows?: boolean };

/** One bucket's part of a claim. */
export type BucketShare = { shard: number; limit: number };

/**
 * Where the next claim's round starts: the bucket after the last one served. Kept by each dispatcher, so successive
 * claims that cannot serve every due bucket (limit smaller than their number) serve the others next.
 */
export class Rotation {
  /** The first bucket (by number) the next round serves. */
  start = 0;
}

/**
 * Shares `limit` runs out over the buckets whose earliest run is due by `horizonAtMs` (epoch ms): each gets
 * ⌊limit / k⌋ and the first `limit mod k` of the round one more, the round starting at `rotation.start` and wrapping
 * around; buckets left with 0 (more buckets due than `limit`) are skipped, and the rotation moves past the last one
 * served.
 * @param buckets any order; buckets not due by the horizon are left out
 * @param limit most runs to claim in all (≥ 0)
 * @returns the shares, in round order, each with limit ≥ 1; empty when nothing is due or `limit` is 0
 */
export function shareClaim(buckets: readonly BucketDue[], limit: number, horizonAtMs: number, rotation: Rotation): BucketShare[] {
  const due = buckets.filter((b) => b.dueAtMs <= horizonAtMs).sort((a, b) => a.shard - b.shard);
  if (due.length === 0 || limit <= 0) return [];
  const first = due.findIndex((b) => b.shard >= rotation.start);
  const round = first <= 0 ? due : [...due.slice(first), ...due.slice(0, first)];
  const base = Math.floor(limit / round.length);
  const extra = limit % round.length;
  const shares = round.map((b, i) => ({ shard: b.shard, limit: base + (i < extra ? 1 : 0) })).filter((s) => s.limit > 0);
  // A round that served every due bucket starts the next one a bucket later, so the remainder's extra runs move on;
  // a partial round continues after the last bucket it served.
  rotation.start = (shares.length === round.length ? round[0]! : shares[shares.length - 1]!).shard + 1;
  return shares;
}

/**
 * A second pass for what the first left unclaimed: buckets that returned all of their share may have more due, so
 * `left` runs are shared out over them in the first pass's order (same rule), the others having run dry. The rotation
 * is the first pass's to move: the leftover serves buckets that pass already served.
 * @param served the first pass's shares, in its order, with how many runs each claim returned
 * @returns the shares of the second pass (empty when nothing is left or no bucket filled its share)
 */
export function shareLeftover(served: readonly (BucketShare & { claimed: number })[], left: number): BucketShare[] {
  const full = served.filter((s) => s.claimed >= s.limit);
  if (full.length === 0 || left <= 0) return [];
  const base = Math.floor(left / full.length);
  const extra = left % full.length;
  return full.map((s, i) => ({ shard: s.shard, limit: base + (i < extra ? 1 : 0) })).filter((s) => s.limit > 0);
}
