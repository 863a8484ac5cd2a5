/**
 * A recurring job's claim updates its job row HOT (issue #36; PostgreSQL's heap-only tuples, src/backend/access/heap/
 * README.HOT): the claim advances `next_run_at`, `last_run_at` and `scheduled_runs`, none of them indexed, so the new
 * row version stays on its page and adds no entry to any of the job's indexes (two of them GIN: search trigrams and
 * metadata). An index on any of those columns, or a predicate naming one, would make every such update write an entry
 * into every index of `jobs`.
 *
 * JOBS interval jobs of realistic width (a payload, a name, metadata), registered together so they fill whole pages,
 * each due at a second of its own and claimed one after another as a dispatcher under steady traffic would: at least
 * HOT_SHARE of the job updates must be HOT (`pg_stat_user_tables.n_tup_hot_upd`). Measured: 171 of 200 on both
 * databases; the others are the first update on each packed page (no room until pruning frees the dead versions of
 * earlier transactions' updates; a fillfactor below 100 would make those HOT too, a few percent of a registration's
 * first claims, not worth a quarter of the table's pages). A once-job's claim changes its `status` (`completed`), which
 * a partial index names: that update is not HOT, by design.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { type Database, query } from '../../src/store/db.ts';
import { createJobs } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

const JOBS = 200;
const HOT_SHARE = 0.8;
const EVERY_MS = 3_600_000;

/** The jobs table's updates and HOT updates so far, as the statistics system has them. */
async function jobUpdates(database: Database): Promise<{ upd: number; hot: number }> {
  // PostgreSQL 15 sends a backend's counts at most once a second; this forces this backend's out now (the others'
  // come when their connections end or go idle).
  await query(database.db, sql`select pg_stat_force_next_flush()`);
  const [row] = await query<{ upd: string | number; hot: string | number }>(
    database.db,
    sql`select n_tup_upd as upd, n_tup_hot_upd as hot from pg_stat_user_tables where relname = 'jobs'`,
  );
  return { upd: Number(row!.upd), hot: Number(row!.hot) };
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
      testJobSpec(T0, {
        name: `nightly export of account ${i}`,
        schedule: { type: 'interval', everyMs: EVERY_MS, startAt: new Date(T0 + (i + 1) * 1_000).toISOString() },
        payload: { account: i, note: 'x'.repeat(400) },
        metadata: { team: 'billing', account: String(i) },
      }),
    );
    await createJobs(store.ctx, tenantId, specs, T0);
    // The claims run on a database of their own (on PostgreSQL, its own connections), closed before the count is
    // read: a backend sends its statistics when its connection ends.
    const claimer = store.openAnother() ?? store.database;
    const before = await jobUpdates(store.database);
    for (let i = 1; i <= JOBS; i++) {
      const claimed = await claimRuns(claimer.db, { owner: 'A', limit: 10, nowMs: T0 + i * 1_000, leaseMarginMs: 30_000 });
      expect(claimed.length, `runs claimed at second ${i}`).toBe(1);
    }
    if (claimer !== store.database) await claimer.close();
    let now = before;
    await eventually(
      async () => {
        now = await jobUpdates(store.database);
        return now.upd - before.upd >= JOBS;
      },
      { timeoutMs: 30_000, what: `${JOBS} job updates counted (${now.upd - before.upd} so far)` },
    );
    const updates = now.upd - before.upd;
    const hot = now.hot - before.hot;
    console.log(`${target.kind}: ${hot} of ${updates} job updates at the claim were HOT`);
    expect(updates).toBe(JOBS);
    expect(hot / updates, `${hot} of ${updates} job updates HOT`).toBeGreaterThanOrEqual(HOT_SHARE);
  });
});
