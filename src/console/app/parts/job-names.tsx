/**
 * Jobs by name wherever a page shows a run: `jobLabel` (the name a job goes by), `useJobNames` (each job of a list
 * read once, a few at a time) and `JobLink`.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiProblem } from '../api.ts';
import { type Session, useSession } from '../session.tsx';
import type { Job } from '../types.ts';

/** Most job reads in flight at once (the API's rate limit is per tenant). */
const JOB_FETCH_CONCURRENCY = 4;

/** The name a job goes by: its name, else its key, else its id. */
export function jobLabel(job: Pick<Job, 'name' | 'key' | 'jobId'>): string {
  return job.name || job.key || job.jobId;
}

let jobFetchesActive = 0;
const jobFetchQueue: (() => void)[] = [];

/** Runs `task` when fewer than JOB_FETCH_CONCURRENCY job reads are in flight. */
async function limited<T>(task: () => Promise<T>): Promise<T> {
  if (jobFetchesActive >= JOB_FETCH_CONCURRENCY) await new Promise<void>((resolve) => jobFetchQueue.push(resolve));
  jobFetchesActive++;
  try {
    return await task();
  } finally {
    jobFetchesActive--;
    jobFetchQueue.shift()?.();
  }
}

/** A job's display name (`jobLabel`); null when it cannot be read (e.g. gone). */
async function readJobName(api: Session['api'], jobId: string): Promise<string | null> {
  try {
    return jobLabel(await limited(() => api<Job>('GET', `/v1/jobs/${encodeURIComponent(jobId)}`)));
  } catch (err) {
    if (err instanceof ApiProblem && err.status === 404) return null;
    throw err;
  }
}

/**
 * The names of the jobs `jobIds`, each distinct job read once while the calling component is mounted.
 * @returns a lookup: the name, null when the job has none (or is not readable), undefined while unknown
 */
export function useJobNames(jobIds: readonly string[]): (jobId: string) => string | null | undefined {
  const { api } = useSession();
  const names = useRef(new Map<string, string | null>());
  const asked = useRef(new Set<string>());
  const [, bump] = useState(0);
  const distinct = [...new Set(jobIds)].sort().join(',');
  useEffect(() => {
    let live = true;
    for (const jobId of distinct ? distinct.split(',') : []) {
      if (asked.current.has(jobId)) continue;
      asked.current.add(jobId);
      readJobName(api, jobId).then(
        (name) => {
          names.current.set(jobId, name);
          if (live) bump((n) => n + 1);
        },
        () => asked.current.delete(jobId), // a passing failure (429, network): asked again on the next render's change
      );
    }
    return () => {
      live = false;
    };
  }, [distinct, api]);
  return (jobId) => names.current.get(jobId);
}

/** A link to a job's page, showing its name when known, else its id. */
export function JobLink({ jobId, name }: { jobId: string; name: string | null | undefined }) {
  return (
    <a href={`/console/jobs/${encodeURIComponent(jobId)}`} title={jobId} class={name ? undefined : 'mono'}>
      {name ?? jobId}
    </a>
  );
}
