/**
 * A job's facts in words, for its page: every setting (never the auth token, which the API does not return), its
 * status with why it is paused or how its last run ended, its last run of any trigger, and its next run in the
 * viewer's zone beside the schedule's own.
 */
import type { ComponentChildren } from 'preact';
import { type AnySchedule, describeRetry, describeSchedule, durationWords } from '../schedule-words.ts';
import { useSession } from '../session.tsx';
import type { Job, Run } from '../types.ts';
import { Status, Time } from '../ui.tsx';
import { JobLink, useJobNames } from './job-names.tsx';

/** Why a job is paused, in words. */
function pausedWhy(job: Job): string | null {
  switch (job.pausedReason) {
    case 'manual':
      return 'paused by you';
    case 'gone':
      return 'the receiver answered 410 Gone';
    case 'consecutive_failures':
      return `${job.consecutiveFailures} failed runs in a row`;
    case 'receiver':
      return 'the receiver answered Chime-Control: pause';
    default:
      return null;
  }
}

/** The zone a schedule keeps its own clock in: a cron schedule's, or the one zone of a union's cron schedules; if any. */
export function scheduleZoneOf(schedule: AnySchedule): string | undefined {
  if (schedule.type === 'cron') return schedule.timezone ?? 'UTC';
  if (schedule.type !== 'union') return undefined;
  const zones = new Set(schedule.schedules.flatMap((m) => (m.type === 'cron' ? [m.timezone ?? 'UTC'] : [])));
  return zones.size === 1 ? [...zones][0] : undefined;
}

/** The zone a job's schedule keeps its own clock in (`scheduleZoneOf`), if any. */
export function scheduleZone(job: Pick<Job, 'schedule'>): string | undefined {
  return scheduleZoneOf(job.schedule);
}

/** What a calendar's roll does, in words. */
const ROLL_WORDS: Record<string, string> = {
  skip: 'a run on a weekend day or holiday is skipped',
  next: 'a run on a weekend day or holiday moves to the next business day',
  previous: 'a run on a weekend day or holiday moves to the previous business day',
};
/** What each overlap policy does, in words. */
const OVERLAP_WORDS: Record<string, string> = {
  allow: 'allow: runs may overlap',
  skip: 'skip: no new run while the previous one is in flight',
  'buffer-one': 'buffer-one: the next run waits for the one in flight to end; later ones are skipped',
};
/** How each jitter mode draws the offset, in words. */
const JITTER_MODE_WORDS: Record<string, string> = {
  stable: 'the same offset every time',
  random: 'a new random offset each run',
  spread: 'where the fewest of your runs to this destination are due',
};

/**
 * A job that will not run again (completed, canceled) whose last run did not succeed: so that a one-off whose only
 * run failed does not read as done and fine.
 */
function endedBadly(job: Job, last: Run | null): string | null {
  if (job.status !== 'completed' && job.status !== 'canceled') return null;
  if (!last || last.status === 'succeeded') return null;
  return last.status === 'running' || last.status === 'retrying' ? `its last run is still ${last.status}` : `its last run ${last.status}`;
}

const orNone = (text: string) => (text ? text : <span class="muted">none</span>);

/** The last run of a job: when, how it ended, what started it, linked to its attempts. */
function LastRun({ run }: { run: Run | null | undefined }) {
  if (run === undefined) return <span class="muted">…</span>;
  if (run === null) return <span class="muted">none yet</span>;
  return (
    <>
      <Status status={run.status} />{' '}
      <a href={`/console/runs/${run.runId}`}>
        <Time iso={run.startedAt ?? run.finishedAt} />
      </a>{' '}
      <span class="muted">({run.trigger})</span>
    </>
  );
}

/**
 * The facts list of a job.
 * @param lastRun the run that happened last, any trigger (undefined while unknown, null when none has)
 */
