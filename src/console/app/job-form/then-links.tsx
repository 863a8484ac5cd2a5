/**
 * The job form's `then` links (API.md "Richer schedules", chaining): the jobs of the tenant to trigger when a run of
 * this one ends succeeded, failed or either. A link's job is picked by name, key or id: typing a part of a name or key
 * lists the matching jobs (`GET /v1/jobs?q=`) to choose from; the id chosen is shown with the job's name.
 */
import { useEffect, useState } from 'preact/hooks';
import { jobLabel, useJobNames } from '../parts/job-names.tsx';
import { useSession } from '../session.tsx';
import type { Job, Page } from '../types.ts';
import { Field } from '../ui.tsx';
import { type FormApi, keyAttrs } from './fields.tsx';
import { CHAIN_ON, controlId, MAX_CHAIN_LINKS, type ThenForm, thenKey } from './form-model.ts';

/** How long typing pauses before the jobs matching it are looked up. */
const SEARCH_DEBOUNCE_MS = 250;
/** Most jobs offered for one link. */
const SUGGESTIONS = 5;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What each `on` means, for the hint. */
const ON_WORDS: Record<string, string> = {
  succeeded: 'when a run of this job succeeds',
  failed: 'when a run of this job fails',
  finished: 'when a run of this job ends, either way',
};

/** The links, each a job and when, with buttons to add (up to 10) and remove them. */
export function ThenLinks({ f, selfId }: { f: FormApi; selfId: string | null }) {
  const links = f.state.then;
  const name = useJobNames(links.map((l) => l.jobId.trim()).filter((id) => UUID.test(id)));
  const update = (i: number, patch: Partial<ThenForm>) =>
    f.set(
      'then',
      links.map((l, j) => (j === i ? { ...l, ...patch } : l)),
    );
  return (
    <div class={`then-links${f.errors.then ? ' invalid' : ''}`}>
      {links.length === 0 && <p class="muted">No job is triggered after this one.</p>}
      {links.map((link, i) => (
        // biome-ignore lint/a11y/useSemanticElements: a row of the links' grid; a <fieldset> would draw a box in a box
        <div class="grid then-link" role="group" aria-label={`Link ${i + 1}`}>
          <JobPicker f={f} i={i} link={link} name={name} selfId={selfId} update={(patch) => update(i, patch)} />
          <Field id={controlId(thenKey(i, 'on'))} label="On" error={f.errors[thenKey(i, 'on')]} hint={ON_WORDS[link.on]}>
            <select {...keyAttrs(f.errors, thenKey(i, 'on'))} value={link.on} onChange={(e) => update(i, { on: e.currentTarget.value })}>
              {CHAIN_ON.map((on) => (
                <option value={on}>{on}</option>
              ))}
            </select>
          </Field>
          <div class="field">
            <button
              type="button"
              onClick={() =>
                f.set(
                  'then',
                  links.filter((_, j) => j !== i),
                )
              }
            >
              Remove link {i + 1}
            </button>
          </div>
        </div>
      ))}
      <button
        type="button"
        disabled={links.length >= MAX_CHAIN_LINKS}
        onClick={() => f.set('then', [...links, { jobId: '', on: 'succeeded' }])}
      >
        Add a job to trigger
      </button>
      {f.errors.then && (
        <small class="field-error" id={`${controlId('then')}-error`} role="alert">
          {f.errors.then}
        </small>
      )}
    </div>
  );
}

/** A link's job: typed as a name, key or id; matching jobs offered as buttons; the chosen one named. */
function JobPicker({
  f,
  i,
  link,
  name,
  selfId,
  update,
}: {
  f: FormApi;
  i: number;
  link: ThenForm;
  name: (jobId: string) => string | null | undefined;
  selfId: string | null;
  update: (patch: Partial<ThenForm>) => void;
}) {
  const { api } = useSession();
  const text = link.jobId.trim();
  const [found, setFound] = useState<{ query: string; jobs: Job[] }>({ query: '', jobs: [] });
  const searching = text !== '' && !UUID.test(text);
  useEffect(() => {
    if (!searching) return;
    let live = true;
    const timer = setTimeout(() => {
      api<Page<'jobs', Job>>('GET', `/v1/jobs?${new URLSearchParams({ q: text, limit: '20' }).toString()}`).then(
        (page) => live && setFound({ query: text, jobs: page.jobs.filter((j) => j.jobId !== selfId && j.status !== 'canceled') }),
        () => live && setFound({ query: text, jobs: [] }),
      );
    }, SEARCH_DEBOUNCE_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [text, searching, selfId]);
  const key = thenKey(i, 'jobId');
  const chosen = UUID.test(text) ? name(text) : undefined;
  const hint = UUID.test(text)
    ? chosen
      ? `→ ${chosen}`
      : chosen === null
        ? 'No such job of yours'
        : '…'
    : 'Type a part of its name or key, or its id';
  const offers = searching && found.query === text ? found.jobs.slice(0, SUGGESTIONS) : [];
  return (
    <div class="job-picker">
      <Field id={controlId(key)} label="Job" error={f.errors[key]} hint={hint}>
        <input
          type="text"
          {...keyAttrs(f.errors, key)}
          value={link.jobId}
          autocomplete="off"
          spellcheck={false}
          placeholder="nightly report"
          onInput={(e) => update({ jobId: e.currentTarget.value })}
        />
      </Field>
      {searching && found.query === text && (
        // biome-ignore lint/a11y/useSemanticElements: a short list of buttons, not a form control group
        <div class="offers" role="group" aria-label={`Jobs matching ${text}`}>
          {offers.length === 0 && <small class="muted">No job matches “{text}”.</small>}
          {offers.map((j) => (
            <button type="button" class="offer" title={j.jobId} onClick={() => update({ jobId: j.jobId })}>
              {jobLabel(j)}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}
