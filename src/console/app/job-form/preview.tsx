/**
 * The job form's live preview: a moment after the schedule fields (or the calendar) last changed,
 * `POST /v1/schedules/preview` with the schedule as read so far and the calendar; the schedule in words and its next
 * occurrences (in the viewer's zone, with a cron schedule's own zone beside), what the calendar moved or skipped, or
 * the API's errors beside the schedule's fields.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiProblem } from '../api.ts';
import { scheduleZoneOf } from '../parts/job-facts.tsx';
import { Occurrences } from '../parts/occurrences.tsx';
import { describeSchedule } from '../schedule-words.ts';
import type { Session } from '../session.tsx';
import type { Calendar, CalendarMove, SchedulePreview as PreviewAnswer, Schedule } from '../types.ts';
import { sortFieldErrors } from './field-paths.ts';
import { calendarOfForm, scheduleOfForm } from './form-body.ts';
import { type ErrorKey, type Errors, type FieldName, type FormState, LABELS, type MemberField, scheduleKeys } from './form-model.ts';

const PREVIEW_DEBOUNCE_MS = 300;
const PREVIEW_COUNT = 10;

/** What the preview shows: occurrences of a schedule (with the calendar's moves), a message, or nothing yet. */
export type Preview =
  | { schedule: Schedule; occurrences: string[]; calendarKey: string | null; moves: CalendarMove[] }
  | { message: string }
  | null;

/** The text typed in the field of `key`, and its label (a union's schedule's field: "Schedule 2, Cron expression"). */
function typed(state: FormState, key: ErrorKey): { text: string; label: string } {
  const m = /^members\.(\d+)\.(\w+)$/.exec(key);
  if (m) {
    const field = m[2] as MemberField | 'type';
    return { text: state.members[Number(m[1])]?.[field] ?? '', label: `Schedule ${Number(m[1]) + 1}, ${LABELS[field]}` };
  }
  const value = state[key as FieldName];
  return { text: typeof value === 'string' ? value : 'x', label: LABELS[key as FieldName] ?? key };
}

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
  const calendar = calendarOfForm(state);
  const requestKey = Object.keys(built.errors).length === 0 ? JSON.stringify({ schedule: built.schedule, calendar }) : '';
  const unreadable = (Object.entries(built.errors) as [ErrorKey, string][])
    .map(([key, message]) => ({ ...typed(state, key), message }))
    .filter((e) => e.text.trim() !== '')
    .map((e) => `${e.label}: ${e.message}`);
  const generation = useRef(0);
  useEffect(() => {
    const n = ++generation.current;
    if (!requestKey) {
      setPreview(null);
      setErrors({});
      return;
    }
    const request = JSON.parse(requestKey) as { schedule: Schedule; calendar: { key: string; roll: string } | null };
    const { schedule } = request;
    const timer = setTimeout(() => {
      const body = { schedule, ...(request.calendar ? { calendar: request.calendar } : {}), count: PREVIEW_COUNT };
      api<PreviewAnswer>('POST', '/v1/schedules/preview', body).then(
        (r) => {
          if (n !== generation.current) return;
          setPreview({ schedule, occurrences: r.occurrences, calendarKey: request.calendar?.key ?? null, moves: r.calendar ?? [] });
          setErrors({});
        },
        (err: unknown) => {
          if (n !== generation.current) return;
          if (err instanceof ApiProblem && err.status === 400 && err.errors.length) {
            const shown = [...scheduleKeys(schedule.type, state.members), 'calendar', 'roll'] as ErrorKey[];
            const { byField, unmatched } = sortFieldErrors(err.errors, shown);
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
  }, [requestKey]);
  return { preview, errors, unreadable };
}

/**
 * The live preview: the schedule in words and its next occurrences, or why there are none.
 * @param calendars the tenant's calendars (to say why the calendar moved an occurrence), when known
 */
export function SchedulePreview({
  preview,
  unreadable,
  calendars,
}: {
  preview: Preview;
  unreadable: string[];
  calendars?: readonly Calendar[] | null;
}) {
  let content: ComponentChildren;
  if (unreadable.length) content = <p class="muted">No preview: {unreadable.join('; ')}</p>;
  else if (preview === null) content = <p class="muted">Fill in the schedule to see when it runs.</p>;
  else if ('message' in preview) content = <p class="field-error">{preview.message}</p>;
  else {
    const calendar = calendars?.find((c) => c.key === preview.calendarKey);
    content = (
      <>
        <p>
          {describeSchedule(preview.schedule)}
          {preview.calendarKey && `, on the business days of ${calendar?.name || preview.calendarKey}`}
        </p>
        <Occurrences list={preview.occurrences} zone={scheduleZoneOf(preview.schedule)} moves={preview.moves} calendar={calendar} />
      </>
    );
  }
  return (
    <section class="preview" aria-labelledby="preview-h" aria-live="polite">
      <h2 id="preview-h">Next occurrences</h2>
      {content}
    </section>
  );
}
