/**
 * What an API key may do (API.md "Access control and audit"): each key holds scopes, and each tenant route needs
 * one (src/api/route-scopes.ts). `*` holds every scope; it is the default, and what `POST /v1/tenants` returns.
 * Scope names follow OAuth 2.0's convention of `resource:action` strings (RFC 6749 §3.3).
 */

/** Every scope a key can hold, besides `*`. */
export const SCOPES = [
  'jobs:read',
  'jobs:write',
  'runs:read',
  'runs:write',
  'keys:manage',
  'notifications:manage',
  'calendars:manage',
  'flow-controls:manage',
  'audit:read',
  'usage:read',
] as const;
export type Scope = (typeof SCOPES)[number];
/** All scopes, present and future. */
export const ALL_SCOPES = '*';
export type KeyScope = Scope | typeof ALL_SCOPES;

/** Whether a key holding `held` may do what `needed` allows. */
export function holdsScope(held: readonly string[], needed: Scope): boolean {
  return held.includes(ALL_SCOPES) || held.includes(needed);
}

/**
 * The scopes of `requested` that a key holding `held` may not grant (a key never mints a wider key): `*` unless
 * `held` has it, and each scope `held` lacks. Empty when `requested` is within `held`.
 */
export function scopesBeyond(held: readonly string[], requested: readonly string[]): string[] {
  if (held.includes(ALL_SCOPES)) return [];
  return requested.filter((s) => s === ALL_SCOPES || !held.includes(s));
}

/** `scopes` without duplicates, `*` alone when present, the rest in SCOPES' order: the stored form. */
export function normalizeScopes(scopes: readonly string[]): KeyScope[] {
  if (scopes.includes(ALL_SCOPES)) return [ALL_SCOPES];
  return SCOPES.filter((s) => scopes.includes(s));
}
