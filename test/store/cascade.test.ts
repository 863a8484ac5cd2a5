/**
 * No table carries a foreign key or a trigger (the hot paths, and a distributed PostgreSQL refuses statement
 * triggers; schema.ts): `deleteTenant` must still take everything the tenant owns, with explicit statements, and leave
 * every other tenant's rows alone. The triggers of drizzle/0004 and 0006 are gone since 0013.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { shardOf } from '../../src/domain/shard.ts';
import { query } from '../../src/store/db.ts';
import { createJob } from '../../src/store/jobs.ts';
import { createNotificationEndpoint, listNotificationEndpoints } from '../../src/store/notifications.ts';
import { deleteTenant, getTenant } from '../../src/store/tenants.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { createTestTenantIn, T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

describe.each(DATABASE_TARGETS)('deleting tenants and jobs on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;

  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });

  /** A job of `tenant` with its first run and one attempt of that run. */
  async function jobWithAttempt(tenant: string): Promise<{ jobId: string; runId: string }> {
    const job = await createJob(store.ctx, tenant, testJobSpec(T0), T0);
    const [run] = await query<{ id: string }>(store.database.db, sql`select id from runs where job_id = ${job.id}`);
    await store.database.db.execute(
      sql`insert into attempts (shard, run_id, attempt, started_at) values (${shardOf(tenant)}, ${run!.id}, 1, ${new Date(T0).toISOString()}::timestamptz)`,
    );
    return { jobId: job.id, runId: run!.id };
  }
  const counts = async (tenant: string) => {
    const [row] = await query<{ jobs: number; runs: number; attempts: number }>(
      store.database.db,
      sql`select (select count(*)::int from jobs where tenant_id = ${tenant}) as jobs,
                 (select count(*)::int from runs where tenant_id = ${tenant}) as runs,
                 (select count(*)::int from attempts a join runs r on r.shard = a.shard and r.id = a.run_id where r.tenant_id = ${tenant}) as attempts`,
    );
    return row!;
  };

  it('no table has a trigger or a foreign key', async () => {
    const [row] = await query<{ triggers: number; fks: number }>(
      store.database.db,
      sql`select (select count(*)::int from pg_trigger t join pg_class c on c.oid = t.tgrelid
                  where not t.tgisinternal and c.relnamespace = 'public'::regnamespace) as triggers,
                 (select count(*)::int from pg_constraint where contype = 'f' and connamespace = 'public'::regnamespace) as fks`,
    );
    expect(row).toEqual({ triggers: 0, fks: 0 });
  });

  it("deleting a tenant deletes its jobs, runs, attempts and notification endpoints, and leaves another tenant's alone", async () => {
    const other = await createTestTenantIn(store.ctx, 'other');
    await jobWithAttempt(tenantId);
    await jobWithAttempt(other);
    await jobWithAttempt(other);
    const endpoint = { url: 'http://127.0.0.1:9/events', events: ['run.failed' as const], description: null };
    await createNotificationEndpoint(store.ctx, other, endpoint);
    await createNotificationEndpoint(store.ctx, tenantId, endpoint);
    expect(await deleteTenant(store.ctx, other)).toBe(true);
    expect(await deleteTenant(store.ctx, other)).toBe(false);
    expect(await getTenant(store.ctx, other)).toBeNull();
    // Its notification endpoint's hidden delivery job is one of its jobs: gone too.
    expect(await counts(other)).toEqual({ jobs: 0, runs: 0, attempts: 0 });
    expect(await listNotificationEndpoints(store.ctx, other)).toEqual([]);
    expect(await listNotificationEndpoints(store.ctx, tenantId)).toHaveLength(1);
    const [orphanAttempts] = await query<{ n: number }>(
      store.database.db,
      sql`select count(*)::int as n from attempts a where not exists (select 1 from runs r where r.shard = a.shard and r.id = a.run_id)`,
    );
    expect(orphanAttempts!.n).toBe(0);
    expect((await counts(tenantId)).jobs).toBeGreaterThanOrEqual(1);
    const [keys] = await query<{ n: number }>(
      store.database.db,
      sql`select (select count(*)::int from api_keys where tenant_id = ${other}) + (select count(*)::int from signing_secrets where tenant_id = ${other}) as n`,
    );
    expect(keys!.n).toBe(0);
  });
});
