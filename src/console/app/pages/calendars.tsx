/**
 * `/console/calendars`: the tenant's calendars (API.md "Richer schedules"): each with its time zone, weekend days,
 * holidays and the open jobs that use it; a form that creates one or replaces it (`PUT /v1/calendars/:key`), its
 * holidays edited one by one or pasted; delete per row (refused while jobs use it: the API's 409 is shown). The API's
 * field errors are shown at their fields. Shown to keys with `calendars:manage`.
 */
import { useState } from 'preact/hooks';
import { ApiProblem } from '../api.ts';
import { WEEKDAY_NAMES } from '../parts/calendar-days.ts';
import { listAllCalendars } from '../parts/calendar-list.ts';
import { HolidaysEditor } from '../parts/holidays-editor.tsx';
import { useSession } from '../session.tsx';
import type { Calendar } from '../types.ts';
import { ConfirmButton, ErrorNote, Field, useAction, useAsync } from '../ui.tsx';
import { viewerZone, zoneChoices } from '../zones.ts';

/** The default weekend: Saturday and Sunday (src/domain/calendar.ts `DEFAULT_WEEKEND_DAYS`). */
const DEFAULT_WEEKEND = [0, 6];

type Draft = { key: string; name: string; timezone: string; weekendDays: number[]; holidays: string[] };
const empty = (): Draft => ({ key: '', name: '', timezone: viewerZone(), weekendDays: DEFAULT_WEEKEND, holidays: [] });

/** The PUT body of a draft: the name only when given. */
function bodyOf(d: Draft) {
  return {
    ...(d.name.trim() ? { name: d.name.trim() } : {}),
    timezone: d.timezone,
    weekendDays: d.weekendDays,
    holidays: d.holidays,
  };
}

/** The weekend days in words ("Saturday, Sunday"), Monday first; "none". */
const weekendWords = (days: readonly number[]) =>
  [1, 2, 3, 4, 5, 6, 0]
    .filter((d) => days.includes(d))
    .map((d) => WEEKDAY_NAMES[d])
    .join(', ') || 'none';

/**
 * The messages of a refused save about `path` and what is under it (`weekendDays.2`), joined; for `holidays.N`, the
 * date sent at N is named.
 */
function messagesAt(error: unknown, path: string, sent: Draft | null): string | undefined {
  if (!(error instanceof ApiProblem)) return undefined;
  const found = error.errors
    .filter((e) => e.path === path || e.path.startsWith(`${path}.`))
    .map((e) => {
      const index = e.path.slice(path.length + 1);
      if (path === 'holidays' && /^\d+$/.test(index))
        return `${sent?.holidays[Number(index)] ?? `entry ${Number(index) + 1}`}: ${e.message}`;
      return e.message;
    });
  return found.length ? found.join('; ') : undefined;
}

/** The calendars page. */
export function CalendarsPage() {
  const { api, can } = useSession();
  if (!can('calendars:manage'))
    return (
      <section>
        <h1>Calendars</h1>
        <p class="notice">This API key cannot manage calendars: it does not hold the calendars:manage scope.</p>
      </section>
    );
  return <Calendars api={api} />;
}

