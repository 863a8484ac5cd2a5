/**
 * Runs the claim takes but may not send yet (API.md "Operating tenants"): the claim statement reads each run's tenant
 * (its status and `callbacksPerDay` override, by primary key in the same bucket: `TENANT_OF_RUN`), and before it decides
 * anything this module gives back, untouched (`scheduled` or `retrying`, the attempt not counted, the job not advanced),
 * the runs of
 * - a **suspended** tenant: parked at HELD_UNTIL, far in the future, so that they leave the due part of
 *   `runs_due_idx` and cost no claim, no wake-up and no due-backlog probe while the tenant is suspended (a parked run is
 *   taken once, when it falls due). Resuming the tenant (`releaseHeldRuns`) makes them due at once; the claim then
 *   decides them as any late run: the relevancy window, catch-up and overlap policies apply.
 * - a tenant past its **callbacks per day** (`callbacksPerDay`: its override, else CHIME_QUOTA_CALLBACKS_PER_DAY):
 *   moved to the start of the next UTC day, when the claim takes them again (their relevancy window still applies).
 *
 * Cost on the hot path: nothing more for active tenants without that quota (the tenant's row is read by the claim
 * statement itself); with a `callbacksPerDay` quota, one upsert per claim (`tenant_callbacks`, a row per tenant and UTC
 * day), never a statement per run or per request.
 *
 * Races. A suspension commits while claims go on: a claim whose statement began before it sends what it took (a run
 * due at that very moment may go out). A resume and a park: the park re-reads the tenant rows `for share` before it
 * parks, so it either waits for the resume's commit and then sees `active` (the run goes out), or the resume's update
 * waits for the claim's commit and then finds the parked run (`releaseHeldRuns` runs after the resume's own update
 * of the tenant row, in its transaction). Callbacks counted: the claims of one tenant and day serialize on its
 * counter row; a run ended at the claim without a request (expired, skipped) still counts, an over-count of those.
 */
import { sql } from 'drizzle-orm';
import { effectiveQuota, nextUtcDayStart, quotaOverridesOf, utcDay } from '../../domain/quotas.ts';
import { SHARD_COUNT, shardOf } from '../../domain/shard.ts';
import { announceRun, batchByPrimaryKey, type Executor, epochMs, query } from '../db.ts';

/** Where a suspended tenant's due runs wait (`next_attempt_at`) until it is resumed: never due by any clock. */
export const HELD_UNTIL = new Date('9999-12-31T00:00:00.000Z');
const HELD_UNTIL_ISO = HELD_UNTIL.toISOString();

/**
 * The expression the claim statement returns as `tenant` for the run `r` of bucket `shard`: its tenant's status and
 * `callbacksPerDay` override as jsonb (null when the tenant row is missing).
 */
export function tenantOfRun(shard: number) {
  return sql`(select jsonb_build_object('status', t.status, 'callbacksPerDay', t.quotas->'callbacksPerDay') from tenants t
              where t.shard = ${shard} and t.id = r.tenant_id) as tenant`;
}

/** What `holdRuns` needs of a claimed row. */
export type HoldCandidate = {
  id: string;
  tenant_id: string;
  /** When the run was due (`next_attempt_at` before the claim). */
  due_at: Date | string;
  tenant: { status?: string; callbacksPerDay?: unknown } | null;
};

/**
 * Gives back the runs among `rows` (just claimed in bucket `shard`, in transaction `tx`) that may not be sent now: a
 * suspended tenant's (parked at HELD_UNTIL) and those past their tenant's callbacks per UTC day (moved to the next
 * day's start); counts the others against that quota. Call it in the claim's transaction, before deciding the runs.
 * @param nowMs the claim's time (epoch ms): a run's day is that of max(now, its due time)
 * @param defaultCallbacksPerDay CHIME_QUOTA_CALLBACKS_PER_DAY (0 = no limit)
 * @returns the ids of the runs given back (not to be decided or sent)
 */
