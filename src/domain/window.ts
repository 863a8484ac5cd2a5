/**
 * The relevancy window: a run that cannot start before `scheduledFor + relevancyWindowMs` is `expired` and never
 * sent late (docs/design.md invariant 5). Times are UTC epoch ms; a null window means "no deadline".
 */

/** The last instant (epoch ms) a run may start, or null without a window. */
export function startDeadline(scheduledForMs: number, relevancyWindowMs: number | null): number | null {
  return relevancyWindowMs === null ? null : scheduledForMs + relevancyWindowMs;
}

/** True when an attempt starting at `atMs` would be outside the run's relevancy window. */
export function isPastWindow(scheduledForMs: number, relevancyWindowMs: number | null, atMs: number): boolean {
  const deadline = startDeadline(scheduledForMs, relevancyWindowMs);
  return deadline !== null && atMs > deadline;
}
