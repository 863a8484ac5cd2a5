/**
 * The job form's live preview: a moment after the schedule fields last changed, `POST /v1/schedules/preview` with
 * the schedule as read so far; the schedule in words and its next occurrences (in the viewer's zone, with a cron
 * schedule's own zone beside), or the API's errors beside the schedule's fields.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiProblem } from '../api.ts';
import { Occurrences } from '../parts/occurrences.tsx';
import { describeSchedule } from '../schedule-words.ts';
import type { Session } from '../session.tsx';
import type { Schedule } from '../types.ts';
import { scheduleOfForm } from './form-body.ts';
import { type Errors, type FieldName, type FormState, LABELS, scheduleFields, sortFieldErrors } from './form-model.ts';

const PREVIEW_DEBOUNCE_MS = 300;
const PREVIEW_COUNT = 10;

/** What the preview shows: occurrences of a schedule, a message, or nothing yet. */
export type Preview = { schedule: Schedule; occurrences: string[] } | { message: string } | null;

/**
 * Previews the form's schedule as it is typed.
 * @returns the preview, the API's errors about the schedule's fields, and what the form cannot read in the schedule
 *   fields already filled in (empty ones are reported on submit)
 */
export function useSchedulePreview(
  api: Session['api'],
  state: FormState,
  zone: string,
  exact: ReadonlyMap<string, string>,
): { preview: Preview; errors: Errors; unreadable: string[] } {
  const [preview, setPreview] = useState<Preview>(null);
  const [errors, setErrors] = useState<Errors>({});
  const built = scheduleOfForm(state, zone, exact);
  const scheduleKey = Object.keys(built.errors).length === 0 ? JSON.stringify(built.schedule) : '';
  const unreadable = Object.entries(built.errors)
    .filter(([f]) => String(state[f as FieldName]).trim() !== '')
    .map(([f, m]) => `${LABELS[f as FieldName]}: ${m}`);
  const generation = useRef(0);
  useEffect(() => {
    const n = ++generation.current;
    if (!scheduleKey) {
      setPreview(null);
      setErrors({});
      return;
    }
    const schedule = JSON.parse(scheduleKey) as Schedule;
    const timer = setTimeout(() => {
      api<{ occurrences: string[] }>('POST', '/v1/schedules/preview', { schedule, count: PREVIEW_COUNT }).then(
        (r) => {
          if (n !== generation.current) return;
          setPreview({ schedule, occurrences: r.occurrences });
          setErrors({});
        },
        (err: unknown) => {
          if (n !== generation.current) return;
          if (err instanceof ApiProblem && err.status === 400 && err.errors.length) {
            const { byField, unmatched } = sortFieldErrors(err.errors, ['type', ...scheduleFields(schedule.type)]);
            setErrors(byField);
            setPreview(unmatched.length ? { message: unmatched.map((e) => `${e.path}: ${e.message}`).join('; ') } : null);
          } else {
            setErrors({});
            setPreview({ message: err instanceof ApiProblem ? err.detail || err.title : String(err) });
          }
        },
      );
    }, PREVIEW_DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [scheduleKey]);
  return { preview, errors, unreadable };
}

/** The live preview: the schedule in words and its next occurrences, or why there are none. */
export function SchedulePreview({ preview, unreadable }: { preview: Preview; unreadable: string[] }) {
  let content: ComponentChildren;
  if (unreadable.length) content = <p class="muted">No preview: {unreadable.join('; ')}</p>;
  else if (preview === null) content = <p class="muted">Fill in the schedule to see when it runs.</p>;
  else if ('message' in preview) content = <p class="field-error">{preview.message}</p>;
  else
    content = (
      <>
        <p>{describeSchedule(preview.schedule)}</p>
        <Occurrences
          list={preview.occurrences}
          zone={preview.schedule.type === 'cron' ? (preview.schedule.timezone ?? 'UTC') : undefined}
        />
      </>
    );
  return (
    <section class="preview" aria-labelledby="preview-h" aria-live="polite">
      <h2 id="preview-h">Next occurrences</h2>
      {content}
    </section>
  );
}
