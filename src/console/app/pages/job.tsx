/**
 * One job (`/console/jobs/:jobId`): everything about it in words, its actions (pause, resume, trigger, edit, cancel,
 * replay its dead letters), its next occurrences and its run history, each run one click from its attempts.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { ApiProblem, qs } from '../api.ts';
import { describeRetry, describeSchedule, durationWords, type AnySchedule } from '../schedule-words.ts';
import { useSession } from '../session.tsx';
import type { Job, Page, Run, Schedule } from '../types.ts';
import { ConfirmButton, ErrorNote, Field, Status, Time, useAction, useAsync, usePager } from '../ui.tsx';
import { jobLabel } from './jobs.tsx';
import { RunsTable } from '../runs-table.tsx';
import { RUN_STATUSES } from '../../../domain/states.ts';

const RUN_PAGE_SIZE = 25;

/** Why a job is paused, in words. */
function pausedWhy(job: Job): string | null {
  switch (job.pausedReason) {
    case 'manual':
      return 'paused by you';
    case 'gone':
      return 'the receiver answered 410 Gone';
    case 'consecutive_failures':
      return `${job.consecutiveFailures} failed runs in a row`;
    default:
      return null;
  }
}

/**
 * The schedule to preview a stored job's next occurrences with: a stored `delay` is the instant it resolved to, and a
 * date list keeps its dates still to come. Null when nothing is left.
 */
function previewable(s: AnySchedule): Schedule | null {
  if (s.type === 'delay') return 'at' in s && s.at ? { type: 'once', at: s.at } : null;
  if (s.type === 'dates') {
    const now = Date.now();
    const dates = s.dates.filter((d) => Date.parse(d) > now);
    return dates.length ? { type: 'dates', dates } : null;
  }
  return s;
}

const orNone = (text: string) => (text ? text : <span class="muted">none</span>);

/** The facts list of a job: every setting in words (never the auth token, which the API does not return). */
function JobFacts({ job }: { job: Job }) {
  const why = pausedWhy(job);
  const headers = Object.entries(job.callback.headers);
  const metadata = Object.entries(job.metadata);
  const row = (term: string, value: ComponentChildren) => (
    <>
      <dt>{term}</dt>
      <dd>{value}</dd>
    </>
  );
  return (
    <dl class="facts">
      {row(
        'Status',
        <>
          <Status status={job.status} />
          {why && ` — ${why}`}
        </>,
      )}
      {row('Schedule', describeSchedule(job.schedule))}
      {row('Next run', <Time iso={job.nextRunAt} />)}
      {row('Last run', <Time iso={job.lastRunAt} />)}
      {row(
        'Callback',
        <>
          <code>{job.callback.method}</code> <span class="mono">{job.callback.url}</span>
        </>,
      )}
      {row(
        'Headers',
        headers.length ? (
          <ul class="plain">
            {headers.map(([k, v]) => (
              <li class="mono">
                {k}: {v}
              </li>
            ))}
          </ul>
        ) : (
          orNone('')
        ),
      )}
      {row('Authorization', job.callback.hasAuthToken ? 'Auth token: set' : 'Auth token: none')}
      {row('Success codes', job.callback.successStatusCodes.join(', '))}
      {row('Timeout', durationWords(job.callback.timeoutMs))}
      {row('Retry policy', describeRetry(job.retry))}
      {row('Relevancy window', job.relevancyWindowMs === null ? orNone('') : `${durationWords(job.relevancyWindowMs)} after the scheduled time`)}
      {row('Delivery mode', job.deliveryMode)}
      {row('Overlap', job.overlapPolicy === 'skip' ? 'skip: no new run while the previous one is in flight' : 'allow: runs may overlap')}
      {row('Catch-up', job.catchUp === 'one' ? 'one: after downtime, one missed run' : job.catchUp === 'all' ? 'all: after downtime, every missed run' : 'none: missed runs are skipped')}
      {row('Jitter', job.jitterMs ? `up to ${durationWords(job.jitterMs)}` : orNone(''))}
      {row(
        'Pause after failures',
        job.pauseAfterFailures ? `after ${job.pauseAfterFailures} failed runs in a row (now ${job.consecutiveFailures})` : `never (${job.consecutiveFailures} failed runs in a row now)`,
      )}
      {row('Metadata', orNone(metadata.map(([k, v]) => `${k}=${v}`).join(', ')))}
      {row('Payload', job.payload === undefined || job.payload === null ? orNone('') : <pre>{JSON.stringify(job.payload, null, 2)}</pre>)}
      {row('Key', job.key ? <span class="mono">{job.key}</span> : orNone(''))}
      {row('Job ID', <span class="mono">{job.jobId}</span>)}
      {row('Created', <Time iso={job.createdAt} />)}
      {row('Updated', <Time iso={job.updatedAt} />)}
    </dl>
  );
}

