/**
 * `/console/runs/:runId`: one run, its attempts (each HTTP request, with the response's headers and excerpt as text,
 * and an async job's report), the receiver's output, and for a dead letter (failed, not dismissed) replay and dismiss.
 * A run awaiting its receiver's report shows when the report is due and the last heartbeat. A run not yet final is
 * read again every 2 s.
 */

import { useEffect } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { FINAL_RUN_STATUSES } from '../../../domain/states.ts';
import { JobLink, useJobNames } from '../parts/job-names.tsx';
import { useSession } from '../session.tsx';
import type { RunWithAttempts } from '../types.ts';
import { ConfirmButton, ErrorNote, Status, Time, useAction, useAsync } from '../ui.tsx';

const POLL_MS = 2_000;

/** The run page: facts, attempt log, and the dead letter actions. */
export function RunPage() {
  const { api, can } = useSession();
  const { route } = useLocation();
  const runId = useRoute().params.runId ?? '';
  const res = useAsync(() => api<RunWithAttempts>('GET', `/v1/runs/${encodeURIComponent(runId)}`), [runId]);
  // After navigating from one run to another, the last run is kept while the new one loads: not shown as this one.
  const run = res.data?.runId === runId ? res.data : undefined;
  const jobName = useJobNames(run ? [run.jobId] : []);
  // The note says what an action did; each action reloads the run.
  const { busy, outcome: note, error: actionError, clear, run: act } = useAction<string>(res.reload);
  useEffect(clear, [runId, clear]);

  // Poll while the run may still change (scheduled, running, retrying), going on after a failed read of it.
  const final = run !== undefined && FINAL_RUN_STATUSES.includes(run.status);
  const { reload, loading } = res;
  useEffect(() => {
    if (!run || final || loading) return;
    const t = setTimeout(reload, POLL_MS);
    return () => clearTimeout(t);
  }, [final, loading, run, reload]);

  const replay = () =>
    act(async () => {
      const r = await api<{ runId: string }>('POST', `/v1/runs/${encodeURIComponent(runId)}/replay`);
      route(`/console/runs/${r.runId}`);
      return null;
    });
  const dismiss = () =>
    act(async () => {
      await api<void>('DELETE', `/v1/dead-letters/${encodeURIComponent(runId)}`);
      return 'Dismissed: this run is no longer listed among the dead letters.';
    });

  return (
    <section>
      <h1>Run</h1>
      {!run && res.error ? <ErrorNote error={res.error} /> : null}
      {!run && !res.error && <p class="muted">Loading…</p>}
      {run && (
        <>
          {!final && <p class="hint">This run is not finished yet: the page updates every 2 seconds.</p>}
          <dl class="facts">
            <dt>Run ID</dt>
            <dd class="mono">{run.runId}</dd>
            <dt>Job</dt>
            <dd>
              <JobLink jobId={run.jobId} name={jobName(run.jobId)} />
            </dd>
            <dt>Status</dt>
            <dd>
              <Status status={run.status} />
            </dd>
            <dt>Trigger</dt>
            <dd>{run.trigger}</dd>
            <dt>Scheduled for</dt>
            <dd>
              <Time iso={run.scheduledFor} />
            </dd>
            <dt>Started</dt>
            <dd>
              <Time iso={run.startedAt} />
            </dd>
            <dt>Finished</dt>
            <dd>
              <Time iso={run.finishedAt} />
            </dd>
            {run.nextAttemptAt && (
              <>
                <dt>Next attempt</dt>
                <dd>
                  <Time iso={run.nextAttemptAt} />
                </dd>
              </>
            )}
            <dt>Attempts</dt>
            <dd>{run.attempts}</dd>
            <dt>Response status</dt>
            <dd>{run.responseStatus ?? <span class="muted">—</span>}</dd>
            <dt>Error</dt>
            <dd>{run.error ?? <span class="muted">—</span>}</dd>
            <dt>Dismissed at</dt>
            <dd>
              <Time iso={run.dismissedAt} />
            </dd>
            {run.awaitingCompletion && (
              <>
                <dt>Awaiting completion</dt>
                <dd>
                  the receiver acknowledged the attempt and reports its end by <Time iso={run.completionDeadline} />
                </dd>
              </>
            )}
            {run.lastHeartbeatAt && (
              <>
                <dt>Last heartbeat</dt>
                <dd>
                  <Time iso={run.lastHeartbeatAt} />
                  {run.progress !== null && run.progress !== undefined && <pre class="json">{JSON.stringify(run.progress, null, 2)}</pre>}
                </dd>
              </>
            )}
          </dl>
          {run.output !== null && run.output !== undefined && (
            <>
              <h2 id="output-h">Output</h2>
              <pre class="json" id="output">
                {JSON.stringify(run.output, null, 2)}
              </pre>
            </>
          )}
          {res.error ? <ErrorNote error={res.error} /> : null}

          {can('runs:write') && run.status === 'failed' && run.dismissedAt === null && (
            // biome-ignore lint/a11y/useSemanticElements: not a <fieldset>: its default border, padding and min-inline-size would change the layout of this flex row
            <div class="actions" role="group" aria-label="Dead letter">
              <button type="button" class="primary" disabled={busy} onClick={replay}>
                Replay
              </button>
              <ConfirmButton
                label="Dismiss"
                question="Dismiss this dead letter?"
                confirmLabel="Yes, dismiss"
                onConfirm={dismiss}
                disabled={busy}
              />
            </div>
          )}
          <ErrorNote error={actionError} />
          <p role="status" class="outcome">
            {note}
          </p>

          <h2>Attempts</h2>
          {run.attemptLog.length === 0 ? (
            <p class="muted">No attempts yet.</p>
          ) : (
            <div class="table-wrap">
              <table class="attempts stack">
                <thead>
                  <tr>
                    <th scope="col">Attempt</th>
                    <th scope="col">Started</th>
                    <th scope="col">Duration (ms)</th>
                    <th scope="col">Status code</th>
                    <th scope="col">Error class</th>
                    <th scope="col">Error</th>
                    <th scope="col">Reported</th>
                    <th scope="col">Response</th>
                  </tr>
                </thead>
                <tbody>
                  {run.attemptLog.map((a) => (
                    <tr key={a.attempt}>
                      <td data-label="Attempt">{a.attempt}</td>
                      <td data-label="Started">
                        <Time iso={a.startedAt} />
                      </td>
                      <td data-label="Duration (ms)">{a.durationMs ?? <span class="muted">—</span>}</td>
                      <td data-label="Status code">{a.responseStatus ?? <span class="muted">—</span>}</td>
                      <td data-label="Error class">{a.errorClass ?? <span class="muted">—</span>}</td>
                      <td class="wrap error-text" data-label="Error">
                        {a.error ?? <span class="muted">—</span>}
                      </td>
                      <td data-label="Reported">
                        {a.reportedStatus ? (
                          <>
                            {a.reportedStatus} <Time iso={a.completedAt} />
                          </>
                        ) : (
                          <span class="muted">—</span>
                        )}
                      </td>
                      <td class="response" data-label="Response">
                        {a.responseHeaders && Object.keys(a.responseHeaders).length > 0 && (
                          <details>
                            <summary>Headers ({Object.keys(a.responseHeaders).length})</summary>
                            <pre>
                              {Object.entries(a.responseHeaders)
                                .map(([name, value]) => `${name}: ${value}`)
                                .join('\n')}
                            </pre>
                          </details>
                        )}
                        {a.responseBodyExcerpt ? <pre>{a.responseBodyExcerpt}</pre> : !a.responseHeaders && <span class="muted">—</span>}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}
