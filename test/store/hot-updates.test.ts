/**
 * A recurring job's claim updates its job row HOT (issue #36; PostgreSQL's heap-only tuples, src/backend/access/heap/
 * README.HOT): the claim advances `next_run_at`, `last_run_at` and `scheduled_runs`, none of them indexed, so the new
 * row version stays on its page and adds no entry to any of the job's indexes (two of them GIN: search trigrams and
 * metadata). An index on any of those columns, or a predicate naming one, would make every such update write an entry
 * into every index of `jobs`.
 *
 * JOBS interval jobs of realistic width (a payload, a name, metadata), registered together so they fill whole pages,
 * each due at a second of its own and claimed one after another as a dispatcher under steady traffic would: at least
 * HOT_SHARE of the job updates must be HOT (`pg_stat_user_tables.n_tup_hot_upd`). Measured: 200 of 200 on both
 * databases with `jobs` at fillfactor 50 (171 of 200 at 100: the first update on each packed page found no room).
 *
 * A once-job's claim completes it: `status` changes, which no index of `jobs` names (the open jobs are a table of their
 * own, `open_jobs`, whose row the claim deletes), so that update can be HOT too, if the page has room for the new
 * version: ONCE_JOBS once-jobs registered together, due together and claimed in batches of CLAIM_BATCH, as a drain
 * claims them, each page's rows updated in one transaction (no pruning between), so the room is what the table's
 * fillfactor (drizzle/0020_open_jobs.sql) left. At least ONCE_HOT_SHARE of those updates must be HOT, and `open_jobs`
 * must lose each completed job. Measured: 500 of 500 on both databases (200 of 500 at fillfactor 70).
 *
 * The same claims update the runs HOT too (drizzle/0021_claim_hot.sql): the claim sets the status, the lease, the
 * attempt and the start, and no index of `runs` names any of them (the conditions of the partial indexes that depend
 * on the status are generated columns whose value the claim leaves as it was; a leased run keeps its due time), and
 * `runs` is filled to half its pages: at least RUN_HOT_SHARE of the claims must be HOT (measured: 497 of 500 on both
 * databases). A lease's renewal moves `lease_expires_at` only, which no index names: renewing every lease at once
 * right after the claims, each page still holding the claims' old versions, at least RENEW_HOT_SHARE must be HOT
 * (measured: 334 and 362 of 500). With `status` and the lease in indexes, none of either was.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import type { JobSpec } from '../../src/domain/job.ts';
import { type Database, query } from '../../src/store/db.ts';
import { createJobs } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { renewLeases } from '../../src/store/queue/renew-leases.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

const JOBS = 200;
const HOT_SHARE = 0.8;
const ONCE_JOBS = 500;
const CLAIM_BATCH = 25;
const ONCE_HOT_SHARE = 0.8;
const RUN_HOT_SHARE = 0.8;
const RENEW_HOT_SHARE = 0.5;
const EVERY_MS = 3_600_000;

/** The table's updates and HOT updates so far, as the statistics system has them. */
async function tableUpdates(database: Database, table: 'jobs' | 'runs'): Promise<{ upd: number; hot: number }> {
  // PostgreSQL 15 sends a backend's counts at most once a second; this forces this backend's out now (the others'
  // come when their connections end or go idle).
  await query(database.db, sql`select pg_stat_force_next_flush()`);
  const [row] = await query<{ upd: string | number; hot: string | number }>(
    database.db,
    sql`select n_tup_upd as upd, n_tup_hot_upd as hot from pg_stat_user_tables where relname = ${table}`,
  );
  return { upd: Number(row!.upd), hot: Number(row!.hot) };
}

/** Jobs of realistic width: a name, a payload, metadata. */
const wideSpec = (i: number, schedule: JobSpec['schedule']) =>
  testJobSpec(T0, {
    name: `nightly export of account ${i}`,
    schedule,
    payload: { account: i, note: 'x'.repeat(400) },
    metadata: { team: 'billing', account: String(i) },
  });

/** Claims due runs `batch` at a time at `nowMs` as owner A until `n` are claimed; each claim must take some. */
async function claimAll(database: Database, n: number, batch: number, nowMs: number): Promise<ClaimedRun[]> {
  const claimed: ClaimedRun[] = [];
  while (claimed.length < n) {
    const runs = await claimRuns(database.db, { owner: 'A', limit: batch, nowMs, leaseMarginMs: 30_000 });
    expect(runs.length, 'runs claimed').toBeGreaterThan(0);
    claimed.push(...runs);
  }
  return claimed;
}

/** Waits until the statistics count `n` more updates of `table` than `before`; the updates and HOT updates since. */
async function updatesSince(database: Database, before: { upd: number; hot: number }, n: number, table: 'jobs' | 'runs' = 'jobs') {
  let now = before;
  await eventually(
    async () => {
      now = await tableUpdates(database, table);
      return now.upd - before.upd >= n;
    },
    { timeoutMs: 30_000, what: `${n} ${table} updates counted (${now.upd - before.upd} so far)` },
  );
  return { updates: now.upd - before.upd, hot: now.hot - before.hot };
}