export function JobFacts({ job, lastRun }: { job: Job; lastRun: Run | null | undefined }) {
  const { can } = useSession();
  const names = useJobNames((job.then ?? []).map((l) => l.jobId));
  const why = pausedWhy(job);
  const badEnd = endedBadly(job, lastRun ?? null);
  const zone = scheduleZone(job);
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
          {badEnd && <strong class="bad-end"> — {badEnd}</strong>}
        </>,
      )}
      {row('Schedule', describeSchedule(job.schedule))}
      {row(
        'Calendar',
        job.calendar ? (
          <>
            {can('calendars:manage') ? (
              <a href="/console/calendars" class="mono">
                {job.calendar.key}
              </a>
            ) : (
              <span class="mono">{job.calendar.key}</span>
            )}
            , roll {job.calendar.roll}: {ROLL_WORDS[job.calendar.roll]}
          </>
        ) : (
          orNone('')
        ),
      )}
      {row(
        'Max runs',
        job.maxRuns === null || job.maxRuns === undefined
          ? `no limit (${job.scheduledRuns ?? 0} scheduled runs so far)`
          : `${job.maxRuns}: ${job.scheduledRuns ?? 0} scheduled runs so far, the job completes after the last`,
      )}
      {row('Next run', <Time iso={job.nextRunAt} zone={zone} />)}
      {row('Last run', <LastRun run={lastRun} />)}
      {row(
        'Last scheduled run',
        <>
          <Time iso={job.lastRunAt} zone={zone} />{' '}
          <small class="muted">(the schedule's own; manual runs and replays are not counted)</small>
        </>,
      )}
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
      {row('Authorization', authWords(job.callback))}
      {job.callback.jwtAudience ? row('JWT audience', <span class="mono">{job.callback.jwtAudience}</span>) : null}
      {row('Success codes', job.callback.successStatusCodes.join(', '))}
      {row('Timeout', durationWords(job.callback.timeoutMs))}
      {row(
        'Success body',
        job.callback.successBody === null
          ? orNone('')
          : 'contains' in job.callback.successBody
            ? `contains “${job.callback.successBody.contains}”`
            : `${job.callback.successBody.jsonPointer} equals ${JSON.stringify(job.callback.successBody.equals)}`,
      )}
      {row(
        'Completion',
        job.completion.mode === 'async'
          ? `reported by the receiver, within ${durationWords(job.completion.timeoutMs ?? 0)}${
              job.completion.heartbeatTimeoutMs ? `, a heartbeat at least every ${durationWords(job.completion.heartbeatTimeoutMs)}` : ''
            }`
          : 'the response ends the run',
      )}
      {row(
        'Results to',
        job.onSuccess || job.onFailure
          ? [job.onSuccess && `succeeded runs: ${job.onSuccess.url}`, job.onFailure && `failed runs: ${job.onFailure.url}`]
              .filter(Boolean)
              .join('; ')
          : orNone(''),
      )}
      {row('Retry policy', describeRetry(job.retry))}
      {row(
        'Relevancy window',
        job.relevancyWindowMs === null ? orNone('') : `${durationWords(job.relevancyWindowMs)} after the scheduled time`,
      )}
      {row('Delivery mode', job.deliveryMode)}
      {row('Overlap', OVERLAP_WORDS[job.overlapPolicy] ?? job.overlapPolicy)}
      {row(
        'Catch-up',
        job.catchUp === 'one'
          ? 'one: after downtime, one missed run'
          : job.catchUp === 'all'
            ? 'all: after downtime, every missed run'
            : 'none: missed runs are skipped',
      )}
      {row(
        'Jitter',
        job.jitterMs
          ? `up to ${durationWords(job.jitterMs)}, ${job.jitterMode ?? 'stable'}: ${JITTER_MODE_WORDS[job.jitterMode ?? 'stable']}`
          : orNone(''),
      )}
      {row(
        'Then',
        job.then?.length ? (
          <ul class="plain">
            {job.then.map((l) => (
              <li>
                on {l.on}: <JobLink jobId={l.jobId} name={names(l.jobId)} />
              </li>
            ))}
          </ul>
        ) : (
          orNone('')
        ),
      )}
      {row(
        'Pause after failures',
        job.pauseAfterFailures
          ? `after ${job.pauseAfterFailures} failed runs in a row (now ${job.consecutiveFailures})`
          : `never (${job.consecutiveFailures} failed runs in a row now)`,
      )}
      {row('Metadata', orNone(metadata.map(([k, v]) => `${k}=${v}`).join(', ')))}
      {job.body !== null && job.body !== undefined
        ? row('Body', <pre>{job.body}</pre>)
        : row(
            'Payload',
            job.payload === undefined || job.payload === null ? orNone('') : <pre>{JSON.stringify(job.payload, null, 2)}</pre>,
          )}
      {job.callback.contentType ? row('Content type', <span class="mono">{job.callback.contentType}</span>) : null}
      {row('Key', job.key ? <span class="mono">{job.key}</span> : orNone(''))}
      {row('Job ID', <span class="mono">{job.jobId}</span>)}
      {row('Created', <Time iso={job.createdAt} />)}
      {row('Updated', <Time iso={job.updatedAt} />)}
    </dl>
  );
}

/** How a callback authenticates, in words (never a secret: the Job has none to show). */
function authWords(callback: Job['callback']): string {
  const auth = callback.auth;
  if (auth?.type === 'basic') return `Basic, user ${auth.username ?? ''}`;
  if (auth?.type === 'oauth2') {
    const extra = [auth.scope && `scope ${auth.scope}`, auth.audience && `audience ${auth.audience}`].filter(Boolean).join(', ');
    return `OAuth2 client credentials: client ${auth.clientId ?? ''} at ${auth.tokenUrl ?? ''}${extra ? ` (${extra})` : ''}`;
  }
  return callback.hasAuthToken ? 'Auth token: set' : 'Auth token: none';
}