function Calendars({ api }: { api: ReturnType<typeof useSession>['api'] }) {
  const list = useAsync(() => listAllCalendars(api), []);
  const [draft, setDraft] = useState<Draft>(empty);
  /** The calendar being edited (its key cannot change: another key is another calendar). */
  const [editing, setEditing] = useState<string | null>(null);
  const [sent, setSent] = useState<Draft | null>(null);
  /** Changes whenever the form starts over (another calendar, a new one, a save): the holidays editor's own state goes. */
  const [generation, setGeneration] = useState(0);
  const save = useAction<{ calendar: Calendar; created: boolean }>(list.reload);
  const act = useAction<string>(list.reload);
  /** The fields changed since the last save was refused: their messages are stale. */
  const [changed, setChanged] = useState<ReadonlySet<string>>(new Set());
  const set = (patch: Partial<Draft>) => {
    setDraft((d) => ({ ...d, ...patch }));
    setChanged((c) => new Set([...c, ...Object.keys(patch)]));
  };
  const zones = zoneChoices(draft.timezone);
  const items = list.data ?? [];

  const submit = (e: Event) => {
    e.preventDefault();
    const d = draft;
    setSent(d);
    setChanged(new Set());
    return save.run(async () => {
      const existed = items.some((c) => c.key === d.key.trim());
      const calendar = await api<Calendar>('PUT', `/v1/calendars/${encodeURIComponent(d.key.trim())}`, bodyOf(d));
      setDraft(empty());
      setEditing(null);
      setGeneration((g) => g + 1);
      return { calendar, created: !existed };
    });
  };
  const edit = (c: Calendar) => {
    save.clear();
    setEditing(c.key);
    setGeneration((g) => g + 1);
    setDraft({ key: c.key, name: c.name ?? '', timezone: c.timezone, weekendDays: [...c.weekendDays], holidays: [...c.holidays].sort() });
  };
  const startNew = () => {
    save.clear();
    setEditing(null);
    setGeneration((g) => g + 1);
    setDraft(empty());
  };

  const at = (path: keyof Draft) => (changed.has(path) ? undefined : messagesAt(save.error, path, sent));
  const errors = {
    key: at('key'),
    name: at('name'),
    timezone: at('timezone'),
    weekendDays: at('weekendDays'),
    holidays: at('holidays'),
  };
  const named = ['key', 'name', 'timezone', 'weekendDays', 'holidays'].some((p) => messagesAt(save.error, p, sent));
  const otherError = save.error && !named ? save.error : null;
  const today = new Date().toISOString().slice(0, 10);

  return (
    <section>
      <h1>Calendars</h1>
      <p class="hint">
        A calendar names the business days of a time zone: every day but its weekend days and holidays. A job that uses one skips, or moves
        to the next or previous business day, each run that falls on another day (in the calendar's zone, at the same local time).
      </p>
      <form class="calendar-form" onSubmit={submit} aria-label="Create or replace a calendar" aria-busy={save.busy ? 'true' : undefined}>
        <h2>{editing ? `Edit ${editing}` : 'New calendar'}</h2>
        <div class="grid">
          <Field
            id="cal-key"
            label="Key"
            error={errors.key}
            hint={editing ? 'Another key makes another calendar' : 'Letters, digits and . _ : ~ -'}
          >
            <input
              id="cal-key"
              type="text"
              required
              maxLength={100}
              readOnly={editing !== null}
              spellcheck={false}
              autocomplete="off"
              aria-invalid={errors.key ? true : undefined}
              aria-describedby={errors.key ? 'cal-key-error' : undefined}
              value={draft.key}
              onInput={(e) => set({ key: e.currentTarget.value })}
            />
          </Field>
          <Field id="cal-name" label="Name" error={errors.name} hint="Optional">
            <input
              id="cal-name"
              type="text"
              maxLength={200}
              autocomplete="off"
              aria-invalid={errors.name ? true : undefined}
              aria-describedby={errors.name ? 'cal-name-error' : undefined}
              value={draft.name}
              onInput={(e) => set({ name: e.currentTarget.value })}
            />
          </Field>
          <Field id="cal-timezone" label="Time zone" error={errors.timezone} hint="Whose dates the weekend and holidays are">
            <select
              id="cal-timezone"
              value={draft.timezone}
              aria-invalid={errors.timezone ? true : undefined}
              aria-describedby={errors.timezone ? 'cal-timezone-error' : undefined}
              onChange={(e) => set({ timezone: e.currentTarget.value })}
            >
              {zones.map((z) => (
                <option value={z}>{z}</option>
              ))}
            </select>
          </Field>
        </div>
        <fieldset class={`weekend${errors.weekendDays ? ' invalid' : ''}`}>
          <legend>Weekend days</legend>
          {[1, 2, 3, 4, 5, 6, 0].map((d) => (
            <label class="scope-option">
              <input
                type="checkbox"
                checked={draft.weekendDays.includes(d)}
                onChange={(e) =>
                  set({
                    weekendDays: e.currentTarget.checked
                      ? [...draft.weekendDays, d].sort((a, b) => a - b)
                      : draft.weekendDays.filter((x) => x !== d),
                  })
                }
              />{' '}
              {WEEKDAY_NAMES[d]}
            </label>
          ))}
          {errors.weekendDays && (
            <small class="field-error" id="cal-weekend-error" role="alert">
              {errors.weekendDays}
            </small>
          )}
        </fieldset>
        <HolidaysEditor key={generation} holidays={draft.holidays} onChange={(holidays) => set({ holidays })} error={errors.holidays} />
        <div class="actions">
          <button type="submit" class="primary" disabled={save.busy}>
            Save calendar
          </button>
          {(editing || draft.key || draft.holidays.length > 0) && (
            <button type="button" onClick={startNew}>
              {editing ? 'New calendar instead' : 'Clear'}
            </button>
          )}
        </div>
      </form>
      <ErrorNote error={otherError} />
      {save.outcome && (
        <p role="status">
          {save.outcome.created ? 'Created' : 'Saved'} calendar {save.outcome.calendar.key}.
        </p>
      )}
      <h2>Your calendars</h2>
      <ErrorNote error={list.error ?? act.error} />
      {act.outcome && <p role="status">{act.outcome}</p>}
      {list.data && items.length === 0 ? (
        <p class="empty">No calendars yet.</p>
      ) : (
        <div class="table-wrap" aria-busy={list.loading ? 'true' : undefined}>
          <table class="calendars stack">
            <caption class="order">By key.</caption>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Name</th>
                <th scope="col">Time zone</th>
                <th scope="col">Weekend</th>
                <th scope="col">Holidays</th>
                <th scope="col">Jobs using it</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {items.map((c) => {
                const next = [...c.holidays].sort().find((d) => d >= today);
                return (
                  <tr key={c.key}>
                    <td class="mono" data-label="Key">
                      {c.key}
                    </td>
                    <td data-label="Name">{c.name || <span class="muted">—</span>}</td>
                    <td data-label="Time zone">{c.timezone}</td>
                    <td data-label="Weekend">{weekendWords(c.weekendDays)}</td>
                    <td data-label="Holidays">
                      {c.holidays.length}
                      {next && <span class="muted"> (next: {next})</span>}
                    </td>
                    <td data-label="Jobs using it">{c.jobs}</td>
                    <td data-label="Actions" class="actions">
                      <button type="button" onClick={() => edit(c)}>
                        Edit
                      </button>
                      <ConfirmButton
                        label="Delete"
                        question={`Delete ${c.key}?`}
                        confirmLabel="Delete"
                        danger
                        disabled={act.busy}
                        onConfirm={() =>
                          act.run(async () => {
                            await api<void>('DELETE', `/v1/calendars/${encodeURIComponent(c.key)}`);
                            if (editing === c.key) startNew();
                            return `Deleted calendar ${c.key}.`;
                          })
                        }
                      />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {!list.data && !list.error && <p class="muted">Loading…</p>}
    </section>
  );
}
