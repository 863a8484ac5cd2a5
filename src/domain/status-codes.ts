/**
 * Which HTTP response statuses count as success for a job: a list of exact codes (`200`) and classes (`"2xx"`).
 */
export type StatusCodeSpec = number | `${1 | 2 | 3 | 4 | 5}xx`;

/** The success codes of a job that names none. */
export const DEFAULT_SUCCESS_CODES: readonly StatusCodeSpec[] = Object.freeze(['2xx']);

/** A status class string such as "2xx". */
export const STATUS_CLASS_PATTERN = /^[1-5]xx$/;

/** True when `status` matches one of `specs` (an exact code, or its class such as "2xx"). */
export function isSuccessStatus(status: number, specs: readonly StatusCodeSpec[]): boolean {
  for (const s of specs) {
    if (typeof s === 'number' ? s === status : Math.floor(status / 100) === Number(s[0])) return true;
  }
  return false;
}
