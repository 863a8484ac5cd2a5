/**
 * `/console/dead-letters` (optionally `?jobId=`): the runs that failed for good and are not dismissed, newest first by
 * creation (the API's order, shown as a column beside the failure time), with replay (one, the selected, or all of a
 * job's) and dismiss. The list updates itself (live, with a pause control).
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { qs } from '../api.ts';
import { JobLink, useJobNames } from '../parts/job-names.tsx';
import { RefreshPauser, useLiveRefresh } from '../parts/refresh-pauser.tsx';
import { createdAtOfId } from '../parts/run-order.ts';
import { useSession } from '../session.tsx';
import type { Page, Run } from '../types.ts';
import { ConfirmButton, ErrorNote, SortedHeader, Time, useAction, useAsync, usePager } from '../ui.tsx';

const PAGE_SIZE = 50;

/** The answer of `POST /v1/dead-letters/replay`. */
type ReplayResult = { replayed: number; runIds: string[]; remaining: number };

/** "1 dead letter", "3 dead letters". */
const deadLetters = (n: number) => `${n} dead letter${n === 1 ? '' : 's'}`;

/** The dead letters page: list, select, replay and dismiss the tenant's (or one job's) failed runs. */
export function DeadLettersPage() {
  const { api, can } = useSession();
  const writable = can('runs:write');
  const { query } = useLocation();
  const jobId = query.jobId || undefined;
  const pager = usePager(jobId ?? '');
  const list = useAsync(async (): Promise<Page<'runs', Run>> => {
    if (!jobId) return api<Page<'runs', Run>>('GET', `/v1/dead-letters${qs({ limit: PAGE_SIZE, cursor: pager.cursor })}`);
    // `/v1/dead-letters` takes no job filter: a job's failed runs from the feed, less those dismissed.
    const page = await api<Page<'runs', Run>>('GET', `/v1/runs${qs({ status: 'failed', jobId, limit: PAGE_SIZE, cursor: pager.cursor })}`);
    return { runs: page.runs.filter((r) => r.dismissedAt === null && r.trigger !== 'notification'), nextCursor: page.nextCursor };
  }, [jobId, pager.cursor]);
  const live = useLiveRefresh(list.refresh);
  const runs = list.data?.runs ?? [];
  const jobName = useJobNames(jobId ? [jobId, ...runs.map((r) => r.jobId)] : runs.map((r) => r.jobId));

  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  // Each action shows its outcome (or error), then reloads the list.
  const { busy, outcome, error: actionError, setOutcome, run: act } = useAction<ComponentChildren>(list.reload);

  // The selection holds only rows on the page.
  useEffect(() => {
    setSelected((s) => {
      const shown = new Set(runs.map((r) => r.runId));
      const kept = [...s].filter((id) => shown.has(id));
      return kept.length === s.size ? s : new Set(kept);
    });
  }, [list.data]);

  const replayOne = (runId: string) =>
    act(async () => {
      const r = await api<{ runId: string }>('POST', `/v1/runs/${encodeURIComponent(runId)}/replay`);
      return (
        <>
          Replayed 1: <a href={`/console/runs/${r.runId}`}>see the new run</a>
        </>
      );
    });

  const dismissOne = (runId: string) =>
    act(async () => {
      await api<void>('DELETE', `/v1/dead-letters/${encodeURIComponent(runId)}`);
      return 'Dismissed 1 dead letter.';
    });

  // `remaining` of a replay by run ids counts the selected ones left (over 1,000 only), not the list: the message says
  // what was replayed, and the count above the list what is left.
  const replaySelected = () =>
    act(async () => {
      const asked = selected.size;
      const r = await api<ReplayResult>('POST', '/v1/dead-letters/replay', { runIds: [...selected] });
      setSelected(new Set());
      const refused = asked - r.replayed;
      return `Replayed ${r.replayed} of the ${asked} selected${refused > 0 ? `; ${refused} could not be (their job is canceled)` : ''}.`;
    });

  const replayAllOfJob = (id: string) =>
    act(async () => {
      let replayed = 0;
      let remaining = 0;
      // Each call replays up to 1,000 (and dismisses them); go on while some are left and progress is made.
      for (;;) {
        const r = await api<ReplayResult>('POST', '/v1/dead-letters/replay', { jobId: id }).catch((err: unknown) => {
          if (replayed > 0) setOutcome(`Replayed ${replayed} of this job's dead letters; ${remaining} left.`);
          throw err;
        });
        replayed += r.replayed;
        remaining = r.remaining;
        if (remaining <= 0 || r.replayed === 0) break;
        setOutcome(`Replaying… ${replayed} so far; ${remaining} left`);
      }
      return `Replayed ${replayed} of this job's dead letters; ${remaining} left.`;
    });

  const allSelected = runs.length > 0 && runs.every((r) => selected.has(r.runId));
  const someSelected = runs.some((r) => selected.has(r.runId));
  const firstPage = pager.cursor === undefined;
  const empty = list.data !== undefined && runs.length === 0 && firstPage && !list.data.nextCursor;

  return (
    <section>
      <h1>Dead letters</h1>
      {jobId && (
        <p>
          Dead letters of job <JobLink jobId={jobId} name={jobName(jobId)} />. <a href="/console/dead-letters">Show every job's</a>
        </p>
      )}
      <p class="count">{countLine(list.data, firstPage, Boolean(jobId))}</p>
      <RefreshPauser live={live} />
      <ErrorNote error={list.error} />

      {/* biome-ignore lint/a11y/useSemanticElements: not a <fieldset>: its default border, padding and min-inline-size would change the layout of this flex toolbar */}
      <div class="toolbar" role="group" aria-label="Bulk actions" hidden={!writable}>
        <button type="button" class="primary" disabled={busy || selected.size === 0} onClick={replaySelected}>
          Replay selected
        </button>
        {jobId && (
          <button type="button" disabled={busy || empty} onClick={() => replayAllOfJob(jobId)}>
            Replay all of this job's
          </button>
        )}
        {selected.size > 0 && <span class="muted">{selected.size} selected</span>}
      </div>
      <div role="status" class="outcome">
        {outcome}
      </div>
      <ErrorNote error={actionError} />

      {empty ? (
        <p class="empty">No dead letters: every run that failed for good shows up here.</p>
      ) : (
        <div class="table-wrap" aria-busy={list.loading}>
          <table class="dead-letters stack">
            <caption class="order">Newest first, by when each run was created (not by when it failed).</caption>
            <thead>
              <tr>
                <th scope="col">
                  <input
                    type="checkbox"
                    class="check"
                    aria-label="Select all"
                    checked={allSelected}
                    disabled={runs.length === 0}
                    ref={(el) => {
                      if (el) el.indeterminate = someSelected && !allSelected;
                    }}
                    onChange={(e) => setSelected(e.currentTarget.checked ? new Set(runs.map((r) => r.runId)) : new Set())}
                  />
                </th>
                <SortedHeader label="Created" />
                <th scope="col">Failed at</th>
                <th scope="col">Job</th>
                <th scope="col">Attempts</th>
                <th scope="col">Response status</th>
                <th scope="col">Error</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {runs.map((r) => (
                <tr key={r.runId}>
                  <td class="select">
                    <input
                      type="checkbox"
                      class="check"
                      aria-label={`Select run ${r.runId}`}
                      checked={selected.has(r.runId)}
                      onChange={(e) => {
                        const on = e.currentTarget.checked;
                        setSelected((s) => {
                          const next = new Set(s);
                          if (on) next.add(r.runId);
                          else next.delete(r.runId);
                          return next;
                        });
                      }}
                    />
                  </td>
                  <td class="created" data-label="Created">
                    <Time iso={createdAtOfId(r.runId)} />
                  </td>
                  <td class="when" data-label="Failed at">
                    <a href={`/console/runs/${r.runId}`}>
                      <Time iso={r.finishedAt ?? r.scheduledFor} />
                    </a>
                  </td>
                  <td class="job" data-label="Job">
                    <JobLink jobId={r.jobId} name={jobName(r.jobId)} />
                  </td>
                  <td data-label="Attempts">{r.attempts}</td>
                  <td data-label="Response status">{r.responseStatus ?? <span class="muted">—</span>}</td>
                  <td class="wrap error-text" data-label="Error">
                    {r.error ?? <span class="muted">—</span>}
                  </td>
                  <td class="row-end">
                    <div class="row-actions" hidden={!writable}>
                      <button type="button" disabled={busy} onClick={() => replayOne(r.runId)}>
                        Replay
                      </button>
                      <ConfirmButton
                        label="Dismiss"
                        question="Dismiss this dead letter?"
                        confirmLabel="Yes, dismiss"
                        onConfirm={() => dismissOne(r.runId)}
                        disabled={busy}
                      />
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!empty && pager.controls(list.data?.nextCursor)}
    </section>
  );
}

/** "3 dead letters", with the page's place in a longer list; "Loading…" before the first answer. */
function countLine(data: Page<'runs', Run> | undefined, firstPage: boolean, ofJob: boolean): string {
  if (!data) return 'Loading…';
  const what = `${deadLetters(data.runs.length)}${ofJob ? ' of this job' : ''}`;
  if (firstPage && !data.nextCursor) return `${what}.`;
  return `${what} on this page${data.nextCursor ? '; more on older pages' : ''}.`;
}
