/** The browser's `datetime-local` inputs and UTC instants, both ways (the inputs show the browser's time zone). */

/** A `datetime-local` value (the browser's time zone) as a UTC ISO instant; '' for '' or an unreadable value. */
export function isoFromLocalInput(value: string): string {
  if (!value) return '';
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}

/** A UTC ISO instant as a `datetime-local` value in the browser's time zone (to the minute); '' when unreadable. */
export function localInputFromIso(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}
