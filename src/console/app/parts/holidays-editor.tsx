/**
 * The calendars page's holidays editor: the calendar's holidays (sorted, each with its weekday and a button that
 * removes it), a date picker that adds one, and a text area that adds many pasted one per line (the lines that are not
 * dates stay in it, named). What the API says about the holidays is shown under them.
 */
import { useState } from 'preact/hooks';
import { Field } from '../ui.tsx';
import { isLocalDate, MAX_HOLIDAYS, mergeHolidays, readHolidays, weekdayOf } from './holidays.ts';

/** The holidays, and the controls that add and remove them. */
export function HolidaysEditor({
  holidays,
  onChange,
  error,
}: {
  holidays: readonly string[];
  onChange: (holidays: string[]) => void;
  error: string | undefined;
}) {
  const [date, setDate] = useState('');
  const [paste, setPaste] = useState('');
  const [problem, setProblem] = useState<{ date?: string; paste?: string }>({});
  const tooMany = (n: number) => (n > MAX_HOLIDAYS ? `at most ${MAX_HOLIDAYS} holidays` : undefined);

  const addOne = () => {
    if (!isLocalDate(date)) return setProblem({ date: 'choose a date' });
    const next = mergeHolidays(holidays, [date]);
    const over = tooMany(next.length);
    if (over) return setProblem({ date: over });
    onChange(next);
    setDate('');
    setProblem({});
  };
  const addPasted = () => {
    const { dates, bad } = readHolidays(paste);
    const next = mergeHolidays(holidays, dates);
    const over = tooMany(next.length);
    if (over) return setProblem({ paste: over });
    if (dates.length === 0 && bad.length === 0) return setProblem({ paste: 'paste dates, one per line: 2026-12-25' });
    onChange(next);
    // What could not be read stays to be corrected; what was added goes.
    const kept = paste.split('\n').filter((l) => l.trim() && !isLocalDate(l.trim()));
    setPaste(kept.join('\n'));
    setProblem(bad.length ? { paste: `not a date (YYYY-MM-DD): ${bad.join(', ')}` } : {});
  };

  return (
    <div class={`holidays${error ? ' invalid' : ''}`}>
      <h3 id="holidays-h">Holidays ({holidays.length})</h3>
      {holidays.length === 0 ? (
        <p class="muted">No holiday yet.</p>
      ) : (
        <ul class="holiday-list" aria-labelledby="holidays-h" aria-describedby={error ? 'cal-holidays-error' : undefined}>
          {holidays.map((d) => (
            <li key={d}>
              <time dateTime={d}>{d}</time> <span class="muted">{weekdayOf(d)}</span>{' '}
              <button type="button" class="small" aria-label={`Remove ${d}`} onClick={() => onChange(holidays.filter((h) => h !== d))}>
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      {error && (
        <small class="field-error" id="cal-holidays-error" role="alert">
          {error}
        </small>
      )}
      <div class="grid">
        <div>
          <Field id="cal-holiday" label="Add a holiday" error={problem.date}>
            <input
              id="cal-holiday"
              type="date"
              value={date}
              aria-invalid={problem.date ? true : undefined}
              onInput={(e) => setDate(e.currentTarget.value)}
              onKeyDown={(e) => {
                // Enter adds the date; it must not save the whole calendar.
                if (e.key === 'Enter') {
                  e.preventDefault();
                  addOne();
                }
              }}
            />
          </Field>
          <button type="button" onClick={addOne}>
            Add
          </button>
        </div>
        <div>
          <Field id="cal-paste" label="Paste holidays (one per line)" error={problem.paste} hint="YYYY-MM-DD, the calendar's local dates">
            <textarea
              id="cal-paste"
              value={paste}
              placeholder={'2026-12-25\n2026-12-26\n2027-01-01'}
              spellcheck={false}
              aria-invalid={problem.paste ? true : undefined}
              onInput={(e) => setPaste(e.currentTarget.value)}
            />
          </Field>
          <button type="button" onClick={addPasted}>
            Add these
          </button>
        </div>
      </div>
    </div>
  );
}
