/**
 * `/console/flow-controls`: the tenant's flow controls (API.md "Destination control") with their state (requests in
 * flight, runs waiting), refreshed live; a form that creates one or replaces its settings; pause, resume and delete
 * per row. Shown to keys with `flow-controls:manage`.
 */
import { useState } from 'preact/hooks';
import { ApiProblem } from '../api.ts';
import { RefreshPauser, useLiveRefresh } from '../parts/refresh-pauser.tsx';
import { useSession } from '../session.tsx';
import type { FlowControl, Page } from '../types.ts';
import { ConfirmButton, ErrorNote, Field, useAction, useAsync } from '../ui.tsx';

type Draft = { key: string; rateLimit: string; periodMs: string; parallelism: string; paused: boolean };
const EMPTY: Draft = { key: '', rateLimit: '', periodMs: '1000', parallelism: '', paused: false };

/** The PUT body of a draft: a rate only with a limit, parallelism only when given. */
function bodyOf(d: Draft) {
  return {
    ...(d.rateLimit.trim() ? { rate: { limit: Number(d.rateLimit), periodMs: Number(d.periodMs) } } : {}),
    ...(d.parallelism.trim() ? { parallelism: Number(d.parallelism) } : {}),
    paused: d.paused,
  };
}

/** The body that keeps a flow control's settings but `paused`. */
function withPaused(f: FlowControl, paused: boolean) {
  return { ...(f.rate ? { rate: f.rate } : {}), ...(f.parallelism !== null ? { parallelism: f.parallelism } : {}), paused };
}

const rateText = (f: FlowControl) => (f.rate ? `${f.rate.limit} per ${f.rate.periodMs.toLocaleString()} ms` : '—');

/** The flow controls page. */
export function FlowControlsPage() {
  const { api } = useSession();
  const list = useAsync(() => api<Page<'flowControls', FlowControl>>('GET', '/v1/flow-controls?limit=100'), []);
  const live = useLiveRefresh(list.refresh);
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const save = useAction<FlowControl>(list.reload);
  const act = useAction<null>(list.reload);
  const fieldError = (path: string) => (save.error instanceof ApiProblem ? save.error.fieldError(path) : undefined);
  const put = (key: string, body: unknown) => api<FlowControl>('PUT', `/v1/flow-controls/${encodeURIComponent(key)}`, body);
  const set = (patch: Partial<Draft>) => setDraft((d) => ({ ...d, ...patch }));
  const items = list.data?.flowControls ?? [];

  const submit = (e: Event) => {
    e.preventDefault();
    return save.run(async () => {
      const saved = await put(draft.key.trim(), bodyOf(draft));
      setDraft(EMPTY);
      return saved;
    });
  };
  const edit = (f: FlowControl) =>
    setDraft({
      key: f.key,
      rateLimit: f.rate ? String(f.rate.limit) : '',
      periodMs: f.rate ? String(f.rate.periodMs) : '1000',
      parallelism: f.parallelism !== null ? String(f.parallelism) : '',
      paused: f.paused,
    });

  const errors = {
    key: fieldError('key'),
    limit: fieldError('rate.limit'),
    period: fieldError('rate.periodMs'),
    parallelism: fieldError('parallelism'),
  };
  const otherError = save.error && !Object.values(errors).some(Boolean) ? save.error : null;
  return (
    <section>
      <h1>Flow controls</h1>
      <p class="hint">
        A flow control limits the requests of every job that names it (the job's flow control key), across all dispatchers together: at most
        its parallelism in flight, at most its rate started in any window of its period. Runs held back stay due and start in due order; a
        paused flow control holds all its runs.
      </p>
      <form class="toolbar flow-form" onSubmit={submit} aria-label="Create or replace a flow control">
        <Field id="flow-key" label="Key" error={errors.key}>
          <input
            id="flow-key"
            type="text"
            required
            maxLength={100}
            pattern="[A-Za-z0-9._:\-]+"
            value={draft.key}
            onInput={(e) => set({ key: e.currentTarget.value })}
          />
        </Field>
        <Field id="flow-rate" label="Rate: requests" error={errors.limit}>
          <input
            id="flow-rate"
            type="number"
            min={1}
            max={100000}
            value={draft.rateLimit}
            onInput={(e) => set({ rateLimit: e.currentTarget.value })}
          />
        </Field>
        <Field id="flow-period" label="per (ms)" error={errors.period}>
          <input
            id="flow-period"
            type="number"
            min={1000}
            max={86400000}
            value={draft.periodMs}
            onInput={(e) => set({ periodMs: e.currentTarget.value })}
          />
        </Field>
        <Field id="flow-parallelism" label="Parallelism" error={errors.parallelism}>
          <input
            id="flow-parallelism"
            type="number"
            min={1}
            max={10000}
            value={draft.parallelism}
            onInput={(e) => set({ parallelism: e.currentTarget.value })}
          />
        </Field>
        <label class="scope-option">
          <input type="checkbox" checked={draft.paused} onChange={(e) => set({ paused: e.currentTarget.checked })} /> Paused
        </label>
        <button type="submit" disabled={save.busy}>
          Save
        </button>
      </form>
      <ErrorNote error={otherError} />
      {save.outcome && <p role="status">Saved flow control {save.outcome.key}.</p>}
      <RefreshPauser live={live} />
      <ErrorNote error={list.error ?? act.error} />
      {list.data && items.length === 0 ? (
        <p class="empty">No flow controls yet.</p>
      ) : (
        <div class="table-wrap" aria-busy={list.loading ? 'true' : undefined}>
          <table class="flow-controls stack">
            <caption class="order">By key.</caption>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Rate</th>
                <th scope="col">Parallelism</th>
                <th scope="col">In flight</th>
                <th scope="col">Waiting</th>
                <th scope="col">State</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {items.map((f) => (
                <tr key={f.key}>
                  <td class="mono" data-label="Key">
                    {f.key}
                  </td>
                  <td data-label="Rate">{rateText(f)}</td>
                  <td data-label="Parallelism">{f.parallelism ?? '—'}</td>
                  <td data-label="In flight">{f.inFlight}</td>
                  <td data-label="Waiting">{f.waiting}</td>
                  <td data-label="State">{f.paused ? 'paused' : 'active'}</td>
                  <td data-label="Actions" class="actions">
                    <button type="button" onClick={() => edit(f)}>
                      Edit
                    </button>
                    <button
                      type="button"
                      disabled={act.busy}
                      onClick={() =>
                        act.run(async () => {
                          await put(f.key, withPaused(f, !f.paused));
                          return null;
                        })
                      }
                    >
                      {f.paused ? 'Resume' : 'Pause'}
                    </button>
                    <ConfirmButton
                      label="Delete"
                      question={`Delete ${f.key}?`}
                      confirmLabel="Delete"
                      danger
                      disabled={act.busy}
                      onConfirm={() =>
                        act.run(async () => {
                          await api<void>('DELETE', `/v1/flow-controls/${encodeURIComponent(f.key)}`);
                          return null;
                        })
                      }
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!list.data && !list.error && <p class="muted">Loading…</p>}
    </section>
  );
}
