/** Small building blocks shared by the console's pages. Every tenant-controlled string is rendered as text (JSX). */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiProblem } from './api.ts';
import { formatInstant, formatInZone, sameZone, viewerZone } from './zones.ts';

/**
 * The state of an async load: data once loaded, the error if it failed, `reload()` (shown as loading), and
 * `refresh()`, a quiet reload for live lists (nothing turns busy; the data is swapped when it arrives).
 */
export type Async<T> = { data: T | undefined; error: unknown; loading: boolean; reload: () => void; refresh: () => void };

/** Runs `load` when `deps` change (and on `reload()` or `refresh()`), keeping the last data while a reload runs. */
export function useAsync<T>(load: () => Promise<T>, deps: unknown[]): Async<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: null,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  const current = useRef(0);
  const quiet = useRef(false);
  useEffect(() => {
    const n = ++current.current;
    if (!quiet.current) setState((s) => ({ ...s, loading: true }));
    quiet.current = false;
    load().then(
      (data) => n === current.current && setState({ data, error: null, loading: false }),
      (error: unknown) => n === current.current && setState((s) => ({ data: s.data, error, loading: false })),
    );
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  const refresh = useCallback(() => {
    quiet.current = true;
    setTick((t) => t + 1);
  }, []);
  return { ...state, reload, refresh };
}

/** An error as a message (a problem's detail, with the fields it names). */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const text = error instanceof ApiProblem ? `${error.title}: ${error.detail}` : String(error);
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
}

/** A form field: a label, the control, and the API's error about it, tied together for assistive technology. */
export function Field({
  id,
  label,
  error,
  hint,
  children,
}: {
  id: string;
  label: string;
  error?: string | undefined;
  hint?: string;
  children: ComponentChildren;
}) {
  return (
    <div class={`field${error ? ' invalid' : ''}`}>
      <label for={id}>{label}</label>
      {children}
      {hint && <small class="hint">{hint}</small>}
      {error && (
        <small class="field-error" id={`${id}-error`} role="alert">
          {error}
        </small>
      )}
    </div>
  );
}

/**
 * An instant in the viewer's time zone, named ("Jan 5, 2026, 12:00:00 AM PST"), with the UTC ISO form on hover; "—"
 * for null. With `zone` (a schedule's own) other than the viewer's, the same instant on that zone's clock follows.
 */
export function Time({ iso, zone }: { iso: string | null | undefined; zone?: string | undefined }) {
  if (!iso) return <span class="muted">—</span>;
  const other = zone && !sameZone(zone, viewerZone()) ? formatInZone(iso, zone) : null;
  return (
    <>
      <time dateTime={iso} title={iso}>
        {formatInstant(iso)}
      </time>
      {other && <span class="other-zone"> ({other})</span>}
    </>
  );
}

/** The header of the column a table is sorted by, newest first, marked so for assistive technology. */
export function SortedHeader({ label }: { label: string }) {
  return (
    <th scope="col" aria-sort="descending" class="sorted">
      {label} <span aria-hidden="true">↓</span>
    </th>
  );
}

/** A job or run status as a badge (its colour class is the status itself). */
export function Status({ status }: { status: string }) {
  return <span class={`status status-${status}`}>{status}</span>;
}

/** A button that copies `text` to the clipboard, and says so. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      onClick={async () => {
        await navigator.clipboard.writeText(text).catch(() => undefined);
        setDone(true);
        setTimeout(() => setDone(false), 1500);
      }}
    >
      {done ? 'Copied' : label}
    </button>
  );
}

/** A button that asks "are you sure?" in place (no browser dialog) before `onConfirm`; `disabled` while another action runs. */
export function ConfirmButton({
  label,
  question,
  confirmLabel,
  onConfirm,
  danger,
  disabled,
}: {
  label: string;
  question: string;
  confirmLabel: string;
  onConfirm: () => void;
  danger?: boolean;
  disabled?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" class={danger ? 'danger' : ''} disabled={disabled} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    // biome-ignore lint/a11y/useSemanticElements: inline in table rows and toolbars; a <fieldset> is a block with a default border and padding
    <span class="confirm" role="group" aria-label={question}>
      <span>{question}</span>
      <button
        type="button"
        class={danger ? 'danger' : ''}
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        {confirmLabel}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Keep
      </button>
    </span>
  );
}

/**
 * Cursor pagination for a newest-first list: the cursors of the pages seen so far, so "Newer" goes back.
 * @returns the current cursor (undefined: first page) and the controls to render under the list
 */
export function usePager(resetKey: string): {
  cursor: string | undefined;
  controls: (next: string | null | undefined) => ComponentChildren;
} {
  const [stack, setStack] = useState<string[]>([]);
  useEffect(() => setStack([]), [resetKey]);
  const cursor = stack[stack.length - 1];
  return {
    cursor,
    controls: (next) => (
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={stack.length === 0} onClick={() => setStack((s) => s.slice(0, -1))}>
          ← Newer
        </button>
        <button type="button" disabled={!next} onClick={() => next && setStack((s) => [...s, next])}>
          Older →
        </button>
      </nav>
    ),
  };
}

/** An action's state: running, its last outcome, its last error; `setOutcome` for progress shown while it runs. */
export type Action<T> = {
  busy: boolean;
  outcome: T | null;
  error: unknown;
  setOutcome: (outcome: T | null) => void;
  /** Forgets the last outcome and error (e.g. when the page shows another item). */
  clear: () => void;
  /** Runs `action` (one at a time: buttons disable on `busy`), keeps its outcome or error, then calls `onDone`. */
  run: (action: () => Promise<T | null>) => Promise<void>;
};

/** The state of the buttons of a page that act through the API, then reload what they changed (`onDone`). */
export function useAction<T>(onDone: () => void): Action<T> {
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const run = async (action: () => Promise<T | null>) => {
    setBusy(true);
    setError(null);
    setOutcome(null);
    try {
      setOutcome(await action());
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
      onDone();
    }
  };
  const clear = useCallback(() => {
    setOutcome(null);
    setError(null);
  }, []);
  return { busy, outcome, error, setOutcome, clear, run };
}
