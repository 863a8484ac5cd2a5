/**
 * `/console/runs`: every run of the tenant's jobs, newest first (by creation, the API's order, shown as a column),
 * filtered by status, job and a span of `scheduledFor`. The filters live in the URL query
 * (`?status=failed&jobId=…&since=…&until=…`, instants as UTC ISO), so a filtered view can be linked to and survives a
 * reload. The list updates itself (live, with a pause control).
 */

import { useEffect, useMemo, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { RUN_STATUSES } from '../../../domain/states.ts';
import { qs } from '../api.ts';
import { useJobNames } from '../parts/job-names.tsx';
import { RefreshPauser, useLiveRefresh } from '../parts/refresh-pauser.tsx';
import { RunsTable } from '../parts/runs-table.tsx';
import { TimeSpanFields } from '../parts/time-span-fields.tsx';
import { useSession } from '../session.tsx';
import type { Page, Run } from '../types.ts';
import { ErrorNote, Field, useAsync, usePager } from '../ui.tsx';
import { viewerZone } from '../zones.ts';

const PAGE_SIZE = 50;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Filters = { status: string; jobId: string; since: string; until: string };

/** The runs feed with its filters (kept in the URL) and pages of 50. */
export function RunsPage() {
  const { api } = useSession();
  const { query, route } = useLocation();
  const filters: Filters = { status: query.status ?? '', jobId: query.jobId ?? '', since: query.since ?? '', until: query.until ?? '' };
  const filterKey = JSON.stringify(filters);
  const setFilters = (patch: Partial<Filters>) => route(`/console/runs${qs({ ...filters, ...patch })}`, true);

  // The job id is typed: it is applied when committed (Enter, leaving the field), and only when it is an id.
  const [jobDraft, setJobDraft] = useState(filters.jobId);
  const [jobError, setJobError] = useState<string | undefined>(undefined);
  useEffect(() => {
    setJobDraft(filters.jobId);
    setJobError(undefined);
  }, [filters.jobId]);
  const applyJob = () => {
    const v = jobDraft.trim();
    if (v && !UUID.test(v)) {
      setJobError('A job ID looks like 0b6f3c1e-…: 36 characters (a UUID).');
      return;
    }
    setJobError(undefined);
    if (v !== filters.jobId) setFilters({ jobId: v });
  };

  const pager = usePager(filterKey);
  const list = useAsync(
    () => api<Page<'runs', Run>>('GET', `/v1/runs${qs({ ...filters, limit: PAGE_SIZE, cursor: pager.cursor })}`),
    [filterKey, pager.cursor],
  );
  const live = useLiveRefresh(list.refresh);
  const zone = useMemo(viewerZone, []);
  const runs = list.data?.runs ?? [];
  const jobName = useJobNames(runs.map((r) => r.jobId));
  const filtered = Object.values(filters).some(Boolean);

  return (
    <section>
      <h1>Runs</h1>
      {/* biome-ignore lint/a11y/useSemanticElements: <search> is unknown to Safari 16, a target of the console (build.ts): role="search" keeps the landmark there */}
      <form
        class="toolbar filters"
        role="search"
        aria-label="Filter runs"
        onSubmit={(e) => {
          e.preventDefault();
          applyJob();
        }}
      >
        <Field id="runs-status" label="Status">
          <select id="runs-status" value={filters.status} onChange={(e) => setFilters({ status: e.currentTarget.value })}>
            <option value="">Any</option>
            {RUN_STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </Field>
        <Field id="runs-job" label="Job ID" error={jobError}>
          <input
            id="runs-job"
            type="text"
            class="mono"
            autocomplete="off"
            spellcheck={false}
            placeholder="any job"
            value={jobDraft}
            aria-invalid={jobError ? true : undefined}
            aria-describedby={jobError ? 'runs-job-error' : undefined}
            onInput={(e) => setJobDraft(e.currentTarget.value)}
            onChange={applyJob}
          />
        </Field>
        <TimeSpanFields idPrefix="runs" since={filters.since} until={filters.until} zone={zone} onChange={setFilters} />
        {filtered && (
          <button type="button" onClick={() => route('/console/runs', true)}>
            Clear filters
          </button>
        )}
      </form>
      <p class="hint">Since and Until bound when a run was scheduled for, in your time zone ({zone}; Until excluded).</p>
      <RefreshPauser live={live} />
      <ErrorNote error={list.error} />

      {list.data && runs.length === 0 && pager.cursor === undefined ? (
        <p class="empty">{filtered ? 'No runs match these filters.' : 'No runs yet: runs show up here once your jobs fire.'}</p>
      ) : (
        <RunsTable runs={runs} jobName={jobName} busy={list.loading} />
      )}
      {!list.data && !list.error && <p class="muted">Loading…</p>}
      {pager.controls(list.data?.nextCursor)}
    </section>
  );
}
