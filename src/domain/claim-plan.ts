/**
 * What happens to a run the moment a dispatcher claims it: deliver it, or end it without a request, and which
 * occurrence of its job comes next. Pure; the store applies the decision in the claim's transaction, so the next
 * occurrence is created exactly once (docs/design.md invariant 2).
 *
 * Catch-up after downtime: a claimed occurrence is *missed* when the job's following occurrence is already due.
 * - `all`: every missed occurrence runs, one after the other;
 * - `one` (default): this one runs, and the schedule resumes at the first occurrence after now;
 * - `none`: this one is `skipped`, and the schedule resumes at the first occurrence after now.
 */
import { nextOccurrence, type Schedule } from './schedule.ts';
import { type CatchUpPolicy, type OverlapPolicy, RUN_STATUS, RUN_TRIGGER, type RunTrigger } from './states.ts';
import { isPastWindow } from './window.ts';

export type ClaimInput = {
  trigger: RunTrigger;
  /** Attempts including the one being claimed (1 on the first claim). */
  attempt: number;
  scheduledForMs: number;
  schedule: Schedule;
  jobActive: boolean;
  catchUp: CatchUpPolicy;
  overlapPolicy: OverlapPolicy;
  relevancyWindowMs: number | null;
  /** Another run of the same job is running or retrying. */
  overlapBusy: boolean;
};

export type ClaimDecision = {
  outcome: typeof RUN_STATUS.running | typeof RUN_STATUS.expired | typeof RUN_STATUS.skipped;
  /** Why the run ends without a request. */
  reason: string | null;
  /** Whether this claim advances the job's schedule (first claim of a scheduled occurrence of an active job). */
  advances: boolean;
  /** The next occurrence to create (epoch ms), or null when the schedule has none left. Meaningful if `advances`. */
  nextMs: number | null;
};

/** Decides a claimed run's fate at `nowMs` (UTC epoch ms). */
export function decideClaim(r: ClaimInput, nowMs: number): ClaimDecision {
  const advances = r.trigger === RUN_TRIGGER.schedule && r.attempt === 1 && r.jobActive;
  let nextMs: number | null = null;
  let missed = false;
  if (advances) {
    const following = nextOccurrence(r.schedule, r.scheduledForMs);
    missed = following !== null && following <= nowMs;
    nextMs = missed && r.catchUp !== 'all' ? nextOccurrence(r.schedule, nowMs) : following;
  }
  if (missed && r.catchUp === 'none') {
    return { outcome: RUN_STATUS.skipped, reason: 'missed while no dispatcher ran (catchUp: none)', advances, nextMs };
  }
  if (isPastWindow(r.scheduledForMs, r.relevancyWindowMs, nowMs)) {
    return {
      outcome: RUN_STATUS.expired,
      reason: `not started within the relevancy window of ${r.relevancyWindowMs} ms`,
      advances,
      nextMs,
    };
  }
  if (advances && r.overlapPolicy === 'skip' && r.overlapBusy) {
    return { outcome: RUN_STATUS.skipped, reason: 'the previous run is still in flight (overlapPolicy: skip)', advances, nextMs };
  }
  return { outcome: RUN_STATUS.running, reason: null, advances, nextMs };
}
