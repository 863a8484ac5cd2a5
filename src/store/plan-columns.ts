/**
 * The job columns the planner reads (src/domain/plan.ts `PlanRule`), as every statement that plans a scheduled run
 * selects them: the claim, a re-plan and `skip-next`. One place for the calendar's subquery and the row → rule mapping.
 */
import { type SQL, sql } from 'drizzle-orm';
import type { Calendar, CalendarRoll } from '../domain/calendar.ts';
import type { PlanRule } from '../domain/plan.ts';
import type { Schedule } from '../domain/schedule.ts';
import type { JitterMode } from '../domain/states.ts';

/** A row's plan columns, as `planColumns` selects them. */
export type PlanColumns = {
  schedule: Schedule;
  jitter_ms: number;
  jitter_mode: JitterMode;
  max_runs: number | null;
  scheduled_runs: number;
  calendar_roll: CalendarRoll | null;
  /** The job's calendar as stored, null when it names none (or the calendar is gone). */
  calendar: Calendar | null;
};

/**
 * The plan columns of `jobs j` in bucket `shard`: the job's own, and its calendar (`timezone`, `weekendDays`,
 * `holidays`) read from the tenant's calendars by key, only for a job that names one.
 */
export function planColumns(shard: number): SQL {
  return sql`j.schedule, j.jitter_ms, j.jitter_mode, j.max_runs, j.scheduled_runs, j.calendar_roll,
    case when j.calendar_key is not null then
      (select jsonb_build_object('timezone', c.timezone, 'weekendDays', c.weekend_days, 'holidays', c.holidays)
       from calendars c where c.shard = ${shard} and c.tenant_id = j.tenant_id and c.key = j.calendar_key)
    end as calendar`;
}

/**
 * The plan rule of job `jobId` from its row's plan columns, `scheduledRuns` as stored (a claim adds the one it
 * claims). A roll without its calendar (deleted since) is no roll.
 */
export function planRuleOf(jobId: string, r: PlanColumns): PlanRule {
  return {
    jobId,
    schedule: r.schedule,
    calendar: r.calendar,
    roll: r.calendar === null ? null : r.calendar_roll,
    jitterMs: r.jitter_ms,
    jitterMode: r.jitter_mode,
    maxRuns: r.max_runs,
    scheduledRuns: r.scheduled_runs,
  };
}
