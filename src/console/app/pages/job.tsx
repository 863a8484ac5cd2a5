/**
 * One job (`/console/jobs/:jobId`): everything about it in words, its actions (pause, resume, trigger, edit, cancel,
 * replay its dead letters), its next occurrences, its run history (each run one click from its attempts) and its result
 * deliveries. The job and its runs update themselves (live, with a pause control).
 */
import { useCallback, useEffect, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { RUN_STATUSES } from '../../../domain/states.ts';
import { ApiProblem, qs } from '../api.ts';
import { JobFacts, scheduleZone } from '../parts/job-facts.tsx';
import { jobLabel } from '../parts/job-names.tsx';
import { isNoSuchJob, NoSuchJob } from '../parts/notices.tsx';
import { Occurrences } from '../parts/occurrences.tsx';
import { RefreshPauser, useLiveRefresh } from '../parts/refresh-pauser.tsx';
import { ResultDeliveries } from '../parts/result-deliveries.tsx';
import { lastRunOf } from '../parts/run-order.ts';
import { RunsTable } from '../parts/runs-table.tsx';
import type { AnySchedule } from '../schedule-words.ts';
import { useSession } from '../session.tsx';
import type { Calendar, Job, Page, Run, Schedule, SchedulePreview, UnionMember } from '../types.ts';
import { ConfirmButton, ErrorNote, Field, useAction, useAsync, usePager } from '../ui.tsx';

const RUN_PAGE_SIZE = 25;
/** The newest runs read to find the last one that happened (the newest is often the next one, still waiting). */
const LAST_RUN_WINDOW = 10;

/**
 * The schedule to preview a stored job's next occurrences with: a stored `delay` is the instant it resolved to, and a
 * date list keeps its dates still to come (a union, its schedules with something left). Null when nothing is left.
 */
function previewable(s: AnySchedule): Schedule | null {
  if (s.type === 'delay') return 'at' in s && s.at ? { type: 'once', at: s.at } : null;
  if (s.type === 'dates') {
    const now = Date.now();
    const dates = s.dates.filter((d) => Date.parse(d) > now);
    return dates.length ? { type: 'dates', dates } : null;
  }
  if (s.type === 'union') {
    const left = s.schedules.map((m) => previewable(m) as UnionMember | null).filter((m) => m !== null);
    return left.length > 1 ? { type: 'union', schedules: left } : (left[0] ?? null);
  }
  return s;
}

/** The next 10 occurrences of an active or paused job's schedule, with what its calendar moves or skips. */
function NextOccurrences({ job }: { job: Job }) {
  const { api, can } = useSession();
  const schedule = previewable(job.schedule);
  const key = JSON.stringify([schedule, job.calendar]);
  const preview = useAsync(
    async (): Promise<SchedulePreview> =>
      schedule
        ? api<SchedulePreview>('POST', '/v1/schedules/preview', {
            schedule,
            ...(job.calendar ? { calendar: job.calendar } : {}),
            count: 10,
          })
        : { occurrences: [] },
    [key],
  );
  // The calendar itself says why an occurrence moved (a holiday, a weekend day): read when this key may.
  const calendarKey = job.calendar && can('calendars:manage') ? job.calendar.key : null;
  const calendar = useAsync(
    async () => (calendarKey ? api<Calendar>('GET', `/v1/calendars/${encodeURIComponent(calendarKey)}`).catch(() => undefined) : undefined),
    [calendarKey],
  );
  const list = preview.data?.occurrences;
  return (
    <section aria-labelledby="next-h">
      <h2 id="next-h">Next occurrences</h2>
      {preview.error instanceof ApiProblem && preview.error.status === 400 ? (
        <p class="muted">No occurrence left.</p>
      ) : (
        <ErrorNote error={preview.error} />
      )}
      {list && list.length === 0 && !preview.error && <p class="muted">No occurrence left.</p>}
      {list && list.length > 0 && (
        <Occurrences list={list} zone={scheduleZone(job)} moves={preview.data?.calendar} calendar={calendar.data} />
      )}
    </section>
  );
}

/** The run history of a job, filtered by status, newest first. */
function JobRuns({ job, tick, live }: { job: Job; tick: number; live: number }) {
  const jobId = job.jobId;
  const { api } = useSession();
  const [status, setStatus] = useState('');
  const pager = usePager(status);
  const runs = useAsync(
    () =>
      api<Page<'runs', Run>>(
        'GET',
        `/v1/jobs/${encodeURIComponent(jobId)}/runs${qs({ status, limit: RUN_PAGE_SIZE, cursor: pager.cursor })}`,
      ),
    [jobId, status, pager.cursor, tick],
  );
  const { refresh } = runs;
  useEffect(() => {
    if (live > 0) refresh();
  }, [live, refresh]);
  const list = runs.data?.runs;
  return (
    <section aria-labelledby="runs-h">
      <h2 id="runs-h">Runs</h2>
      <div class="toolbar">
        <Field id="run-status" label="Run status">
          <select id="run-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">any</option>
            {RUN_STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </Field>
      </div>
      <ErrorNote error={runs.error} />
      {list && list.length === 0 && <p class="muted">{status ? `No ${status} run.` : 'No run yet.'}</p>}
      {list && list.length > 0 && <RunsTable runs={list} busy={runs.loading} zone={scheduleZone(job)} />}
      {runs.loading && !list && <p class="muted">Loading…</p>}
      {list && pager.controls(runs.data?.nextCursor)}
    </section>
  );
}

type Outcome =
  | { kind: 'triggered'; runId: string }
  | { kind: 'replayed'; replayed: number; remaining: number }
  | { kind: 'text'; text: string };

/** `/console/jobs/:jobId`: one job, its actions, next occurrences and runs. */
export function JobPage() {
  const { api, can } = useSession();
  const jobId = useRoute().params.jobId ?? '';
  const path = `/v1/jobs/${encodeURIComponent(jobId)}`;
  const [tick, setTick] = useState(0);
  const job = useAsync(() => api<Job>('GET', path), [path, tick]);
  // Dead letters of this job still to replay: failed runs not yet dismissed (the newest 100 are looked at).
  const failed = useAsync(() => api<Page<'runs', Run>>('GET', `${path}/runs${qs({ status: 'failed', limit: 100 })}`), [path, tick]);
  // The newest runs, any trigger: the last one that happened is shown with the facts.
  const recent = useAsync(() => api<Page<'runs', Run>>('GET', `${path}/runs${qs({ limit: LAST_RUN_WINDOW })}`), [path, tick]);
  // Each action shows its outcome (or error), then reloads the job and its runs.
  const { busy, outcome, error: actionError, run: act } = useAction<Outcome>(() => setTick((t) => t + 1));
  // Live: the job, its last run, its dead letters and its run history read again quietly.
  const [live, setLive] = useState(0);
  const refreshAll = useCallback(() => {
    job.refresh();
    failed.refresh();
    recent.refresh();
    setLive((n) => n + 1);
  }, [job.refresh, failed.refresh, recent.refresh]);
  const liveState = useLiveRefresh(refreshAll);

  if (isNoSuchJob(job.error) && !job.data) return <NoSuchJob jobId={jobId} />;
  if (!job.data) {
    return job.error ? <ErrorNote error={job.error} /> : <p class="muted">Loading…</p>;
  }
  const j = job.data;
  const open = j.status === 'active' || j.status === 'paused';
  const deadLetters = (failed.data?.runs ?? []).filter((r) => !r.dismissedAt).length;
  const writable = can('jobs:write');

  return (
    <>
      <p class="crumbs">
        <a href="/console/jobs">Jobs</a>
      </p>
      <h1 class="wrap">{jobLabel(j)}</h1>
      <div class="actions" aria-busy={busy ? 'true' : undefined}>
        {writable && j.status === 'active' && (
          <button
            type="button"
            disabled={busy}
            onClick={() =>
              act(async () => {
                await api('PATCH', path, { paused: true });
                return { kind: 'text', text: 'Paused.' };
              })
            }
          >
            Pause
          </button>
        )}
        {writable && j.status === 'paused' && (
          <button
            type="button"
            disabled={busy}
            onClick={() =>
              act(async () => {
                await api('PATCH', path, { paused: false });
                return { kind: 'text', text: 'Resumed.' };
              })
            }
          >
            Resume
          </button>
        )}
        {writable && j.status !== 'canceled' && (
          <button
            type="button"
            disabled={busy}
            onClick={() =>
              act(async () => {
                const { runId } = await api<{ runId: string }>('POST', `${path}/trigger`);
                return { kind: 'triggered', runId };
              })
            }
          >
            Trigger now
          </button>
        )}
        {writable && j.status !== 'canceled' && (
          <a class="button" href={`/console/jobs/${j.jobId}/edit`}>
            Edit
          </a>
        )}
        {can('runs:write') && deadLetters > 0 && j.status !== 'canceled' && (
          <button
            type="button"
            disabled={busy}
            onClick={() =>
              act(async () => {
                const r = await api<{ replayed: number; remaining: number }>('POST', '/v1/dead-letters/replay', { jobId: j.jobId });
                return { kind: 'replayed', replayed: r.replayed, remaining: r.remaining };
              })
            }
          >
            Replay failed runs
          </button>
        )}
        {writable && j.status !== 'canceled' && (
          <ConfirmButton
            label="Cancel job"
            question="Cancel this job? Its future runs are canceled; history is kept."
            confirmLabel="Yes, cancel job"
            danger
            disabled={busy}
            onConfirm={() =>
              void act(async () => {
                await api('DELETE', path);
                return { kind: 'text', text: 'The job is canceled.' };
              })
            }
          />
        )}
      </div>
      <div aria-live="polite">
        {outcome?.kind === 'triggered' && (
          <p class="notice">
            Run <a href={`/console/runs/${outcome.runId}`}>{outcome.runId}</a> queued
          </p>
        )}
        {outcome?.kind === 'replayed' && (
          <p class="notice">
            Replayed {outcome.replayed} failed {outcome.replayed === 1 ? 'run' : 'runs'}; {outcome.remaining} remaining.
          </p>
        )}
        {outcome?.kind === 'text' && <p class="notice">{outcome.text}</p>}
      </div>
      <ErrorNote error={actionError} />
      {j.status === 'canceled' && <p class="muted">This job is canceled: it will not run again. Its history is kept below.</p>}
      <RefreshPauser live={liveState} />
      <JobFacts job={j} lastRun={recent.data ? lastRunOf(recent.data.runs) : undefined} />
      {open && <NextOccurrences job={j} />}
      <JobRuns job={j} tick={tick} live={live} />
      <ResultDeliveries job={j} live={live} />
    </>
  );
}
