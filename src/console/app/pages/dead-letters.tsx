/**
 * `/console/dead-letters` (optionally `?jobId=`): the runs that failed for good and are not dismissed, with replay
 * (one, the selected, or all of a job's) and dismiss; plus `DeadLetterBanner`, the notice other pages show while any
 * dead letter waits, and `useJobNames` / `JobLink`, which the run pages share to show jobs by name.
 */
import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiProblem, qs } from '../api.ts';
import { useSession, type Session } from '../session.tsx';
import type { Job, Page, Run } from '../types.ts';
import { ConfirmButton, ErrorNote, Time, useAction, useAsync, usePager } from '../ui.tsx';
import { jobLabel } from './jobs.tsx';

const PAGE_SIZE = 50;
/** Most job reads in flight at once (the API's rate limit is per tenant). */
const JOB_FETCH_CONCURRENCY = 4;

/** The answer of `POST /v1/dead-letters/replay`. */
type ReplayResult = { replayed: number; runIds: string[]; remaining: number };

let jobFetchesActive = 0;
const jobFetchQueue: (() => void)[] = [];

/** Runs `task` when fewer than JOB_FETCH_CONCURRENCY job reads are in flight. */
async function limited<T>(task: () => Promise<T>): Promise<T> {
  if (jobFetchesActive >= JOB_FETCH_CONCURRENCY) await new Promise<void>((resolve) => jobFetchQueue.push(resolve));
  jobFetchesActive++;
  try {
    return await task();
  } finally {
    jobFetchesActive--;
    jobFetchQueue.shift()?.();
  }
}

/** A job's display name (`jobLabel`: name, key or id); null when it cannot be read (e.g. gone). */
async function readJobName(api: Session['api'], jobId: string): Promise<string | null> {
  try {
    return jobLabel(await limited(() => api<Job>('GET', `/v1/jobs/${encodeURIComponent(jobId)}`)));
  } catch (err) {
    if (err instanceof ApiProblem && err.status === 404) return null;
    throw err;
  }
}

/**
 * The names of the jobs `jobIds`, each distinct job read once while the calling component is mounted.
 * @returns a lookup: the name, null when the job has none (or is not readable), undefined while unknown
 */
export function useJobNames(jobIds: readonly string[]): (jobId: string) => string | null | undefined {
  const { api } = useSession();
  const names = useRef(new Map<string, string | null>());
  const asked = useRef(new Set<string>());
  const [, bump] = useState(0);
  const distinct = [...new Set(jobIds)].sort().join(',');
  useEffect(() => {
    let live = true;
    for (const jobId of distinct ? distinct.split(',') : []) {
      if (asked.current.has(jobId)) continue;
      asked.current.add(jobId);
      readJobName(api, jobId).then(
        (name) => {
          names.current.set(jobId, name);
          if (live) bump((n) => n + 1);
        },
        () => asked.current.delete(jobId), // a passing failure (429, network): asked again on the next render's change
      );
    }
    return () => {
      live = false;
    };
  }, [distinct, api]);
  return (jobId) => names.current.get(jobId);
}

/** A link to a job's page, showing its name when known, else its id. */
export function JobLink({ jobId, name }: { jobId: string; name: string | null | undefined }) {
  return (
    <a href={`/console/jobs/${encodeURIComponent(jobId)}`} title={jobId} class={name ? undefined : 'mono'}>
      {name ?? jobId}
    </a>
  );
}

/** A notice, shown while any dead letter waits, linking to the dead letters page (nothing otherwise). */
export function DeadLetterBanner() {
  const { api } = useSession();
  const { data } = useAsync(() => api<Page<'runs', Run>>('GET', `/v1/dead-letters${qs({ limit: 1 })}`), []);
  if (!data || data.runs.length === 0) return null;
  return (
    <p class="notice" role="status">
      There are failed runs waiting: <a href="/console/dead-letters">see dead letters</a>
    </p>
  );
}

/** The dead letters page: list, select, replay and dismiss the tenant's (or one job's) failed runs. */
export function DeadLettersPage() {
  const { api } = useSession();
  const { query } = useLocation();
  const jobId = query.jobId || undefined;
  const pager = usePager(jobId ?? '');
  const list = useAsync(async (): Promise<Page<'runs', Run>> => {
    if (!jobId) return api<Page<'runs', Run>>('GET', `/v1/dead-letters${qs({ limit: PAGE_SIZE, cursor: pager.cursor })}`);
    // `/v1/dead-letters` takes no job filter: a job's failed runs from the feed, less those dismissed.
    const page = await api<Page<'runs', Run>>('GET', `/v1/runs${qs({ status: 'failed', jobId, limit: PAGE_SIZE, cursor: pager.cursor })}`);
    return { runs: page.runs.filter((r) => r.dismissedAt === null && r.trigger !== 'notification'), nextCursor: page.nextCursor };
  }, [jobId, pager.cursor]);
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
    // eslint-disable-next-line react-hooks/exhaustive-deps
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

  const replaySelected = () =>
    act(async () => {
      const r = await api<ReplayResult>('POST', '/v1/dead-letters/replay', { runIds: [...selected] });
      setSelected(new Set());
      return `Replayed ${r.replayed}; ${r.remaining} left`;
    });

  const replayAllOfJob = (id: string) =>
    act(async () => {
      let replayed = 0;
      let remaining = 0;
      // Each call replays up to 1,000 (and dismisses them); go on while some are left and progress is made.
      for (;;) {
        const r = await api<ReplayResult>('POST', '/v1/dead-letters/replay', { jobId: id }).catch((err: unknown) => {
          if (replayed > 0) setOutcome(`Replayed ${replayed}; ${remaining} left`);
          throw err;
        });
        replayed += r.replayed;
        remaining = r.remaining;
        if (remaining <= 0 || r.replayed === 0) break;
        setOutcome(`Replaying… ${replayed} so far; ${remaining} left`);
      }
      return `Replayed ${replayed}; ${remaining} left`;
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
      <ErrorNote error={list.error} />

      <div class="toolbar" role="group" aria-label="Bulk actions">
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
          <table class="dead-letters">
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
                  <td>
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
                  <td class="when">
                    <a href={`/console/runs/${r.runId}`}>
                      <Time iso={r.finishedAt ?? r.scheduledFor} />
                    </a>
                  </td>
                  <td class="job">
                    <JobLink jobId={r.jobId} name={jobName(r.jobId)} />
                  </td>
                  <td>{r.attempts}</td>
                  <td>{r.responseStatus ?? <span class="muted">—</span>}</td>
                  <td class="wrap error-text">{r.error ?? <span class="muted">—</span>}</td>
                  <td>
                    <div class="row-actions">
                      <button type="button" disabled={busy} onClick={() => replayOne(r.runId)}>
                        Replay
                      </button>
                      <ConfirmButton label="Dismiss" question="Dismiss this dead letter?" confirmLabel="Yes, dismiss" onConfirm={() => dismissOne(r.runId)} disabled={busy} />
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
  const n = data.runs.length;
  const what = `${n} dead letter${n === 1 ? '' : 's'}${ofJob ? ' of this job' : ''}`;
  if (firstPage && !data.nextCursor) return `${what}.`;
  return `${what} on this page${data.nextCursor ? '; more on older pages' : ''}.`;
}
