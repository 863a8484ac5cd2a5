/**
 * Planning a job's next scheduled run: which occurrence comes next (its schedule, its calendar, its `maxRuns`), when
 * that run is due (the jitter offset), and when the job next fires (`nextRunAt`). Pure; the store applies it at
 * registration, at the claim that advances a job, at a re-plan and at a `skip-next` (API.md "Richer schedules").
 */
import { type Calendar, type CalendarRoll, isBusinessInstant, nextCalendarOccurrence } from './calendar.ts';
import { jitterOffsetMs, nextOccurrence, type Schedule } from './schedule.ts';
import type { JitterMode } from './states.ts';

/** What decides a job's occurrences and their due times. */
export type PlanRule = {
  jobId: string;
  schedule: Schedule;
  /** The job's calendar as stored, with its roll; null: none (or the calendar is gone). */
  calendar: Calendar | null;
  roll: CalendarRoll | null;
  jitterMs: number;
  jitterMode: JitterMode;
  /** The job completes after this many scheduled runs; null: no limit. */
  maxRuns: number | null;
  /** Scheduled runs made so far, including the one whose claim plans this (`jobs.scheduled_runs` + 1 there). */
  scheduledRuns: number;
};

/**
 * The next scheduled run to make: `occurrenceMs` (its `scheduled_for`, UTC epoch ms), `dueMs` (when it is claimed and
 * sent: the occurrence plus the jitter offset; for `spread` the store places it, src/store/queue/spread-runs.ts), and
 * `firesAtMs`, the job's `nextRunAt`: the due time, or, when this occurrence falls on a day the calendar skips (it
 * becomes a `skipped` run at its claim), when the first business-day occurrence after it is due.
 */
export type PlannedRun = { occurrenceMs: number; dueMs: number; firesAtMs: number | null };

/**
 * The job's first occurrence strictly after `afterMs` (UTC epoch ms) as its pending scheduled run, or null when none
 * is left (the schedule ended, or `maxRuns` runs were made).
 * @throws Error for a schedule `scheduleIssues` would refuse
 */
export function planAfter(rule: PlanRule, afterMs: number): PlannedRun | null {
  if (rule.maxRuns !== null && rule.scheduledRuns >= rule.maxRuns) return null;
  const { calendar, roll } = rule;
  // `skip` keeps every occurrence (those on non-business days become skipped runs); `next`/`previous` move them.
  const moves = calendar !== null && roll !== null && roll !== 'skip';
  const occurrenceMs = moves ? nextCalendarOccurrence(rule.schedule, calendar, roll, afterMs) : nextOccurrence(rule.schedule, afterMs);
  if (occurrenceMs === null) return null;
  if (calendar !== null && roll === 'skip' && !isBusinessInstant(calendar, occurrenceMs)) {
    const fires = nextCalendarOccurrence(rule.schedule, calendar, 'skip', occurrenceMs);
    return { occurrenceMs, dueMs: occurrenceMs, firesAtMs: fires === null ? null : fires + jitterOffset(rule, fires) };
  }
  const dueMs = occurrenceMs + jitterOffset(rule, occurrenceMs);
  return { occurrenceMs, dueMs, firesAtMs: dueMs };
}

/**
 * Whether the occurrence `occurrenceMs` falls on a day the job's calendar skips (`roll: skip`): its run ends `skipped`
 * with error `calendar` when claimed.
 */
export function skippedByCalendar(rule: Pick<PlanRule, 'calendar' | 'roll'>, occurrenceMs: number): boolean {
  return rule.calendar !== null && rule.roll === 'skip' && !isBusinessInstant(rule.calendar, occurrenceMs);
}

/**
 * The jitter offset of an occurrence in ms, in [0, jitterMs): `stable`, the job's own (`jitterOffsetMs`); `random`,
 * FNV-1a of the job id and the occurrence, so a new offset per occurrence that a re-plan or a restart computes the
 * same; `spread`, 0 here (the store places it where the destination is least busy).
 */
export function jitterOffset(rule: Pick<PlanRule, 'jobId' | 'jitterMs' | 'jitterMode'>, occurrenceMs: number): number {
  if (rule.jitterMs <= 0) return 0;
  switch (rule.jitterMode) {
    case 'stable':
      return jitterOffsetMs(rule.jobId, rule.jitterMs);
    case 'random':
      return jitterOffsetMs(`${rule.jobId}@${occurrenceMs}`, rule.jitterMs);
    case 'spread':
      return 0;
  }
}

/**
 * Where a re-plan after a calendar change starts a job's occurrences from (UTC epoch ms; the next is strictly after
 * it): after its last claimed occurrence (`lastRunMs`, so none already fired comes again) and, unless its pending
 * occurrence is already due (then from just before it, so it is not lost to the change), from now: occurrences the
 * change moves into the past are not sent late.
 * @param lastRunMs the job's last claimed scheduled occurrence, or null
 * @param pendingMs its pending scheduled run's occurrence, or null
 */
export function replanAfterMs(lastRunMs: number | null, pendingMs: number | null, nowMs: number): number {
  const from = pendingMs !== null && pendingMs <= nowMs ? pendingMs - 1 : nowMs - 1;
  return lastRunMs === null ? from : Math.max(lastRunMs, from);
}
