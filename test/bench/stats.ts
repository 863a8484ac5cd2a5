/** Small statistics helpers for the benchmark: nearest-rank percentiles of fire lags. */

/** Fire-lag summary in ms (lag = receive time − scheduled time; negative = fired early). */
export type LagSummary = {
  count: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  min: number;
  mean: number;
  /** Callbacks received before their scheduled time (must be 0). */
  early: number;
};

/**
 * Nearest-rank percentile (the smallest value with at least `p` of the values at or below it) of an ascending
 * array; NaN when empty.
 * @param p fraction in (0, 1]
 */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

/** Summarises lags in ms (sorts a copy). */
export function summarizeLags(lags: ArrayLike<number>): LagSummary {
  const sorted = Float64Array.from(lags).sort();
  let sum = 0;
  let early = 0;
  for (const v of sorted) {
    sum += v;
    if (v < 0) early++;
  }
  return {
    count: sorted.length,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    p999: percentile(sorted, 0.999),
    max: sorted.length ? sorted[sorted.length - 1]! : Number.NaN,
    min: sorted.length ? sorted[0]! : Number.NaN,
    mean: sorted.length ? sum / sorted.length : Number.NaN,
    early,
  };
}
