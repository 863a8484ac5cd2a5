/**
 * The next occurrences of a schedule, as the job form's preview and a job's page list them; with a calendar, the
 * occurrences it moved ("Dec 25 … (holiday) → Dec 29 …", several moved to one time on one line) and skipped
 * ("Dec 26 … skipped (weekend: Saturday)").
 */
import type { Calendar, CalendarMove } from '../types.ts';
import { Time } from '../ui.tsx';
import { nonBusinessReason, occurrenceLines } from './calendar-days.ts';

/**
 * A list of upcoming instants, each in the viewer's zone and, for a schedule in another zone, in that one too.
 * @param moves what the calendar moved or skipped (the preview's `calendar`)
 * @param calendar the calendar, to say why (a holiday, a weekend day); without it only that the calendar did
 */
export function Occurrences({
  list,
  zone,
  moves,
  calendar,
}: {
  list: readonly string[];
  zone?: string | undefined;
  moves?: readonly CalendarMove[] | undefined;
  calendar?: Calendar | undefined;
}) {
  // Why the calendar did not fire one as it is: its reason, or only that the calendar did when the calendar is unknown.
  const why = (iso: string) => `(${(calendar ? nonBusinessReason(iso, calendar) : null) ?? 'calendar'})`;
  return (
    <ol class="occurrences" aria-label="Next occurrences">
      {occurrenceLines(list, moves).map((line) => {
        if (line.kind === 'skipped')
          return (
            <li class="skipped">
              <s>
                <Time iso={line.at} zone={zone} />
              </s>{' '}
              skipped <span class="calendar-why">{why(line.at)}</span>
            </li>
          );
        if (line.from.length === 0)
          return (
            <li>
              <Time iso={line.at} zone={zone} />
            </li>
          );
        return (
          <li class="moved">
            {line.from.map((from, i) => (
              <>
                {i > 0 && ', '}
                <s>
                  <Time iso={from} zone={zone} />
                </s>{' '}
                <span class="calendar-why">{why(from)}</span>
              </>
            ))}{' '}
            → <Time iso={line.at} zone={zone} />
          </li>
        );
      })}
    </ol>
  );
}
