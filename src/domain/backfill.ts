/**
 * Which past occurrences a backfill covers (API.md "Richer schedules", `POST /v1/jobs/:jobId/backfill`): a job's
 * occurrences in [from, to) as its calendar makes them fire. Pure; the store adds the runs (src/store/backfill.ts).
 */
import { nextCalendarOccurrence } from './calendar.ts';
import type { PlanRule } from './plan.ts';
import { nextOccurrence } from './schedule.ts';

/** A backfill call's range, [fromMs, toMs) in UTC epoch ms, and the most runs it makes (`limit`). */
export type BackfillRange = { fromMs: number; toMs: number; limit: number };

/** Runs one backfill call creates when it names no `limit`, and the most it may name. */
export const DEFAULT_BACKFILL_LIMIT = 100;
export const MAX_BACKFILL_LIMIT = 1000;

/**
 * Most occurrences a backfill range may hold. Every call walks its whole range (to count `remaining`), one
 * `nextOccurrence` per occurrence, and a cron expression is parsed each time (a calendar's `next` roll looks up
 * several per day): 10,000 keep the worst walk to seconds (the store pauses in it for other requests).
 */
export const MAX_BACKFILL_OCCURRENCES = 10_000;

/**
 * The occurrences of `rule`'s schedule in [fromMs, toMs) (UTC epoch ms), ascending, as its calendar makes them fire:
 * moved by `next` / `previous` (two that land on one instant fire once), those `skip` drops left out; jitter and
 * `maxRuns` play no part (a backfilled run is sent when it is made, and is not one of the job's scheduled runs). A
 * generator, so the caller bounds the walk and may pause in it.
 * @throws Error as `nextOccurrence` for a schedule `scheduleIssues` would refuse
 */
export function* occurrencesIn(rule: Pick<PlanRule, 'schedule' | 'calendar' | 'roll'>, fromMs: number, toMs: number): Generator<number> {
  const { schedule, calendar, roll } = rule;
  const next = (t: number) =>
    calendar !== null && roll !== null ? nextCalendarOccurrence(schedule, calendar, roll, t) : nextOccurrence(schedule, t);
  for (let t = next(fromMs - 1); t !== null && t < toMs; t = next(t)) yield t;
}