/** The next 10 occurrences of an active or paused job's schedule. */
function NextOccurrences({ job }: { job: Job }) {
  const { api } = useSession();
  const schedule = previewable(job.schedule);
  const key = JSON.stringify(schedule);
  const preview = useAsync(async () => (schedule ? (await api<{ occurrences: string[] }>('POST', '/v1/schedules/preview', { schedule, count: 10 })).occurrences : []), [key]);
  const list = preview.data;
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
        <ol class="occurrences" aria-label="Next occurrences">
          {list.map((iso) => (
            <li>
              <Time iso={iso} />
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

/** The run history of a job, filtered by status, newest first. */
function JobRuns({ jobId, tick }: { jobId: string; tick: number }) {
  const { api } = useSession();
  const [status, setStatus] = useState('');
  const pager = usePager(status);
  const runs = useAsync(
    () => api<Page<'runs', Run>>('GET', `/v1/jobs/${encodeURIComponent(jobId)}/runs${qs({ status, limit: RUN_PAGE_SIZE, cursor: pager.cursor })}`),
    [jobId, status, pager.cursor, tick],
  );
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
      {list && list.length > 0 && (
        <RunsTable runs={list} busy={runs.loading} />
      )}
      {runs.loading && !list && <p class="muted">Loading…</p>}
      {list && pager.controls(runs.data?.nextCursor)}
    </section>
  );
}

type Outcome = { kind: 'triggered'; runId: string } | { kind: 'replayed'; replayed: number; remaining: number } | { kind: 'text'; text: string };

/** `/console/jobs/:jobId`: one job, its actions, next occurrences and runs. */
export function JobPage() {
  const { api } = useSession();
  const jobId = useRoute().params['jobId'] ?? '';
  const path = `/v1/jobs/${encodeURIComponent(jobId)}`;
  const [tick, setTick] = useState(0);
  const job = useAsync(() => api<Job>('GET', path), [path, tick]);
  // Dead letters of this job still to replay: failed runs not yet dismissed (the newest 100 are looked at).
  const failed = useAsync(() => api<Page<'runs', Run>>('GET', `${path}/runs${qs({ status: 'failed', limit: 100 })}`), [path, tick]);
  // Each action shows its outcome (or error), then reloads the job and its runs.
  const { busy, outcome, error: actionError, run: act } = useAction<Outcome>(() => setTick((t) => t + 1));

  if (isNoSuchJob(job.error) && !job.data) return <NoSuchJob jobId={jobId} />;
  if (!job.data) {
    return job.error ? <ErrorNote error={job.error} /> : <p class="muted">Loading…</p>;
  }
  const j = job.data;
  const open = j.status === 'active' || j.status === 'paused';
  const deadLetters = (failed.data?.runs ?? []).filter((r) => !r.dismissedAt).length;

  return (
    <>
      <p class="crumbs">
        <a href="/console/jobs">Jobs</a>
      </p>
      <h1 class="wrap">{jobLabel(j)}</h1>
      <div class="actions" aria-busy={busy ? 'true' : undefined}>
        {j.status === 'active' && (
          <button type="button" disabled={busy} onClick={() =>
              act(async () => {
                await api('PATCH', path, { paused: true });
                return { kind: 'text', text: 'Paused.' };
              })
            }>
            Pause
          </button>
        )}
        {j.status === 'paused' && (
          <button type="button" disabled={busy} onClick={() =>
              act(async () => {
                await api('PATCH', path, { paused: false });
                return { kind: 'text', text: 'Resumed.' };
              })
            }>
            Resume
          </button>
        )}
        {j.status !== 'canceled' && (
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
        {j.status !== 'canceled' && (
          <a class="button" href={`/console/jobs/${j.jobId}/edit`}>
            Edit
          </a>
        )}
        {deadLetters > 0 && j.status !== 'canceled' && (
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
        {j.status !== 'canceled' && (
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
      <JobFacts job={j} />
      {open && <NextOccurrences job={j} />}
      <JobRuns jobId={j.jobId} tick={tick} />
    </>
  );
}

/** Whether loading a job failed because the tenant has no such job (404, or 400 for an id that is not a UUID). */
export function isNoSuchJob(error: unknown): boolean {
  return error instanceof ApiProblem && (error.status === 404 || error.status === 400);
}

/** The page for a job id the tenant does not have. */
export function NoSuchJob({ jobId }: { jobId: string }) {
  return (
    <>
      <h1>No such job</h1>
      <p class="notice">No such job: there is no job {jobId} in this tenant.</p>
      <p>
        <a href="/console/jobs">Back to the jobs</a>
      </p>
    </>
  );
}
