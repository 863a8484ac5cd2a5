/** When the claim pacer (claim-pacer.ts) claims next, as a pure function of the earliest due time and the clock. */
import type { ClaimPacerOptions } from './claim-pacer.ts';

/** Sleep when due runs exist but none could be claimed (other dispatchers hold them), in ms. */
export const CONTENDED_SLEEP_MS = 10;

/**
 * How long the loop waits before its next claim, in ms (0: claim now), given the earliest due time `dueMs` of a
 * waiting run (epoch ms, null: none) at `nowMs`. A run is claimed once it enters the lookahead, and claims ahead are
 * gathered: a run entering the lookahead waits up to a fifth of it for the ones behind it, and one already inside it
 * is claimed within a fifth of it or half its remaining time, whichever is sooner, so steady traffic makes a claim per
 * fifth of the lookahead rather than one per run. A run already due is claimed at once, unless `claimIfDue` is false
 * (the last claim found nothing: other dispatchers hold the due runs), then after CONTENDED_SLEEP_MS. Never longer
 * than `pollMs`.
 */
export function claimWaitMs(
  dueMs: number | null,
  nowMs: number,
  o: Pick<ClaimPacerOptions, 'lookaheadMs' | 'pollMs'>,
  claimIfDue: boolean,
): number {
  if (dueMs === null) return o.pollMs;
  const gather = Math.floor(o.lookaheadMs / 5);
  const claimAt = dueMs - o.lookaheadMs;
  if (claimAt > nowMs) return Math.min(Math.max(claimAt - nowMs, gather), o.pollMs);
  if (dueMs > nowMs) return Math.floor(Math.min(gather, (dueMs - nowMs) / 2));
  return claimIfDue ? 0 : CONTENDED_SLEEP_MS;
}
