/**
 * Retention (issue #6): finished runs older than the retention age are deleted with their attempts, in batches;
 * waiting, running and recent runs are never touched; expired idempotency keys go too. The housekeeper loops the
 * batches to the end and counts what it pruned.
 */

import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { beforeEach, describe, expect, it } from 'vitest';
import { createHousekeeper } from '../../src/dispatch/housekeeping.ts';
import { createDispatchMetrics } from '../../src/dispatch/metrics.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { IdGenerator } from '../../src/domain/ids.ts';
import { query } from '../../src/store/db.ts';
import { IDEMPOTENCY_TTL_MS } from '../../src/store/idempotency.ts';
import { createJob } from '../../src/store/jobs.ts';
import { countDueRuns } from '../../src/store/queue/due-backlog.ts';
import { pruneFinishedRuns, pruneIdempotencyKeys } from '../../src/store/retention.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

const DAY = 86_400_000;

describe.each(DATABASE_TARGETS)('retention on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;

  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });
  beforeEach(async () => {
    await store.database.db.execute(sql`delete from idempotency_keys`);
  });

  /** A job whose first run is then put into `status`, finished `finishedAt` (null for waiting/running), with one attempt. */
  async function runIn(status: string, finishedAt: number | null): Promise<string> {
    const job = await createJob(store.ctx, tenantId, testJobSpec(T0), T0);
    const [run] = await query<{ id: string }>(store.database.db, sql`select id from runs where job_id = ${job.id}`);
    const fin = finishedAt === null ? null : new Date(finishedAt).toISOString();
    await store.database.db.execute(sql`update runs set status = ${status}, finished_at = ${fin}::timestamptz,
      next_attempt_at = case when ${status} in ('scheduled', 'retrying') then ${new Date(T0).toISOString()}::timestamptz end
      where id = ${run!.id}`);
    await store.database.db.execute(
      sql`insert into attempts (shard, run_id, attempt, started_at) values (chime_shard_of(${tenantId}::uuid), ${run!.id}, 1, ${new Date(T0).toISOString()}::timestamptz)`,
    );
    return run!.id;
  }
  const runIds = async () => (await query<{ id: string }>(store.database.db, sql`select id from runs`)).map((r) => r.id).sort();
  const attemptRunIds = async () =>
    (await query<{ run_id: string }>(store.database.db, sql`select run_id from attempts`)).map((r) => r.run_id).sort();

  it('deletes only final runs finished before the cutoff, with their attempts', async () => {
    const cutoff = T0 + 30 * DAY;
    const old = await Promise.all(['succeeded', 'failed', 'expired', 'skipped', 'canceled'].map((s) => runIn(s, cutoff - 1)));
    const keep = [
      await runIn('succeeded', cutoff), // exactly at the cutoff: not older
      await runIn('failed', cutoff + DAY),
      await runIn('scheduled', null),
      await runIn('retrying', null),
      await runIn('running', null),
    ];
    expect(await pruneFinishedRuns(store.database.db, cutoff)).toBe(old.length);
    expect(await runIds()).toEqual([...keep].sort());
    expect(await attemptRunIds()).toEqual([...keep].sort());
    expect(await pruneFinishedRuns(store.database.db, cutoff)).toBe(0);
  });

  it('the housekeeper prunes in batches to the end, counts them, and removes expired idempotency keys and audit entries', async () => {
    const old = [];
    for (let i = 0; i < 7; i++) old.push(await runIn('succeeded', T0));
    const recent = await runIn('succeeded', T0 + 40 * DAY);
    await store.database.db.execute(sql`insert into idempotency_keys (shard, tenant_id, key, request_hash, created_at) values
      (chime_shard_of(${tenantId}::uuid), ${tenantId}, 'old', 'h', ${new Date(T0 + 40 * DAY - IDEMPOTENCY_TTL_MS - 1).toISOString()}::timestamptz),
      (chime_shard_of(${tenantId}::uuid), ${tenantId}, 'new', 'h', ${new Date(T0 + 40 * DAY - IDEMPOTENCY_TTL_MS + 1000).toISOString()}::timestamptz)`);
    // Audit entries of 40 days ago (past a 30-day retention) and of yesterday, each with an id of its time.
    for (const [at, action] of [
      [T0, 'job.created'],
      [T0, 'job.paused'],
      [T0 + 39 * DAY, 'job.resumed'],
    ] as const) {
      await store.database.db.execute(sql`insert into audit_log (shard, id, tenant_id, at, actor_type, action, target_type, target_id)
        values (chime_shard_of(${tenantId}::uuid), ${new IdGenerator(() => at).next()}::uuid, ${tenantId}, ${new Date(at).toISOString()}::timestamptz,
                'admin', ${action}, 'job', 'x')`);
    }

    const registry = new Registry();
    const metrics = createDispatchMetrics(registry);
    const clock = new ManualClock(T0 + 40 * DAY);
    const keeper = createHousekeeper({
      db: store.database.db,
      clock,
      logger: pino({ level: 'silent' }),
      retentionMs: 30 * DAY,
      auditRetentionMs: 30 * DAY,
      batchSize: 3,
      metrics,
    });
    expect(await keeper.runOnce()).toEqual({ runs: 7, idempotencyKeys: 1, auditEntries: 2 });
    const audit = await query<{ action: string }>(store.database.db, sql`select action from audit_log where tenant_id = ${tenantId}`);
    expect(audit.map((a) => a.action)).toEqual(['job.resumed']);
    expect(await runIds()).toEqual([recent]);
    const keys = await query<{ key: string }>(store.database.db, sql`select key from idempotency_keys`);
    expect(keys.map((k) => k.key)).toEqual(['new']);
    expect(await registry.getSingleMetricAsString('chime_runs_pruned_total')).toContain('chime_runs_pruned_total 7');
  });

  it('retention 0 keeps finished runs forever', async () => {
    const id = await runIn('succeeded', T0);
    const keeper = createHousekeeper({
      db: store.database.db,
      clock: new ManualClock(T0 + 1000 * DAY),
      logger: pino({ level: 'silent' }),
      retentionMs: 0,
    });
    expect((await keeper.runOnce()).runs).toBe(0);
    expect(await runIds()).toEqual([id]);
  });

  it('pruneIdempotencyKeys keeps keys younger than 24 h', async () => {
    await store.database.db.execute(sql`insert into idempotency_keys (shard, tenant_id, key, request_hash, created_at)
      values (chime_shard_of(${tenantId}::uuid), ${tenantId}, 'k', 'h', ${new Date(T0).toISOString()}::timestamptz)`);
    expect(await pruneIdempotencyKeys(store.database.db, T0 + IDEMPOTENCY_TTL_MS - 1)).toBe(0);
    expect(await pruneIdempotencyKeys(store.database.db, T0 + IDEMPOTENCY_TTL_MS + 1)).toBe(1);
  });

  it('countDueRuns counts waiting runs already due, up to the cap', async () => {
    for (let i = 0; i < 3; i++) await runIn('scheduled', null); // due at T0
    await runIn('retrying', null);
    await runIn('running', null);
    await runIn('succeeded', T0);
    expect(await countDueRuns(store.database.db, T0 - 1)).toBe(0);
    expect(await countDueRuns(store.database.db, T0)).toBe(4);
    expect(await countDueRuns(store.database.db, T0, 2)).toBe(2);
  });
});
