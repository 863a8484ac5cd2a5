/**
 * Creating (`/console/jobs/new`) and editing (`/console/jobs/:jobId/edit`) a job. The form keeps every value as the
 * user typed it; its model (job-form/form-model.ts, form-body.ts) reads it into the API's job body, reporting what it
 * cannot read beside its field; the schedule is previewed live; the API's `400` errors are shown beside the fields
 * they name. An edit sends only the top-level fields that changed, and the auth token only when one is typed.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { ApiProblem } from '../api.ts';
import { sortFieldErrors } from '../job-form/field-paths.ts';
import type { FormApi } from '../job-form/fields.tsx';
import { bodyOfForm, changedFields } from '../job-form/form-body.ts';
import {
  blankForm,
  controlId,
  type ErrorKey,
  type Errors,
  type FormState,
  formFromJob,
  SCHEDULE_FIELDS,
  visibleFields,
  withType,
} from '../job-form/form-model.ts';
import { SchedulePreview, useSchedulePreview } from '../job-form/preview.tsx';
import {
  CallbackSection,
  DataSection,
  DeliverySection,
  JobSection,
  RetrySection,
  ScheduleSection,
  ThenSection,
} from '../job-form/sections.tsx';
import { listAllCalendars } from '../parts/calendar-list.ts';
import { jobLabel } from '../parts/job-names.tsx';
import { isNoSuchJob, NoSuchJob } from '../parts/notices.tsx';
import { useSession } from '../session.tsx';
import type { Calendar, Job } from '../types.ts';
import { ErrorNote, useAsync } from '../ui.tsx';
import { viewerZone } from '../zones.ts';

/** What a submit did not save: the messages by field, the one above the form, and whether to say "not saved". */
type Refusal = { byField: Errors; top: unknown; notSaved: boolean };

/** Forgets the messages about `name` and, for a list (a union's schedules, the links), about each of its entries. */
function forget(byField: Errors, name: ErrorKey): void {
  delete byField[name];
  for (const key of Object.keys(byField) as ErrorKey[]) if (key.startsWith(`${name}.`)) delete byField[key];
}

/**
 * The tenant's calendars for the form's choice: undefined while they load, null when this key cannot list them (then
 * the calendar's key is typed).
 */
function useCalendars(): Calendar[] | null | undefined {
  const { api, can } = useSession();
  const allowed = can('calendars:manage');
  const list = useAsync(async () => (allowed ? listAllCalendars(api) : null), [allowed]);
  if (list.error) return null;
  return list.loading && list.data === undefined ? undefined : (list.data ?? null);
}

