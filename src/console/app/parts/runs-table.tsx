/**
 * The table of runs shared by a job's page and the runs feed: newest first by creation (the API's order, shown as
 * its own column), each row's scheduled time a link to the run and its attempts.
 */
import type { Run } from '../types.ts';
import { SortedHeader, Status, Time } from '../ui.tsx';
import { JobLink } from './job-names.tsx';
import { createdAtOfId } from './run-order.ts';

/** What the lists of runs are sorted by, in words (under the table's caption). */
export const RUNS_ORDER =
  'Newest first, by when each run was created (a run is created when it is queued; a schedule queues its next run early).';

/**
 * Runs as table rows: created (the order), scheduled for (a link to the run), the job when `jobName` is given (the
 * feed), trigger, status, attempts, response status and error.
 * @param jobName the job's name by id (null: none; undefined: not known yet); leave it out to hide the job column
 * @param zone the job's own time zone (a cron schedule's), shown beside the viewer's
 */
export function RunsTable({
  runs,
  jobName,
  busy,
  zone,
}: {
  runs: Run[];
  jobName?: (jobId: string) => string | null | undefined;
  busy?: boolean;
  zone?: string | undefined;
}) {
  return (
    <div class="table-wrap" aria-busy={busy ? 'true' : undefined}>
      <table class="runs stack">
        <caption class="order">{RUNS_ORDER}</caption>
        <thead>
          <tr>
            <SortedHeader label="Created" />
            <th scope="col">Scheduled for</th>
            {jobName && <th scope="col">Job</th>}
            <th scope="col">Trigger</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Response status</th>
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.runId}>
              <td class="created" data-label="Created">
                <Time iso={createdAtOfId(r.runId)} />
              </td>
              <td class="when" data-label="Scheduled for">
                <a href={`/console/runs/${r.runId}`}>
                  <Time iso={r.scheduledFor} zone={zone} />
                </a>
              </td>
              {jobName && (
                <td class="job" data-label="Job">
                  <JobLink jobId={r.jobId} name={jobName(r.jobId)} />
                </td>
              )}
              <td data-label="Trigger">{r.trigger}</td>
              <td data-label="Status">
                <Status status={r.status} />
              </td>
              <td data-label="Attempts">{r.attempts}</td>
              <td data-label="Response status">{r.responseStatus ?? <span class="muted">—</span>}</td>
              <td class="wrap error-text" data-label="Error">
                {r.error ?? <span class="muted">—</span>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
