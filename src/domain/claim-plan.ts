/**
 * What happens to a run the moment a dispatcher claims it: deliver it, hold it back (`buffer-one`), or end it without
 * a request, and which occurrence of its job comes next. Pure; the store applies the decision in the claim's
 * transaction, so the next occurrence is created exactly once (docs/design.md invariant 2).
 *
 * Catch-up after downtime: a claimed occurrence is *missed* when the job's following occurrence is already due.
 * - `all`: every missed occurrence runs, one after the other;
 * - `one` (default): this one runs, and the schedule resumes at the first occurrence after now;
 * - `none`: this one is `skipped`, and the schedule resumes at the first occurrence after now.
 * Overlap (API.md "Jobs", "Richer schedules"), for a scheduled occurrence while another run of the job is in flight:
 * - `skip`: it ends `skipped`;
 * - `buffer-one`: it waits, buffered, and starts when the run in flight ends; if one is already buffered, it ends
 *   `skipped`.
 */
import { type PlannedRun, type PlanRule, planAfter, skippedByCalendar } from './plan.ts';
import { type CatchUpPolicy, type OverlapPolicy, RUN_STATUS, RUN_TRIGGER, type RunTrigger } from './states.ts';
import { isPastWindow } from './window.ts';

export type ClaimInput = {
  trigger: RunTrigger;
  /** Attempts including the one being claimed (1 on the first claim). */
  attempt: number;
  scheduledForMs: number;
  /** The job's plan rule (schedule, calendar, jitter, maxRuns) with `scheduledRuns` as stored (before this claim). */
  plan: PlanRule;
  jobActive: boolean;
  catchUp: CatchUpPolicy;
  overlapPolicy: OverlapPolicy;
  relevancyWindowMs: number | null;
  /** Where the relevancy window starts (epoch ms): `scheduledForMs`, except for a backfilled run (its creation). */
  windowFromMs?: number;
  /** Another run of the same job is running (awaiting completion included) or retrying. */
  overlapBusy: boolean;
  /** The run was buffered and released by the end of the run before it: it already advanced its job, and it goes. */
  released?: boolean;
  /** The job already has a buffered run waiting (`buffer-one`). */
  bufferedWaiting?: boolean;
};

/** The error of a run its job's calendar skips (API.md "Richer schedules"). */
export const CALENDAR_SKIP_ERROR = 'calendar';

export type ClaimDecision = {
  /** `buffered`: the run goes back waiting, untouched but for its flag, until a run of its job ends. */
  outcome: typeof RUN_STATUS.running | typeof RUN_STATUS.expired | typeof RUN_STATUS.skipped | 'buffered';
  /** Why the run ends without a request. */
  reason: string | null;
  /** Whether this claim advances the job's schedule (first claim of a scheduled occurrence of an active job). */
  advances: boolean;
  /** The next scheduled run to create, or null when the schedule has none left. Meaningful if `advances`. */
  next: PlannedRun | null;
};

/** Decides a claimed run's fate at `nowMs` (UTC epoch ms). */
export function decideClaim(r: ClaimInput, nowMs: number): ClaimDecision {
  const advances = r.trigger === RUN_TRIGGER.schedule && r.attempt === 1 && r.jobActive && !r.released;
  let next: PlannedRun | null = null;
  let missed = false;
  if (advances) {
    const rule = { ...r.plan, scheduledRuns: r.plan.scheduledRuns + 1 };
    const following = planAfter(rule, r.scheduledForMs);
    missed = following !== null && following.occurrenceMs <= nowMs;
    next = missed && r.catchUp !== 'all' ? planAfter(rule, nowMs) : following;
  }
  const end = (outcome: ClaimDecision['outcome'], reason: string): ClaimDecision => ({ outcome, reason, advances, next });
  if (r.trigger === RUN_TRIGGER.schedule && skippedByCalendar(r.plan, r.scheduledForMs))
    return end(RUN_STATUS.skipped, CALENDAR_SKIP_ERROR);
  if (missed && r.catchUp === 'none') return end(RUN_STATUS.skipped, 'missed while no dispatcher ran (catchUp: none)');
  if (isPastWindow(r.windowFromMs ?? r.scheduledForMs, r.relevancyWindowMs, nowMs)) {
    return end(RUN_STATUS.expired, `not started within the relevancy window of ${r.relevancyWindowMs} ms`);
  }
  if (advances && r.overlapBusy && r.overlapPolicy === 'skip') {
    return end(RUN_STATUS.skipped, 'the previous run is still in flight (overlapPolicy: skip)');
  }
  if (advances && r.overlapBusy && r.overlapPolicy === 'buffer-one') {
    if (r.bufferedWaiting) return end(RUN_STATUS.skipped, 'a run is already buffered behind the one in flight (overlapPolicy: buffer-one)');
    return end('buffered', 'waits for the run in flight (overlapPolicy: buffer-one)');
  }
  return { outcome: RUN_STATUS.running, reason: null, advances, next };
}
