/**
 * The order of the API's lists, and the run a job ran last. Every list of the API is newest first by id (docs/api.md
 * "Lists"), and ids are UUID v7, whose first 48 bits are the creation time in ms: so the console can show the time a
 * list is sorted by, next to the times (scheduled, failed) that are not its order.
 */
import { FINAL_RUN_STATUSES, RUN_STATUS } from '../../../domain/states.ts';
import type { Run } from '../types.ts';

/** When the row with UUID v7 `id` was created (UTC ISO); null for an id that is not one. */
export function createdAtOfId(id: string): string | null {
  const hex = id.replace(/-/g, '');
  if (!/^[0-9a-f]{32}$/i.test(hex) || hex[12] !== '7') return null;
  return new Date(parseInt(hex.slice(0, 12), 16)).toISOString();
}

/** When a run happened: started, or for one ended without a request (expired, skipped at claim) its end. */
function happenedAt(run: Run): number | null {
  const at = run.startedAt ?? (run.status === RUN_STATUS.canceled ? null : run.finishedAt);
  return at ? Date.parse(at) : null;
}

/**
 * The run of `runs` (a job's newest, any trigger: schedule, manual or replay) that happened last, still going or
 * ended; null when none has (waiting and canceled runs have not).
 */
export function lastRunOf(runs: readonly Run[]): Run | null {
  let last: Run | null = null;
  for (const r of runs) {
    const at = happenedAt(r);
    if (at !== null && (last === null || at > happenedAt(last)!)) last = r;
  }
  return last;
}

/** Whether a run's status is final (FINAL_RUN_STATUSES). */
export function isFinal(run: Pick<Run, 'status'>): boolean {
  return FINAL_RUN_STATUSES.includes(run.status);
}