export async function holdRuns(
  tx: Executor,
  shard: number,
  rows: readonly HoldCandidate[],
  nowMs: number,
  defaultCallbacksPerDay: number,
): Promise<Set<string>> {
  const held = new Set<string>();
  const suspect = [...new Set(rows.filter((r) => r.tenant && r.tenant.status !== 'active').map((r) => r.tenant_id))];
  if (suspect.length > 0) {
    // Read again under a share lock: a resume that committed meanwhile (or is committing) wins.
    const now = await query<{ id: string; status: string }>(
      tx,
      sql`select id, status from tenants where shard = ${shard}
          and id in (select value::uuid from jsonb_array_elements_text(${JSON.stringify(suspect)}::jsonb)) for share`,
    );
    const suspended = new Set(now.filter((t) => t.status !== 'active').map((t) => t.id));
    const parked = rows.filter((r) => suspended.has(r.tenant_id)).map((r) => r.id);
    if (parked.length > 0) {
      await giveBack(
        tx,
        shard,
        parked.map((id) => ({ id, until: HELD_UNTIL_ISO })),
      );
      for (const id of parked) held.add(id);
    }
  }

  // The callbacks-per-day quota of the others, per tenant and UTC day, in due order.
  const byTenantDay = new Map<string, { tenantId: string; day: string; quota: number; runs: HoldCandidate[] }>();
  const sorted = rows.filter((r) => !held.has(r.id)).sort((a, b) => epochMs(a.due_at) - epochMs(b.due_at));
  for (const r of sorted) {
    const override = quotaOverridesOf({ callbacksPerDay: r.tenant?.callbacksPerDay });
    const quota = effectiveQuota('callbacksPerDay', override, { callbacksPerDay: defaultCallbacksPerDay });
    if (quota === null) continue;
    const day = utcDay(Math.max(nowMs, epochMs(r.due_at)));
    const key = `${r.tenant_id} ${day}`;
    const group = byTenantDay.get(key) ?? { tenantId: r.tenant_id, day, quota, runs: [] };
    group.runs.push(r);
    byTenantDay.set(key, group);
  }
  if (byTenantDay.size === 0) return held;
  const groups = [...byTenantDay.values()];
  const counted = await query<{ tenant_id: string; day: string | Date; callbacks: number }>(
    tx,
    sql`insert into tenant_callbacks as c (shard, tenant_id, day, callbacks)
        select ${shard}, v.tenant_id, v.day, v.n
        from jsonb_to_recordset(${JSON.stringify(groups.map((g) => ({ tenant_id: g.tenantId, day: g.day, n: g.runs.length })))}::jsonb)
             as v(tenant_id uuid, day date, n int)
        on conflict (shard, tenant_id, day) do update set callbacks = c.callbacks + excluded.callbacks
        returning c.tenant_id, c.day::text as day, c.callbacks`,
  );
  const after = new Map(counted.map((c) => [`${c.tenant_id} ${String(c.day).slice(0, 10)}`, Number(c.callbacks)]));
  const refunds: { tenant_id: string; day: string; n: number }[] = [];
  const deferred: { id: string; until: string }[] = [];
  for (const g of groups) {
    const total = after.get(`${g.tenantId} ${g.day}`) ?? g.runs.length;
    const before = total - g.runs.length;
    const allowed = Math.max(0, Math.min(g.runs.length, g.quota - before));
    if (allowed === g.runs.length) continue;
    refunds.push({ tenant_id: g.tenantId, day: g.day, n: g.runs.length - allowed });
    const until = new Date(nextUtcDayStart(Date.parse(`${g.day}T00:00:00Z`))).toISOString();
    for (const r of g.runs.slice(allowed)) deferred.push({ id: r.id, until });
  }
  if (deferred.length === 0) return held;
  await query(
    tx,
    sql`update tenant_callbacks c set callbacks = c.callbacks - v.n
        from jsonb_to_recordset(${JSON.stringify(refunds)}::jsonb) as v(tenant_id uuid, day date, n int)
        where c.shard = ${shard} and c.tenant_id = v.tenant_id and c.day = v.day`,
  );
  await giveBack(tx, shard, deferred);
  for (const d of deferred) held.add(d.id);
  return held;
}

/**
 * Undoes the claim of `runs` (claimed in this transaction): `scheduled` again (`retrying` for a later attempt), the
 * attempt not counted, no lease, waiting until each one's `until` (ISO instant).
 */
export function giveBack(tx: Executor, shard: number, runs: { id: string; until: string }[]) {
  return query(tx, giveBackStatement(shard, runs));
}

/** `giveBack`'s statement; exported for the plan's test (test/store/queue-cost.test.ts). */
export function giveBackStatement(shard: number, runs: { id: string; until: string }[]) {
  return sql`update runs r
        set status = case when r.attempts > 1 then 'retrying' else 'scheduled' end, attempts = r.attempts - 1,
            next_attempt_at = v.until, started_at = case when r.attempts > 1 then r.started_at end,
            lease_owner = null, lease_expires_at = null
        from jsonb_to_recordset(${JSON.stringify(runs)}::jsonb) as v(id uuid, until timestamptz)
        where ${batchByPrimaryKey(
          'r',
          shard,
          runs.map((r) => r.id),
        )}`;
}

/**
 * Makes the runs a suspension parked (HELD_UNTIL) due at `nowMs` (epoch ms), and announces them so a sleeping
 * dispatcher wakes. Call it in the transaction that sets the tenant `active`, after that update (see the races above).
 * @returns how many runs were released
 */
export async function releaseHeldRuns(tx: Executor, tenantId: string, nowMs: number): Promise<number> {
  const shard = shardOf(tenantId);
  const released = await query<{ id: string }>(
    tx,
    sql`update runs set next_attempt_at = ${new Date(nowMs).toISOString()}::timestamptz
        where shard = ${shard} and status in ('scheduled', 'retrying') and next_attempt_at = ${HELD_UNTIL_ISO}::timestamptz
          and tenant_id = ${tenantId}
        returning id`,
  );
  if (released.length > 0) await announceRun(tx, nowMs, nowMs);
  return released.length;
}

/**
 * Deletes the callback counts (`tenant_callbacks`) of UTC days before yesterday at `nowMs` (epoch ms), bucket by
 * bucket (one statement each, routed to its shard on Citus): only today's count limits, yesterday's is kept to look at.
 * @returns how many rows were deleted
 */
export async function pruneTenantCallbacks(db: Executor, nowMs: number): Promise<number> {
  const before = utcDay(nowMs - 86_400_000);
  let deleted = 0;
  for (let shard = 0; shard < SHARD_COUNT; shard++) {
    const rows = await query<{ n: number | string }>(
      db,
      sql`with gone as (delete from tenant_callbacks where shard = ${shard} and day < ${before}::date returning 1) select count(*) as n from gone`,
    );
    deleted += Number(rows[0]?.n ?? 0);
  }
  return deleted;
}
