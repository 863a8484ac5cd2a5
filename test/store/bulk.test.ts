/**
 * Bulk actions in the store (src/store/bulk.ts), on each database target: concurrent replays over the same dead
 * letters replay each once; a filter past the bound changes nothing; dismissal reaches only the tenant's dead letters.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { BulkLimitError, bulkJobAction, dismissDeadLetter, replayDeadLetters } from '../../src/store/bulk.ts';
import type { StoreContext } from '../../src/store/context.ts';
import { query } from '../../src/store/db.ts';
import { createJobs } from '../../src/store/jobs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { createTestTenantIn, T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

describe.each(DATABASE_TARGETS)('bulk actions on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });

  /** `n` jobs of `tenant` whose first run is a dead letter; returns the dead letters' ids. */
  async function deadLetters(tenant: string, n: number): Promise<string[]> {
    const made = await createJobs(
      store.ctx,
      tenant,
      Array.from({ length: n }, () => testJobSpec(T0, { metadata: { team: 'ops' } })),
      T0,
    );
    const rows = await query<{ id: string }>(
      store.database.db,
      sql`update runs set status = 'failed', finished_at = now(), next_attempt_at = null
          where job_id = any(${`{${made.map((j) => j.id).join(',')}}`}::uuid[]) returning id`,
    );
    return rows.map((r) => r.id);
  }

  it('replays each dead letter once when calls run concurrently', async () => {
    const letters = await deadLetters(tenantId, 120);
    const other = store.openAnother();
    const second: StoreContext = other ? { ...store.ctx, db: other.db } : store.ctx;
    const results = await Promise.all([
      replayDeadLetters(store.ctx, tenantId, {}, { limit: 50 }),
      replayDeadLetters(second, tenantId, {}, { limit: 50 }),
      replayDeadLetters(store.ctx, tenantId, {}, { limit: 50 }),
    ]);
    expect(results.map((r) => r.replayed).sort()).toEqual([20, 50, 50]);
    const replays = await query<{ job_id: string; n: number }>(
      store.database.db,
      sql`select job_id, count(*)::int as n from runs where tenant_id = ${tenantId} and trigger = 'replay' group by job_id`,
    );
    expect(replays).toHaveLength(120);
    expect(replays.every((r) => r.n === 1)).toBe(true);
    const dismissed = await query<{ n: number }>(
      store.database.db,
      sql`select count(*)::int as n from runs where id = any(${`{${letters.join(',')}}`}::uuid[]) and dismissed_at is not null`,
    );
    expect(dismissed[0]!.n).toBe(120);
  });

  it('changes nothing when the filter matches more jobs than one call may change', async () => {
    await deadLetters(tenantId, 4);
    const before = await query<{ status: string }>(store.database.db, sql`select status from jobs where tenant_id = ${tenantId}`);
    await expect(bulkJobAction(store.ctx, tenantId, 'cancel', { metadata: { team: 'ops' } }, { maxJobs: 3 })).rejects.toBeInstanceOf(
      BulkLimitError,
    );
    const after = await query<{ status: string }>(store.database.db, sql`select status from jobs where tenant_id = ${tenantId}`);
    expect(after).toEqual(before);
    expect(after.every((j) => j.status !== 'canceled')).toBe(true);
    expect(await bulkJobAction(store.ctx, tenantId, 'cancel', { metadata: { team: 'ops' } }, { maxJobs: 4 })).toEqual({
      matched: 4,
      changed: 4,
    });
  });

  it("dismisses only the tenant's own dead letters, once", async () => {
    const other = await createTestTenantIn(store.ctx, 'other');
    const [mine] = await deadLetters(tenantId, 1);
    const [theirs] = await deadLetters(other, 1);
    expect(await dismissDeadLetter(store.ctx, tenantId, theirs!)).toBe(false);
    expect(await dismissDeadLetter(store.ctx, tenantId, mine!)).toBe(true);
    expect(await dismissDeadLetter(store.ctx, tenantId, mine!)).toBe(false);
    const [row] = await query<{ dismissed_at: unknown }>(store.database.db, sql`select dismissed_at from runs where id = ${theirs}`);
    expect(row!.dismissed_at).toBeNull();
  });
});
