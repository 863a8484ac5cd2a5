/**
 * The console's client of the public `/v1` API: same origin, `Authorization: Bearer <API key>`, JSON in and out,
 * problem details (RFC 9457) turned into `ApiProblem`. The key is kept in this tab's sessionStorage only (API.md
 * "The console": never a cookie, never a URL), so it is gone when the tab closes.
 */

import type { FieldError } from './types.ts';

export type { FieldError };

/** An answer of the API that is not a success: its problem details. */
export class ApiProblem extends Error {
  override name = 'ApiProblem';
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly errors: FieldError[] = [],
  ) {
    super(detail || title);
  }
  /** The message of the error about `path`, if the API named it. */
  fieldError(path: string): string | undefined {
    return this.errors.find((e) => e.path === path)?.message;
  }
}

const KEY_STORAGE = 'chime.console.apiKey';

/** The API key this tab signed in with (sessionStorage), or null. */
export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_STORAGE);
}
/** Keeps `key` in this tab's sessionStorage, or forgets it (null) with everything else the console kept there. */
export function storeKey(key: string | null): void {
  if (key !== null) {
    sessionStorage.setItem(KEY_STORAGE, key);
    return;
  }
  for (const name of Object.keys(sessionStorage)) if (name.startsWith('chime.console.')) sessionStorage.removeItem(name);
}

/**
 * Calls the API with `key`.
 * @throws ApiProblem for any answer outside 2xx (a network failure: status 0)
 */
export async function call<T>(key: string, method: string, path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiProblem(0, 'The service cannot be reached', String(err));
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON: a proxy's error page (502, 504); the status says what happened.
    if (!res.ok) throw new ApiProblem(res.status, res.statusText || `HTTP ${res.status}`, '');
    throw new ApiProblem(res.status, 'Unreadable answer', 'the service answered something other than JSON');
  }
  if (!res.ok) {
    const p = (json ?? {}) as { title?: string; detail?: string; errors?: FieldError[] };
    throw new ApiProblem(res.status, p.title ?? res.statusText, p.detail ?? '', p.errors ?? []);
  }
  return json as T;
}

/** A query string of the defined, non-empty values (`?a=1&b=x`), or ''. */
export function qs(params: Record<string, string | number | undefined | null>): string {
  const pairs = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '');
  return pairs.length ? `?${new URLSearchParams(pairs.map(([k, v]) => [k, String(v)])).toString()}` : '';
}
