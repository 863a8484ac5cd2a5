/** Notices several pages show: the dead letter banner, and the page for a job the tenant does not have. */
import { ApiProblem, qs } from '../api.ts';
import { useSession } from '../session.tsx';
import type { Page, Run } from '../types.ts';
import { useAsync } from '../ui.tsx';

/** A notice, shown while any dead letter waits, linking to the dead letters page (nothing otherwise). */
export function DeadLetterBanner() {
  const { api } = useSession();
  const { data } = useAsync(() => api<Page<'runs', Run>>('GET', `/v1/dead-letters${qs({ limit: 1 })}`), []);
  if (!data || data.runs.length === 0) return null;
  return (
    <p class="notice" role="status">
      There are failed runs waiting: <a href="/console/dead-letters">see dead letters</a>
    </p>
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