/** The form itself, for a new job (`job` null) or an existing one. */
function JobForm({ job }: { job: Job | null }) {
  const { api } = useSession();
  const calendars = useCalendars();
  const { route } = useLocation();
  const edit = job !== null;
  const zone = useMemo(viewerZone, []);
  const start = useMemo(() => (job ? formFromJob(job, zone) : { form: blankForm(zone), exact: new Map<string, string>() }), [job, zone]);
  const exact = start.exact;
  const [state, setState] = useState<FormState>(start.form);
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [saving, setSaving] = useState(false);
  const [focusTick, setFocusTick] = useState(0);
  const preview = useSchedulePreview(api, state, zone, exact);

  const visible = visibleFields(state.type, edit, { members: state.members, then: state.then });
  const errors: Errors = { ...preview.errors, ...refusal?.byField };

  const set: FormApi['set'] = (name, value) => {
    setState((s) => (name === 'type' ? withType(s, value as FormState['type']) : { ...s, [name]: value }));
    setRefusal((r) => {
      if (!r) return r;
      const byField = { ...r.byField };
      forget(byField, name);
      // The live preview checks the schedule again: its older errors are stale.
      if (SCHEDULE_FIELDS.includes(name)) for (const f of SCHEDULE_FIELDS) forget(byField, f);
      return { byField, top: r.top, notSaved: false };
    });
  };
  const refuse = (next: Refusal) => {
    setRefusal(next);
    setFocusTick((t) => t + 1);
  };

  // After a refused submit, the first field in error takes the focus.
  useEffect(() => {
    if (focusTick === 0) return;
    const first = visible.find((f) => errors[f]);
    if (first) document.getElementById(controlId(first))?.focus();
  }, [focusTick]);

  const onSubmit = async (e: Event) => {
    e.preventDefault();
    if (saving) return;
    const { body, errors: unreadable } = bodyOfForm(state, { zone, edit, exact });
    if (Object.keys(unreadable).length > 0) return refuse({ byField: unreadable, top: null, notSaved: true });
    const send = edit ? changedFields(body, bodyOfForm(start.form, { zone, edit, exact }).body) : body;
    if (job && Object.keys(send).length === 0) return route(`/console/jobs/${job.jobId}`);
    setSaving(true);
    try {
      const saved = await api<Job>(job ? 'PATCH' : 'POST', job ? `/v1/jobs/${encodeURIComponent(job.jobId)}` : '/v1/jobs', send);
      route(`/console/jobs/${saved.jobId}`);
    } catch (err) {
      if (err instanceof ApiProblem && err.status === 400 && err.errors.length) {
        const { byField, unmatched } = sortFieldErrors(err.errors, visible);
        const top = unmatched.length
          ? new ApiProblem(err.status, err.title, unmatched.map((u) => `${u.path}: ${u.message}`).join('; '), unmatched)
          : null;
        refuse({ byField, top, notSaved: true });
      } else {
        setRefusal({ byField: {}, top: err, notSaved: true });
      }
    } finally {
      setSaving(false);
    }
  };

  const f: FormApi = { state, errors, set };
  return (
    <>
      <p class="crumbs">
        <a href="/console/jobs">Jobs</a>
        {job && (
          <>
            {' › '}
            <a href={`/console/jobs/${job.jobId}`}>{jobLabel(job)}</a>
          </>
        )}
      </p>
      <h1>{edit ? 'Edit job' : 'New job'}</h1>
      <form class="job-form" noValidate onSubmit={onSubmit} aria-busy={saving ? 'true' : undefined}>
        <ErrorNote error={refusal?.top} />
        <JobSection f={f} edit={edit} />
        <ScheduleSection
          f={f}
          calendars={calendars}
          preview={<SchedulePreview preview={preview.preview} unreadable={preview.unreadable} calendars={calendars} />}
        />
        <CallbackSection f={f} tokenSet={job?.callback.hasAuthToken ?? false} />
        <RetrySection f={f} />
        <DeliverySection f={f} />
        <ThenSection f={f} selfId={job?.jobId ?? null} />
        <DataSection f={f} />
        <div class="actions">
          <button type="submit" class="primary" disabled={saving}>
            {edit ? 'Save changes' : 'Create job'}
          </button>
          <a class="button" href={job ? `/console/jobs/${job.jobId}` : '/console/jobs'}>
            Back
          </a>
          <span role="status" class="field-error">
            {refusal?.notSaved && !saving ? 'Not saved: see the messages above.' : ''}
          </span>
        </div>
      </form>
    </>
  );
}

/** Loads the job to edit, then its form. */
function EditJob({ jobId }: { jobId: string }) {
  const { api } = useSession();
  const job = useAsync(() => api<Job>('GET', `/v1/jobs/${encodeURIComponent(jobId)}`), [jobId]);
  if (isNoSuchJob(job.error)) return <NoSuchJob jobId={jobId} />;
  if (job.error) return <ErrorNote error={job.error} />;
  if (!job.data) return <p class="muted">Loading…</p>;
  if (job.data.status === 'canceled') {
    return (
      <>
        <h1>Edit job</h1>
        <p class="notice">
          This job is canceled and cannot be changed. <a href={`/console/jobs/${job.data.jobId}`}>Back to the job</a>
        </p>
      </>
    );
  }
  return <JobForm key={job.data.jobId} job={job.data} />;
}

/** `/console/jobs/new` and `/console/jobs/:jobId/edit`: the job form, empty or prefilled. */
export function JobFormPage() {
  const jobId = useRoute().params.jobId;
  return jobId ? <EditJob jobId={jobId} /> : <JobForm key="new" job={null} />;
}
