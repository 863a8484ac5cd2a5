/** The table of runs shared by a job's page and the runs feed: each row's time links to the run and its attempts. */
import type { Run } from './types.ts';
import { Status, Time } from './ui.tsx';
import { JobLink } from './pages/dead-letters.tsx';

/**
 * Runs as table rows: scheduled for (a link to the run), the job when `jobName` is given (the feed), trigger, status,
 * attempts, response status and error.
 * @param jobName the job's name by id (null: none; undefined: not known yet); leave it out to hide the job column
 */
export function RunsTable({ runs, jobName, busy }: { runs: Run[]; jobName?: (jobId: string) => string | null | undefined; busy?: boolean }) {
  return (
    <div class="table-wrap" aria-busy={busy ? 'true' : undefined}>
      <table>
        <thead>
          <tr>
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
              <td class="when">
                <a href={`/console/runs/${r.runId}`}>
                  <Time iso={r.scheduledFor} />
                </a>
              </td>
              {jobName && (
                <td class="job">
                  <JobLink jobId={r.jobId} name={jobName(r.jobId)} />
                </td>
              )}
              <td>{r.trigger}</td>
              <td>
                <Status status={r.status} />
              </td>
              <td>{r.attempts}</td>
              <td>{r.responseStatus ?? <span class="muted">—</span>}</td>
              <td class="wrap error-text">{r.error ?? <span class="muted">—</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
