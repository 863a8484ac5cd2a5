/** The tenant's calendars, every page of `GET /v1/calendars` (by key), for the calendars page and the job form. */
import type { Session } from '../session.tsx';
import type { Calendar, Page } from '../types.ts';

/** Calendars read per request (the API's most). */
const PAGE_SIZE = 100;
/** Pages read at most: 5,000 calendars, far more than a tenant keeps. */
const MAX_PAGES = 50;

/**
 * Every calendar of the tenant, by key.
 * @throws ApiProblem as `api` does (a key without `calendars:manage`: 403)
 */
export async function listAllCalendars(api: Session['api']): Promise<Calendar[]> {
  const all: Calendar[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const query = new URLSearchParams({ limit: String(PAGE_SIZE), ...(cursor ? { cursor } : {}) }).toString();
    const r: Page<'calendars', Calendar> = await api('GET', `/v1/calendars?${query}`);
    all.push(...r.calendars);
    cursor = r.nextCursor;
    if (!cursor) break;
  }
  return all;
}
