/**
 * The job list (`/console/jobs`): filters by status, name/key search and metadata pairs (kept in the URL's query so
 * that "back" returns to the same list), 25 jobs a page, newest first (the column "Created"), each with its schedule in
 * words, its next run and the outcome of its last finished run; the list updates itself (live, with a pause control).
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { JOB_STATUSES } from '../../../domain/states.ts';
import { qs } from '../api.ts';
import { scheduleZone } from '../parts/job-facts.tsx';
import { jobLabel } from '../parts/job-names.tsx';
import { DeadLetterBanner } from '../parts/notices.tsx';
import { RefreshPauser, useLiveRefresh } from '../parts/refresh-pauser.tsx';
import { isFinal, lastRunOf } from '../parts/run-order.ts';
import { describeSchedule } from '../schedule-words.ts';
import { useSession } from '../session.tsx';
import type { Job, Page, Run } from '../types.ts';
import { ErrorNote, Field, SortedHeader, Status, Time, useAsync, usePager } from '../ui.tsx';

const PAGE_SIZE = 25;
/** Most requests for the newest runs of a page's jobs in flight at once. */
const OUTCOME_CONCURRENCY = 6;
/** Newest runs read per job to find its last outcome (before it: the next run, and runs a pause canceled). */
const OUTCOME_RUNS = 5;

/** The filters as applied to the list. */
type Filters = { status: string; q: string; metadata: string };

/**
 * Parses "team=ops, env=prod" into pairs.
 * @returns the pairs, or the message about the first malformed entry
 */
export function parseMetadataFilter(text: string): { pairs: [string, string][] } | { error: string } {
  const pairs: [string, string][] = [];
  for (const raw of text.split(',')) {
    const entry = raw.trim();
    if (!entry) continue;
    const eq = entry.indexOf('=');
    if (eq <= 0) return { error: `"${entry}" is not key=value; separate several pairs with commas` };
    pairs.push([entry.slice(0, eq).trim(), entry.slice(eq + 1).trim()]);
  }
  return { pairs };
}

/** The query parameters of `GET /v1/jobs` for `filters` (metadata already checked). */
function filterParams(f: Filters): Record<string, string> {
  const params: Record<string, string> = {};
  if (f.status) params.status = f.status;
  if (f.q.trim()) params.q = f.q.trim();
  const parsed = parseMetadataFilter(f.metadata);
  if ('pairs' in parsed) for (const [k, v] of parsed.pairs) params[`metadata.${k}`] = v;
  return params;
}

/**
 * Calls `fn` for each item, at most `limit` at a time.
 * @returns when all calls have settled
 */
async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item).catch(() => undefined);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * The status of each job's last finished run (null: none yet; 'error': could not be read), read for the page shown,
 * and again on each `tick` (a live refresh).
 */
function useLastOutcomes(jobs: Job[] | undefined, tick: number): Record<string, string | null> {
  const { api } = useSession();
  const [outcomes, setOutcomes] = useState<Record<string, string | null>>({});
  const generation = useRef(0);
  const ids = jobs?.map((j) => j.jobId).join(',') ?? '';
  useEffect(() => {
    const n = ++generation.current;
    if (!jobs || jobs.length === 0) return;
    void eachLimited(jobs, OUTCOME_CONCURRENCY, async (job) => {
      let status: string | null;
      try {
        // The newest run is usually the next one, still waiting: the outcome is the newest that has finished.
        const page = await api<Page<'runs', Run>>('GET', `/v1/jobs/${encodeURIComponent(job.jobId)}/runs${qs({ limit: OUTCOME_RUNS })}`);
        status = lastRunOf(page.runs.filter(isFinal))?.status ?? null;
      } catch {
        status = 'error';
      }
      if (n === generation.current) setOutcomes((o) => ({ ...o, [job.jobId]: status }));
    });
  }, [ids, api, tick]);
  return outcomes;
}

