/**
 * What the claim holds back per tenant (src/store/queue/hold-runs.ts), in the database on each target with explicit
 * times (a day is too long to wait for): a suspended tenant's due runs stay waiting, untouched and not lost, parked
 * out of the due index until the tenant is resumed, then go out (their relevancy window applies as for any late run);
 * runs past a tenant's callbacks per UTC day (its override, else the configured default; 0 = none) wait for the next
 * UTC day, counted across claims, and a window that has passed by then expires them.
 */

import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { shardOf } from '../../src/domain/shard.ts';
import { query } from '../../src/store/db.ts';
import { createJob } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { dueBuckets } from '../../src/store/queue/due-backlog.ts';
import { HELD_UNTIL, pruneTenantCallbacks } from '../../src/store/queue/hold-runs.ts';
import { updateTenant } from '../../src/store/tenants.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { createTestTenantIn, runsOf, T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

const DAY = 86_400_000;

describe.each(DATABASE_TARGETS)('runs held per tenant ($kind)', (target) => {
  let store: TestStore;
  let tenantId: string;

  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });

  const claim = (nowMs: number, callbacksPerDay = 0) =>
    claimRuns(store.database.db, { owner: 'A', limit: 100, nowMs, leaseMarginMs: 30_000, callbacksPerDay });
  const jobs = (n: number, o: Parameters<typeof testJobSpec>[1] = {}, tenant = tenantId, at = T0) =>
    Promise.all(Array.from({ length: n }, (_, i) => createJob(store.ctx, tenant, testJobSpec(at, { name: `j${i}`, ...o }), at)));
  const counted = async (tenant: string) =>
    query<{ day: string; callbacks: number }>(
      store.database.db,
      sql`select day::text as day, callbacks from tenant_callbacks where tenant_id = ${tenant} order by day`,
    );

  describe('a suspended tenant', () => {
    it('has its due runs held (scheduled, no attempt counted, out of the due index) and sent once resumed', async () => {
      // The store's clock (a ManualClock) stays at T0: the resume makes the held runs due at T0.
      const [job] = await jobs(1);
      const other = await createTestTenantIn(store.ctx, 'other');
      const [otherJob] = await jobs(1, {}, other);
      await updateTenant(store.ctx, tenantId, { status: 'suspended' });

      const claimed = await claim(T0 + 1000);
      expect(claimed.map((r) => r.jobId)).toEqual([otherJob!.id]); // the other tenant is not held up
      const [held] = await runsOf(store.database, job!.id);
      expect(held).toMatchObject({ status: 'scheduled', attempts: 0, leaseOwner: null, nextAttemptAtMs: HELD_UNTIL.getTime() });
      // Parked: no longer due, so no dispatcher keeps claiming it.
      expect((await dueBuckets(store.database.db)).every((b) => b.dueAtMs === HELD_UNTIL.getTime())).toBe(true);
      expect(await claim(T0 + 60_000)).toEqual([]);

      await updateTenant(store.ctx, tenantId, { status: 'active' });
      expect((await runsOf(store.database, job!.id))[0]).toMatchObject({ status: 'scheduled', nextAttemptAtMs: T0 });
      const sent = await claim(T0 + 61_000);
      expect(sent.map((r) => r.jobId)).toEqual([job!.id]);
      expect((await runsOf(store.database, job!.id))[0]).toMatchObject({ status: 'running', attempts: 1 });
    });

    it('has a held run expire after resuming when its relevancy window passed meanwhile', async () => {
      const [job] = await jobs(1, { relevancyWindowMs: 10_000 });
      await updateTenant(store.ctx, tenantId, { status: 'suspended' });
      expect(await claim(T0 + 1000)).toEqual([]);
      await updateTenant(store.ctx, tenantId, { status: 'active' });
      expect(await claim(T0 + 20_000)).toEqual([]);
      expect((await runsOf(store.database, job!.id))[0]).toMatchObject({ status: 'expired' });
    });
  });

  describe('callbacks per day', () => {
    it("sends a tenant's override's worth per UTC day; the rest wait for the next day, then go out", async () => {
      await updateTenant(store.ctx, tenantId, { quotas: { callbacksPerDay: 2 } });
      const made = await jobs(3);
      const first = await claim(T0 + 1000, 0);
      expect(first).toHaveLength(2);
      const waiting = (await runsOf(store.database, null)).filter((r) => r.status === 'scheduled');
      expect(waiting).toHaveLength(1);
      expect(waiting[0]).toMatchObject({ attempts: 0, leaseOwner: null, nextAttemptAtMs: T0 + DAY });
      expect(await counted(tenantId)).toEqual([{ day: '2030-01-01', callbacks: 2 }]);
      // Later the same day: nothing more.
      expect(await claim(T0 + 3_600_000, 0)).toEqual([]);
      // The next UTC day: the waiting run goes out and counts for that day.
      const next = await claim(T0 + DAY + 1000, 0);
      expect(next.map((r) => r.runId)).toEqual([waiting[0]!.id]);
      expect(await counted(tenantId)).toEqual([
        { day: '2030-01-01', callbacks: 2 },
        { day: '2030-01-02', callbacks: 1 },
      ]);
      expect(made).toHaveLength(3);
      await updateTenant(store.ctx, tenantId, { quotas: { callbacksPerDay: null } });
    });

    it('counts across claims, takes the configured default, and an override of 0 lifts it', async () => {
      const other = await createTestTenantIn(store.ctx, 'unlimited');
      await updateTenant(store.ctx, other, { quotas: { callbacksPerDay: 0 } });
      const base = T0 + 10 * DAY;
      await jobs(2, {}, tenantId, base);
      expect(await claim(base + 1, 3)).toHaveLength(2);
      await jobs(2, {}, tenantId, base + 10);
      expect(await claim(base + 20, 3)).toHaveLength(1); // 3 a day by the default: 2 + 1
      await jobs(5, {}, other, base + 30);
      expect(await claim(base + 40, 3)).toHaveLength(5); // its override: no limit
      expect(await counted(other)).toEqual([]);
    });

    it('prunes the counts of days before yesterday', async () => {
      const other = await createTestTenantIn(store.ctx, 'counted');
      for (const day of ['2031-03-01', '2031-03-02', '2031-03-03']) {
        await query(
          store.database.db,
          sql`insert into tenant_callbacks (shard, tenant_id, day, callbacks) values (${shardOf(other)}, ${other}, ${day}, 1)`,
        );
      }
      await pruneTenantCallbacks(store.database.db, Date.parse('2031-03-03T12:00:00Z'));
      expect((await counted(other)).map((c) => c.day)).toEqual(['2031-03-02', '2031-03-03']);
    });

    it('expires a run that waited for the next day past its relevancy window', async () => {
      const base = T0 + 20 * DAY;
      await jobs(2, { relevancyWindowMs: 3_600_000 }, tenantId, base);
      expect(await claim(base + 1, 1)).toHaveLength(1);
      expect(await claim(base + DAY + 1, 1)).toEqual([]);
      const statuses = (await runsOf(store.database, null)).map((r) => r.status).sort();
      expect(statuses).toEqual(['expired', 'running']);
    });
  });
});
