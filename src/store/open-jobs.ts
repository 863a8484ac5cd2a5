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
import { sql } from 'drizzle-orm';
import type { Clock } from '../domain/clock.ts';
import { shardOf } from '../domain/shard.ts';
import { type Executor, query, uuidArray } from './db.ts';

/**
 * Makes `open_jobs` (schema.ts) agree with `jobs` for these jobs of bucket `shard`, after a statement of the caller's
 * transaction changed their status off the claim's hot path (a cancel, a re-plan that completes or reopens a job, a
 * receiver's `complete` or `skip-next`): a row for each that is `active` or `paused` and of kind `callback`, none for
 * the others. One statement; no statement for no jobs.
 */
export async function syncOpenJobs(tx: Executor, shard: number, jobIds: readonly string[]): Promise<void> {
  if (jobIds.length === 0) return;
  await query(
    tx,
    sql`with j as (
          select id, tenant_id, status in ('active', 'paused') and kind = 'callback' as open from jobs
          where shard = ${shard} and id = any(${uuidArray(jobIds)}::uuid[])),
        added as (
          insert into open_jobs (shard, tenant_id, job_id) select ${shard}::smallint, tenant_id, id from j where open
          on conflict do nothing)
        delete from open_jobs o using j where o.shard = ${shard} and o.tenant_id = j.tenant_id and o.job_id = j.id and not j.open`,
  );
}

/**
 * The tenant's open jobs (`active` or `paused`, its own: not the hidden jobs of notification endpoints), counted up to
 * `limit`: an index-only scan of `open_jobs`' primary key, so it costs at most `limit` index entries whatever the
 * tenant's history of finished jobs.
 */
export async function countOpenJobs(db: Executor, tenantId: string, limit: number): Promise<number> {
  const [row] = await query<{ n: number | string }>(
    db,
    sql`select count(*) as n from (select 1 from open_jobs where shard = ${shardOf(tenantId)} and tenant_id = ${tenantId}
          limit ${limit}) open`,
  );
  return Number(row?.n ?? 0);
}

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

/**
 * The tenant's open jobs (active or paused callback jobs) naming each key of `keys` in `column` (a calendar, a flow
 * control), by key, 0 for a key none names: one grouped statement on the tenant's shard.
 */
export async function openJobsNaming(
  db: Executor,
  tenantId: string,
  column: 'calendar_key' | 'flow_control_key',
  keys: readonly string[],
): Promise<Map<string, number>> {
  const counts = new Map(keys.map((k) => [k, 0]));
  if (keys.length === 0) return counts;
  const rows = await query<{ key: string; n: number | string }>(
    db,
    sql`select ${sql.identifier(column)} as key, count(*) as n from jobs where tenant_id = ${tenantId} and shard = ${shardOf(tenantId)}
        and ${sql.identifier(column)} in (select value from jsonb_array_elements_text(${JSON.stringify(keys)}::jsonb))
        and status in ('active', 'paused') and kind = 'callback'
        group by ${sql.identifier(column)}`,
  );
  for (const r of rows) counts.set(r.key, Number(r.n));
  return counts;
}
