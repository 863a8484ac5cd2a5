/**
 * `open_jobs` (schema.ts; src/store/open-jobs.ts) follows every change of a job's status: after each way a job is made,
 * completes, is canceled, paused, resumed or reopened, the table holds exactly the tenant's `active` and `paused` jobs of
 * kind `callback`, which the active-jobs quota and the usage count.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { shardOf } from '../../src/domain/shard.ts';
import { query } from '../../src/store/db.ts';
import { cancelJob, updateJob } from '../../src/store/job-lifecycle.ts';
import { activeJobsRoom, createJobs } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { completeJobs, skipNextOccurrences } from '../../src/store/queue/receiver-effects.ts';
import { deleteTenant } from '../../src/store/tenants.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { createTestTenantIn, T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

const HOUR = 3_600_000;

describe.each(DATABASE_TARGETS)('open_jobs on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });

  /** The tenant's open jobs as `open_jobs` has them, and as the jobs' statuses say; sorted ids. */
  async function openSets(tenant = tenantId) {
    const listed = await query<{ id: string }>(
      store.database.db,
      sql`select job_id as id from open_jobs where shard = ${shardOf(tenant)} and tenant_id = ${tenant} order by 1`,
    );
    const byStatus = await query<{ id: string }>(
      store.database.db,
      sql`select id from jobs where shard = ${shardOf(tenant)} and tenant_id = ${tenant}
            and status in ('active', 'paused') and kind = 'callback' order by 1`,
    );
    return { listed: listed.map((r) => r.id), byStatus: byStatus.map((r) => r.id) };
  }

  async function expectOpen(ids: string[], what: string) {
    const { listed, byStatus } = await openSets();
    expect(byStatus, `${what}: the jobs' statuses`).toEqual([...ids].sort());
    expect(listed, `${what}: open_jobs`).toEqual(byStatus);
  }

  const statusOf = async (id: string) =>
    (await query<{ status: string }>(store.database.db, sql`select status from jobs where shard = ${shardOf(tenantId)} and id = ${id}`))[0]!
      .status;

  it('holds the open jobs through creation, claims, pause and resume, cancel, reopening and the receiver’s effects', async () => {
    const [once, interval, capped, cron, done, skipped] = await createJobs(
      store.ctx,
      tenantId,
      [
        testJobSpec(T0, { schedule: { type: 'once', at: new Date(T0 + 1_000).toISOString() } }),
        testJobSpec(T0, { schedule: { type: 'interval', everyMs: HOUR, startAt: new Date(T0 + 1_000).toISOString() } }),
        testJobSpec(T0, { schedule: { type: 'interval', everyMs: HOUR, startAt: new Date(T0 + 1_000).toISOString() }, maxRuns: 1 }),
        testJobSpec(T0, { schedule: { type: 'cron', expression: '30 * * * *', timezone: 'UTC' } }),
        testJobSpec(T0, { schedule: { type: 'interval', everyMs: HOUR, startAt: new Date(T0 + 1_000).toISOString() } }),
        testJobSpec(T0, { schedule: { type: 'dates', dates: [new Date(T0 + 2 * HOUR).toISOString()] } }),
      ],
      T0,
    );
    const ids = [once!, interval!, capped!, cron!, done!, skipped!].map((j) => j.id);
    await expectOpen(ids, 'made');

    // The claim completes the once-job and the job of one run at most; the interval job goes on.
    const claimed = await claimRuns(store.database.db, { owner: 'A', limit: 10, nowMs: T0 + 1_000, leaseMarginMs: 30_000 });
    expect(claimed.map((r) => r.jobId).sort()).toEqual([once!.id, interval!.id, capped!.id, done!.id].sort());
    expect(await statusOf(once!.id)).toBe('completed');
    expect(await statusOf(capped!.id)).toBe('completed');
    await expectOpen([interval!.id, cron!.id, done!.id, skipped!.id], 'after the claim');

    // Paused and resumed: open throughout.
    await updateJob(store.ctx, tenantId, interval!.id, { paused: true });
    await expectOpen([interval!.id, cron!.id, done!.id, skipped!.id], 'paused');
    await updateJob(store.ctx, tenantId, interval!.id, { paused: false });
    await expectOpen([interval!.id, cron!.id, done!.id, skipped!.id], 'resumed');

    // Canceled, then replaced (PUT by key): closed, then open again.
    await cancelJob(store.ctx, tenantId, cron!.id);
    await expectOpen([interval!.id, done!.id, skipped!.id], 'canceled');
    await updateJob(store.ctx, tenantId, cron!.id, {
      replace: true,
      schedule: { type: 'cron', expression: '30 * * * *', timezone: 'UTC' },
    });
    expect(await statusOf(cron!.id)).toBe('active');
    await expectOpen([interval!.id, cron!.id, done!.id, skipped!.id], 'replaced');

    // A completed job given a schedule with occurrences left is active again.
    await updateJob(store.ctx, tenantId, once!.id, { schedule: { type: 'once', at: new Date(T0 + 5 * HOUR).toISOString() } });
    expect(await statusOf(once!.id)).toBe('active');
    await expectOpen([once!.id, interval!.id, cron!.id, done!.id, skipped!.id], 'rescheduled');

    // The receiver's `complete`, and a `skip-next` that leaves the schedule nothing.
    await store.database.db.transaction(async (tx) => {
      await completeJobs(tx, shardOf(tenantId), [done!.id], T0 + 2_000);
      await skipNextOccurrences(tx, shardOf(tenantId), [skipped!.id], T0 + 2_000);
    });
    expect(await statusOf(done!.id)).toBe('completed');
    expect(await statusOf(skipped!.id)).toBe('completed');
    await expectOpen([once!.id, interval!.id, cron!.id], 'after complete and skip-next');

    // The quota counts them.
    expect(await activeJobsRoom({ db: store.database.db }, tenantId, 10)).toBe(7);
  });

  it('goes with its tenant', async () => {
    const other = await createTestTenantIn(store.ctx, 'leaving');
    await createJobs(store.ctx, other, [testJobSpec(T0, { schedule: { type: 'cron', expression: '0 * * * *', timezone: 'UTC' } })], T0);
    expect((await openSets(other)).listed).toHaveLength(1);
    expect(await deleteTenant(store.ctx, other)).toBe(true);
    expect((await openSets(other)).listed).toEqual([]);
  });
});
