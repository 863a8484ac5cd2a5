/**
 * A job's result deliveries (API.md "Receiver control and result routing"): each run's result posted to the job's
 * `onSuccess` / `onFailure`, newest first, with how its delivery went. Shown on the job's page when the job routes
 * results or has delivered some.
 */
import { useEffect } from 'preact/hooks';
import { qs } from '../api.ts';
import { useSession } from '../session.tsx';
import type { Job, Page, ResultDelivery } from '../types.ts';
import { ErrorNote, SortedHeader, Status, Time, useAsync, usePager } from '../ui.tsx';

const PAGE_SIZE = 25;

/** The job's result deliveries, refreshed with the page (`live` ticks). */
export function ResultDeliveries({ job, live }: { job: Job; live: number }) {
  const { api } = useSession();
  const pager = usePager(job.jobId);
  const res = useAsync(
    () =>
      api<Page<'deliveries', ResultDelivery>>(
        'GET',
        `/v1/jobs/${encodeURIComponent(job.jobId)}/result-deliveries${qs({ limit: PAGE_SIZE, cursor: pager.cursor })}`,
      ),
    [job.jobId, pager.cursor],
  );
  const { refresh } = res;
  useEffect(() => {
    if (live > 0) refresh();
  }, [live, refresh]);
  const list = res.data?.deliveries;
  if (!job.onSuccess && !job.onFailure && (!list || list.length === 0)) return null;
  return (
    <section aria-labelledby="results-h">
      <h2 id="results-h">Result deliveries</h2>
      <p class="hint">
        {job.onSuccess && `Succeeded runs post their result to ${job.onSuccess.url}. `}
        {job.onFailure && `Failed runs post their result to ${job.onFailure.url}.`}
      </p>
      <ErrorNote error={res.error} />
      {list && list.length === 0 && <p class="muted">No result delivered yet.</p>}
      {list && list.length > 0 && (
        <div class="table-wrap" aria-busy={res.loading ? 'true' : undefined}>
          <table class="deliveries stack">
            <thead>
              <tr>
                <SortedHeader label="Created" />
                <th scope="col">Result of</th>
                <th scope="col">Type</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Response status</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {list.map((d) => (
                <tr key={d.deliveryId}>
                  <td data-label="Created">
                    <Time iso={d.createdAt} />
                  </td>
                  <td data-label="Result of">{d.runId ? <a href={`/console/runs/${d.runId}`}>run</a> : <span class="muted">—</span>}</td>
                  <td class="mono" data-label="Type">
                    {d.type}
                  </td>
                  <td data-label="Status">
                    <Status status={d.status} />
                  </td>
                  <td data-label="Attempts">{d.attempts}</td>
                  <td data-label="Response status">{d.responseStatus ?? <span class="muted">—</span>}</td>
                  <td class="wrap error-text" data-label="Error">
                    {d.error ?? <span class="muted">—</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list && pager.controls(res.data?.nextCursor)}
    </section>
  );
}
