/**
 * Live lists (River UI's `RefreshPauser`): the lists of jobs and runs read themselves again every few seconds, quietly
 * (nothing turns busy), until the user pauses them; one pause holds for every page of the tab until resumed. A
 * hidden tab does not refresh.
 */
import { useEffect, useState } from 'preact/hooks';

/** How often a live list is read again. */
export const LIVE_REFRESH_MS = 5_000;

/** Whether live updates are paused, for every page of this tab (kept in memory: a reload resumes them). */
let paused = false;
const listeners = new Set<(paused: boolean) => void>();

function setPaused(value: boolean): void {
  paused = value;
  for (const l of listeners) l(value);
}

/** The pause state of live updates, and its toggle. */
export type Live = { paused: boolean; toggle: () => void };

/**
 * Calls `refresh` every LIVE_REFRESH_MS while live updates are not paused and the tab is visible.
 * @param refresh reads the list again (quietly: `Async.refresh`)
 */
export function useLiveRefresh(refresh: () => void): Live {
  const [isPaused, setLocal] = useState(paused);
  useEffect(() => {
    listeners.add(setLocal);
    setLocal(paused);
    return () => void listeners.delete(setLocal);
  }, []);
  useEffect(() => {
    if (isPaused) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') refresh();
    }, LIVE_REFRESH_MS);
    return () => clearInterval(timer);
  }, [isPaused, refresh]);
  return { paused: isPaused, toggle: () => setPaused(!paused) };
}

/** The pause control of a live list: says whether the list updates itself, and pauses or resumes it. */
export function RefreshPauser({ live }: { live: Live }) {
  return (
    <span class="refresh-pauser">
      <button type="button" aria-pressed={live.paused ? 'true' : 'false'} onClick={live.toggle}>
        {live.paused ? 'Resume live updates' : 'Pause live updates'}
      </button>
      <span class="muted" role="status">
        {live.paused ? 'Paused: this list does not update itself.' : `Live: updates every ${LIVE_REFRESH_MS / 1000} s.`}
      </span>
    </span>
  );
}