describe.each(DATABASE_TARGETS)('HOT job updates at the claim on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });

  it(`updates at least ${HOT_SHARE * 100} % of ${JOBS} recurring jobs' rows HOT when claimed one by one`, { timeout: 60_000 }, async () => {
    const specs = Array.from({ length: JOBS }, (_, i) =>
      wideSpec(i, { type: 'interval', everyMs: EVERY_MS, startAt: new Date(T0 + (i + 1) * 1_000).toISOString() }),
    );
    await createJobs(store.ctx, tenantId, specs, T0);
    // The claims run on a database of their own (on PostgreSQL, its own connections), closed before the count is
    // read: a backend sends its statistics when its connection ends.
    const claimer = store.openAnother() ?? store.database;
    const before = await tableUpdates(store.database, 'jobs');
    for (let i = 1; i <= JOBS; i++) {
      const claimed = await claimRuns(claimer.db, { owner: 'A', limit: 10, nowMs: T0 + i * 1_000, leaseMarginMs: 30_000 });
      expect(claimed.length, `runs claimed at second ${i}`).toBe(1);
    }
    if (claimer !== store.database) await claimer.close();
    const { updates, hot } = await updatesSince(store.database, before, JOBS);
    console.log(`${target.kind}: ${hot} of ${updates} job updates at the claim were HOT`);
    expect(updates).toBe(JOBS);
    expect(hot / updates, `${hot} of ${updates} job updates HOT`).toBeGreaterThanOrEqual(HOT_SHARE);
  });

  it(`completes at least ${ONCE_HOT_SHARE * 100} % of ${ONCE_JOBS} once-jobs HOT when claimed ${CLAIM_BATCH} at a time`, {
    timeout: 60_000,
  }, async () => {
    const at = new Date(T0 + 1_000).toISOString();
    const made = await createJobs(
      store.ctx,
      tenantId,
      Array.from({ length: ONCE_JOBS }, (_, i) => wideSpec(i, { type: 'once', at })),
      T0,
    );
    const ids = `{${made.map((j) => j.id).join(',')}}`;
    const open = async () =>
      Number(
        (
          await query<{ n: string | number }>(
            store.database.db,
            sql`select count(*) as n from open_jobs where tenant_id = ${tenantId} and job_id = any(${ids}::uuid[])`,
          )
        )[0]!.n,
      );
    expect(await open()).toBe(ONCE_JOBS);
    const claimer = store.openAnother() ?? store.database;
    const before = await tableUpdates(store.database, 'jobs');
    await claimAll(claimer, ONCE_JOBS, CLAIM_BATCH, T0 + 1_000);
    if (claimer !== store.database) await claimer.close();
    const { updates, hot } = await updatesSince(store.database, before, ONCE_JOBS);
    console.log(`${target.kind}: ${hot} of ${updates} once-job completions at the claim were HOT`);
    expect(updates).toBe(ONCE_JOBS);
    expect(hot / updates, `${hot} of ${updates} completions HOT`).toBeGreaterThanOrEqual(ONCE_HOT_SHARE);
    expect(await open()).toBe(0);
    const statuses = await query<{ status: string }>(
      store.database.db,
      sql`select distinct status from jobs where tenant_id = ${tenantId}`,
    );
    expect(statuses.map((r) => r.status)).toEqual(['completed']);
  });

  it(`claims at least ${RUN_HOT_SHARE * 100} % and renews at least ${RENEW_HOT_SHARE * 100} % of ${ONCE_JOBS} runs HOT, claimed ${CLAIM_BATCH} at a time`, {
    timeout: 60_000,
  }, async () => {
    const at = new Date(T0 + 1_000).toISOString();
    await createJobs(
      store.ctx,
      tenantId,
      Array.from({ length: ONCE_JOBS }, (_, i) => wideSpec(i, { type: 'once', at })),
      T0,
    );
    const claimer = store.openAnother() ?? store.database;
    const beforeClaims = await tableUpdates(store.database, 'runs');
    const claimed = await claimAll(claimer, ONCE_JOBS, CLAIM_BATCH, T0 + 1_000);
    if (claimer !== store.database) await claimer.close();
    const claims = await updatesSince(store.database, beforeClaims, ONCE_JOBS, 'runs');
    console.log(`${target.kind}: ${claims.hot} of ${claims.updates} run updates at the claim were HOT`);
    expect(claims.updates).toBe(ONCE_JOBS);
    expect(claims.hot / claims.updates, `${claims.hot} of ${claims.updates} claims HOT`).toBeGreaterThanOrEqual(RUN_HOT_SHARE);

    const beforeRenewals = await tableUpdates(store.database, 'runs');
    const renewer = store.openAnother() ?? store.database;
    const held = await renewLeases(
      renewer.db,
      'A',
      claimed.map((r) => ({ shard: r.shard, runId: r.runId, attempt: r.attempt, leaseExpiresAtMs: r.leaseExpiresAtMs + 60_000 })),
    );
    expect(held.size).toBe(ONCE_JOBS);
    if (renewer !== store.database) await renewer.close();
    const renewals = await updatesSince(store.database, beforeRenewals, ONCE_JOBS, 'runs');
    console.log(`${target.kind}: ${renewals.hot} of ${renewals.updates} lease renewals were HOT`);
    expect(renewals.updates).toBe(ONCE_JOBS);
    expect(renewals.hot / renewals.updates, `${renewals.hot} of ${renewals.updates} renewals HOT`).toBeGreaterThanOrEqual(RENEW_HOT_SHARE);
  });
});