/** `/console/jobs`: the tenant's jobs, filtered and paged. */
export function JobsPage() {
  const { api, can } = useSession();
  const { path, query, route } = useLocation();
  const applied: Filters = { status: query.status ?? '', q: query.q ?? '', metadata: query.metadata ?? '' };
  const [status, setStatus] = useState(applied.status);
  const [q, setQ] = useState(applied.q);
  const [metadata, setMetadata] = useState(applied.metadata);
  const [metadataError, setMetadataError] = useState<string | undefined>(undefined);

  // Back and forward change the URL's filters: show them in the form.
  useEffect(() => {
    setStatus(applied.status);
    setQ(applied.q);
    setMetadata(applied.metadata);
  }, [applied.status, applied.q, applied.metadata]);

  /** Puts the filters in the URL (replacing the entry), which reloads the list; a malformed metadata filter is only reported. */
  const apply = (f: Filters) => {
    const check = parseMetadataFilter(f.metadata);
    setMetadataError('error' in check ? check.error : undefined);
    if ('error' in check) return;
    const next = `${path}${qs({ status: f.status, q: f.q.trim(), metadata: f.metadata.trim() })}`;
    if (next !== `${path}${qs({ status: applied.status, q: applied.q.trim(), metadata: applied.metadata.trim() })}`) route(next, true);
  };

  // Typing applies after a pause; Enter or "Filter" at once.
  useEffect(() => {
    const t = setTimeout(() => apply({ status, q, metadata }), 400);
    return () => clearTimeout(t);
  }, [q, metadata]);

  const params = filterParams(applied);
  const filterKey = JSON.stringify(params);
  const filtered = Object.keys(params).length > 0;
  const pager = usePager(filterKey);
  const list = useAsync(
    () => api<Page<'jobs', Job>>('GET', `/v1/jobs${qs({ ...params, limit: PAGE_SIZE, cursor: pager.cursor })}`),
    [filterKey, pager.cursor],
  );
  const jobs = list.data?.jobs;
  const [tick, setTick] = useState(0);
  const { refresh } = list;
  const live = useLiveRefresh(
    useCallback(() => {
      refresh();
      setTick((t) => t + 1);
    }, [refresh]),
  );
  const outcomes = useLastOutcomes(jobs, tick);

  return (
    <>
      <h1>Jobs</h1>
      <DeadLetterBanner />
      <div class="actions">
        {can('jobs:write') && (
          <a class="button primary" href="/console/jobs/new">
            New job
          </a>
        )}
        <RefreshPauser live={live} />
      </div>
      {/* biome-ignore lint/a11y/useSemanticElements: <search> is unknown to Safari 16, a target of the console (build.ts): role="search" keeps the landmark there */}
      <form
        class="toolbar jobs-filters"
        role="search"
        aria-label="Filter jobs"
        onSubmit={(e) => {
          e.preventDefault();
          apply({ status, q, metadata });
        }}
      >
        <Field id="jobs-status" label="Status">
          <select
            id="jobs-status"
            name="status"
            value={status}
            onChange={(e) => {
              const v = e.currentTarget.value;
              setStatus(v);
              apply({ status: v, q, metadata });
            }}
          >
            <option value="">any</option>
            {JOB_STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </Field>
        <Field id="jobs-q" label="Search">
          <input
            id="jobs-q"
            name="q"
            type="search"
            value={q}
            placeholder="name or key"
            maxLength={200}
            onInput={(e) => setQ(e.currentTarget.value)}
          />
        </Field>
        <Field id="jobs-metadata" label="Metadata" error={metadataError}>
          <input
            id="jobs-metadata"
            name="metadata"
            type="text"
            value={metadata}
            placeholder="team=ops, env=prod"
            aria-invalid={metadataError ? true : undefined}
            aria-describedby={metadataError ? 'jobs-metadata-error' : undefined}
            onInput={(e) => setMetadata(e.currentTarget.value)}
          />
        </Field>
        <button type="submit">Filter</button>
      </form>
      <ErrorNote error={list.error} />
      {jobs && jobs.length === 0 && <p class="notice">{filtered ? 'No job matches' : 'No jobs yet'}</p>}
      {jobs && jobs.length > 0 && (
        <div class="table-wrap">
          <table class="jobs-table stack" aria-busy={list.loading ? 'true' : undefined}>
            <caption class="order">Newest first, by when each job was created.</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Schedule</th>
                <th scope="col">Next run</th>
                <th scope="col">Last outcome</th>
                <th scope="col">Metadata</th>
                <SortedHeader label="Created" />
              </tr>
            </thead>
            <tbody>
              {jobs.map((job) => {
                const outcome = outcomes[job.jobId];
                return (
                  <tr key={job.jobId}>
                    <td class="wrap" data-label="Name">
                      <a href={`/console/jobs/${job.jobId}`}>{jobLabel(job)}</a>
                    </td>
                    <td data-label="Status">
                      <Status status={job.status} />
                    </td>
                    <td class="wrap" data-label="Schedule">
                      {describeSchedule(job.schedule)}
                    </td>
                    <td data-label="Next run">
                      <Time iso={job.nextRunAt} zone={scheduleZone(job)} />
                    </td>
                    <td data-label="Last outcome">
                      {outcome === undefined ? (
                        // biome-ignore lint/a11y/useAriaPropsSupportedByRole: the marker of a cell still loading, which loaded() in test/console/support.ts waits on
                        <span class="muted" aria-label="loading">
                          …
                        </span>
                      ) : outcome === null ? (
                        <span class="muted">—</span>
                      ) : outcome === 'error' ? (
                        <span class="muted">unknown</span>
                      ) : (
                        <Status status={outcome} />
                      )}
                    </td>
                    <td class="wrap" data-label="Metadata">
                      {Object.entries(job.metadata)
                        .map(([k, v]) => `${k}=${v}`)
                        .join(', ')}
                    </td>
                    <td data-label="Created">
                      <Time iso={job.createdAt} />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {list.loading && !jobs && <p class="muted">Loading…</p>}
      {jobs && (jobs.length > 0 || pager.cursor) && pager.controls(list.data?.nextCursor)}
    </>
  );
}
