/**
 * Per-tenant estimates of open (`active` or `paused`) jobs, for the active-jobs quota (CHIME_MAX_ACTIVE_JOBS).
 *
 * Counting a tenant's open jobs reads up to the quota's worth of index entries, so a tenant well inside a quota of
 * 100,000 would pay that read on every creation. With an estimate, a creation is checked against the last exact count plus the jobs this process created
 * since, and the tenant is counted again only when that count is older than OPEN_JOBS_RECOUNT_MS or the estimate
 * comes within a margin of the quota.
 *
 * The estimate only errs high for what this process sees (jobs that ended since the count still count), so it never
 * refuses a job by itself: a refusal always follows an exact count. It misses other API processes' creations for up
 * to OPEN_JOBS_RECOUNT_MS; the margin (a twentieth of the quota) absorbs them. The quota was never exact under
 * concurrency (creations at the same moment each see the same count): a quota, not an invariant.
 */
import type { Clock } from '../domain/clock.ts';

/** Longest an exact count of a tenant's open jobs is used for, in ms. */
export const OPEN_JOBS_RECOUNT_MS = 10_000;
/** Most tenants held; past it the estimates start over (each tenant is counted again on its next creation). */
const MAX_TENANTS = 10_000;

type Estimate = { counted: number; added: number; countedAtMs: number };

/** The estimates of one process (one per store context), by tenant id; bounded to MAX_TENANTS tenants. */
export class OpenJobsEstimates {
  private readonly byTenant = new Map<string, Estimate>();

  constructor(
    private readonly clock: Clock,
    private readonly recountMs = OPEN_JOBS_RECOUNT_MS,
  ) {}

  /**
   * How many more jobs the tenant may make under `limit`, when the estimate can be trusted for `adding` more; null
   * when an exact count is needed (no recent count, or the estimate is within the margin of the quota).
   */
  room(tenantId: string, limit: number, adding: number): number | null {
    const e = this.byTenant.get(tenantId);
    if (!e || this.clock.now() - e.countedAtMs > this.recountMs) return null;
    const room = limit - e.counted - e.added;
    return room - adding >= Math.max(1, Math.ceil(limit / 20)) ? room : null;
  }

  /** Records an exact count of the tenant's open jobs (`open`, capped at the quota by the count itself). */
  counted(tenantId: string, open: number): void {
    if (this.byTenant.size >= MAX_TENANTS) this.byTenant.clear();
    this.byTenant.set(tenantId, { counted: open, added: 0, countedAtMs: this.clock.now() });
  }

  /** Records `n` open jobs this process created for the tenant since its count (a no-op without a count). */
  added(tenantId: string, n: number): void {
    const e = this.byTenant.get(tenantId);
    if (e) e.added += n;
  }
}
