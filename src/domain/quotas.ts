/**
 * Per-tenant quotas (API.md "Access control and audit", "Operating tenants"): the most jobs `active` or `paused` at
 * once (`maxJobs`), API requests per second counted across every API process together (`requestsPerSecond`), and
 * callbacks sent per UTC day (`callbacksPerDay`). Each tenant's quota is its own override (`tenants.quotas`, set by the
 * operator with `PATCH /v1/admin/tenants/:tenantId`) or else the configured default (CHIME_QUOTA_*, src/config.ts).
 *
 * 0 means "no limit" everywhere (in the environment and in an override), as it always did for CHIME_MAX_ACTIVE_JOBS
 * and CHIME_RATE_LIMIT_PER_SECOND; an override set to `null` is removed, so the tenant follows the default again.
 */

/** The names of the quotas, as the API and `tenants.quotas` spell them. */
export const QUOTA_NAMES = ['maxJobs', 'requestsPerSecond', 'callbacksPerDay'] as const;
export type QuotaName = (typeof QUOTA_NAMES)[number];

/** A tenant's overrides (`tenants.quotas`): only the quotas the operator set. Each a whole number ≥ 0 (0: no limit). */
export type QuotaOverrides = Partial<Record<QuotaName, number>>;

/** The configured defaults, each a whole number ≥ 0 (0: no limit). */
export type QuotaDefaults = Record<QuotaName, number>;

/** A tenant's quotas in force: each a positive whole number, or null for no limit. */
export type EffectiveQuotas = Record<QuotaName, number | null>;

/** The largest value a quota may be set to (fits PostgreSQL's `integer`). */
export const MAX_QUOTA = 2_147_483_647;

/**
 * The overrides in a `tenants.quotas` value as read from the database, keeping only well-formed entries (a whole number
 * from 0 to MAX_QUOTA under a known name): anything else stored there is ignored rather than trusted.
 */
export function quotaOverridesOf(stored: unknown): QuotaOverrides {
  const out: QuotaOverrides = {};
  if (!stored || typeof stored !== 'object' || Array.isArray(stored)) return out;
  for (const name of QUOTA_NAMES) {
    const v = (stored as Record<string, unknown>)[name];
    if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_QUOTA) out[name] = v;
  }
  return out;
}

/** One quota in force: the override if set, else the default; 0 becomes null (no limit). */
export function effectiveQuota(name: QuotaName, overrides: QuotaOverrides, defaults: Partial<QuotaDefaults>): number | null {
  const v = overrides[name] ?? defaults[name] ?? 0;
  return v > 0 ? v : null;
}

/** Every quota in force for a tenant with `overrides` under `defaults`. */
export function effectiveQuotas(overrides: QuotaOverrides, defaults: Partial<QuotaDefaults>): EffectiveQuotas {
  return {
    maxJobs: effectiveQuota('maxJobs', overrides, defaults),
    requestsPerSecond: effectiveQuota('requestsPerSecond', overrides, defaults),
    callbacksPerDay: effectiveQuota('callbacksPerDay', overrides, defaults),
  };
}

/**
 * `overrides` changed by `patch`: a number sets a quota's override, null removes it, an absent name keeps it.
 * @returns a new object (the input is not changed)
 */
export function patchQuotaOverrides(overrides: QuotaOverrides, patch: Partial<Record<QuotaName, number | null>>): QuotaOverrides {
  const out: QuotaOverrides = { ...overrides };
  for (const name of QUOTA_NAMES) {
    if (!(name in patch)) continue;
    const v = patch[name];
    if (v === null || v === undefined) delete out[name];
    else out[name] = v;
  }
  return out;
}

/** Tenant statuses: `active`, or `suspended` by the operator (keys refused, runs held). */
export const TENANT_STATUSES = ['active', 'suspended'] as const;
export type TenantStatus = (typeof TENANT_STATUSES)[number];

const DAY_MS = 86_400_000;

/** The UTC day of `ms` (epoch ms), as `YYYY-MM-DD`. */
export function utcDay(ms: number): string {
  return new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}

/** The start (epoch ms) of the UTC day after the one `ms` (epoch ms) falls in. */
export function nextUtcDayStart(ms: number): number {
  return (Math.floor(ms / DAY_MS) + 1) * DAY_MS;
}
