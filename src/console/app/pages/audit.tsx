/**
 * `/console/audit`: who changed what (API.md "Access control and audit"), newest first, filtered by action and a span
 * of time. The filters live in the URL query (`?action=…&since=…&until=…`, instants as UTC ISO), so a filtered view
 * can be linked to and survives a reload. Shown to keys with `audit:read`.
 */

import { useMemo } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { AUDIT_ACTIONS } from '../../../domain/audit.ts';
import { qs } from '../api.ts';
import { RefreshPauser, useLiveRefresh } from '../parts/refresh-pauser.tsx';
import { TimeSpanFields } from '../parts/time-span-fields.tsx';
import { useSession } from '../session.tsx';
import type { AuditEntry, Page } from '../types.ts';
import { ErrorNote, Field, SortedHeader, Time, useAsync, usePager } from '../ui.tsx';
import { viewerZone } from '../zones.ts';

const PAGE_SIZE = 50;

type Filters = { action: string; since: string; until: string };

/** Who made an entry's change, in words: the key's prefix, the operator, or Chime and why. */
function actorText(actor: AuditEntry['actor']): string {
  if (actor.type === 'api_key') return `API key ${actor.prefix}…`;
  if (actor.type === 'system') return `Chime (${actor.reason.replaceAll('_', ' ')})`;
  return 'Operator (admin token)';
}

/** What an entry changed: a link where the console has a page for it. */
function Target({ target }: { target: AuditEntry['target'] }) {
  if (target.type === 'job') return <a href={`/console/jobs/${target.id}`}>job {target.id}</a>;
  if (target.type === 'run') return <a href={`/console/runs/${target.id}`}>run {target.id}</a>;
  return (
    <span>
      {target.type.replaceAll('_', ' ')} <span class="mono">{target.id}</span>
    </span>
  );
}

/** The audit log with its filters (kept in the URL) and pages of 50. */
export function AuditPage() {
  const { api } = useSession();
  const { query, route } = useLocation();
  const filters: Filters = { action: query.action ?? '', since: query.since ?? '', until: query.until ?? '' };
  const filterKey = JSON.stringify(filters);
  const setFilters = (patch: Partial<Filters>) => route(`/console/audit${qs({ ...filters, ...patch })}`, true);
  const pager = usePager(filterKey);
  const list = useAsync(
    () => api<Page<'entries', AuditEntry>>('GET', `/v1/audit-log${qs({ ...filters, limit: PAGE_SIZE, cursor: pager.cursor })}`),
    [filterKey, pager.cursor],
  );
  const live = useLiveRefresh(list.refresh);
  const zone = useMemo(viewerZone, []);
  const entries = list.data?.entries ?? [];
  const filtered = Object.values(filters).some(Boolean);

  return (
    <section>
      <h1>Audit log</h1>
      {/* biome-ignore lint/a11y/useSemanticElements: <search> is unknown to Safari 16, a target of the console (build.ts): role="search" keeps the landmark there */}
      <form class="toolbar filters" role="search" aria-label="Filter the audit log" onSubmit={(e) => e.preventDefault()}>
        <Field id="audit-action" label="Action">
          <select id="audit-action" value={filters.action} onChange={(e) => setFilters({ action: e.currentTarget.value })}>
            <option value="">Any</option>
            {AUDIT_ACTIONS.map((a) => (
              <option value={a}>{a}</option>
            ))}
          </select>
        </Field>
        <TimeSpanFields idPrefix="audit" since={filters.since} until={filters.until} zone={zone} onChange={setFilters} />
        {filtered && (
          <button type="button" onClick={() => route('/console/audit', true)}>
            Clear filters
          </button>
        )}
      </form>
      <p class="hint">Times in your time zone ({zone}; Until excluded). Changes name the fields changed, never their values.</p>
      <RefreshPauser live={live} />
      <ErrorNote error={list.error} />

      {list.data && entries.length === 0 && pager.cursor === undefined ? (
        <p class="empty">{filtered ? 'No entries match these filters.' : 'No changes recorded yet.'}</p>
      ) : (
        <div class="table-wrap" aria-busy={list.loading ? 'true' : undefined}>
          <table class="audit stack">
            <caption class="order">Newest first.</caption>
            <thead>
              <tr>
                <SortedHeader label="When" />
                <th scope="col">Who</th>
                <th scope="col">Action</th>
                <th scope="col">Target</th>
                <th scope="col">Changed</th>
                <th scope="col">Request ID</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr key={e.entryId}>
                  <td data-label="When">
                    <Time iso={e.at} />
                  </td>
                  <td data-label="Who">{actorText(e.actor)}</td>
                  <td class="mono" data-label="Action">
                    {e.action}
                  </td>
                  <td class="wrap" data-label="Target">
                    <Target target={e.target} />
                  </td>
                  <td data-label="Changed">{e.changes?.length ? e.changes.join(', ') : <span class="muted">—</span>}</td>
                  <td class="mono" data-label="Request ID">
                    {e.requestId ?? <span class="muted">—</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!list.data && !list.error && <p class="muted">Loading…</p>}
      {pager.controls(list.data?.nextCursor)}
    </section>
  );
}
