/**
 * docs/design.md invariants 1 and 2 at the store level: a created job and its first run commit together; an occurrence
 * `(jobId, scheduledFor)` exists at most once; claiming a recurring job's run creates exactly its next occurrence in
 * the claim's own transaction; concurrent claims never hand out the same run.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { newId } from '../../src/domain/ids.ts';
import { shardOf } from '../../src/domain/shard.ts';
import type { Database } from '../../src/store/db.ts';
import { NOTIFY_HORIZON_MS, query, RUNS_CHANNEL } from '../../src/store/db.ts';
import { createJob, getJob } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { runs } from '../../src/store/schema.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { createTestTenantIn, deleteAllJobs, openTestStore, runsOf, T0, type TestStore, testJobSpec } from '../support/store.ts';

const MINUTE = 60_000;

describe.each(DATABASE_TARGETS)('jobs and occurrences on $kind', (target) => {
  const clock = new ManualClock(T0);
  let store: TestStore;
  let tenantId: string;

  beforeAll(async () => {
    store = await openTestStore(target, clock);
    tenantId = await createTestTenantIn(store.ctx);
  });
  afterAll(async () => {
    await store?.close();
  });
  beforeEach(async () => {
    clock.set(T0);
    await deleteAllJobs(store.database);
  });

  const claim = (owner: string, nowMs: number, limit = 100, database: Database = store.database) =>
    claimRuns(database.db, { owner, limit, nowMs, leaseMarginMs: 5_000 });

  it('createJob commits the job and its first run, visible to another connection', async () => {
    const at = T0 + 5 * MINUTE;
    const job = await createJob(store.ctx, tenantId, testJobSpec(T0, { schedule: { type: 'once', at: new Date(at).toISOString() } }), T0);
    // On PostgreSQL another pool (as another process would) sees both rows: they are committed.
    const reader = store.openAnother() ?? store.database;
    const [row] = await query<{ status: string; next_run_at: Date | string }>(
      reader.db,
      sql`select status, next_run_at from jobs where id = ${job.id}`,
    );
    expect(row?.status).toBe('active');
    expect(new Date(row!.next_run_at).getTime()).toBe(at);
    const jobRuns = await runsOf(reader, job.id);
    expect(jobRuns).toHaveLength(1);
    expect(jobRuns[0]).toMatchObject({ scheduledForMs: at, trigger: 'schedule', status: 'scheduled', attempts: 0, nextAttemptAtMs: at });
  });

  it('createJob announces a first run due within NOTIFY_HORIZON_MS on RUNS_CHANNEL, and not one due later', async () => {
    const payloads: string[] = [];
    let heard: () => void = () => {};
    const unlisten = await store.database.listen(RUNS_CHANNEL, (p) => {
      payloads.push(p);
      heard();
    });
    try {
      const far = T0 + NOTIFY_HORIZON_MS + MINUTE;
      const near = T0 + NOTIFY_HORIZON_MS - 1_000;
      const once = (at: number) => testJobSpec(T0, { schedule: { type: 'once', at: new Date(at).toISOString() } });
      const nearHeard = new Promise<void>((r) => (heard = () => payloads.includes(String(near)) && r()));
      await createJob(store.ctx, tenantId, once(far), T0);
      await createJob(store.ctx, tenantId, once(near), T0);
      // Notifications arrive in commit order: once the later job's is heard, the earlier one's would have been.
      await nearHeard;
      expect(payloads).toEqual([String(near)]);
    } finally {
      await unlisten();
    }
  });

  // The failure is made with a trigger, which Citus refuses on a distributed table.
  it.runIf(target.kind !== 'citus')(
    'createJob is one transaction: when the first run cannot be inserted, no job is left behind',
    async () => {
      // The refused run is told by its time: the job and run inserts are one statement, whose parts see no other's rows.
      const refusedAt = new Date(T0 + 4_242_000).toISOString();
      await store.database.db.execute(
        sql.raw(`create or replace function test_refuse_run() returns trigger language plpgsql as $$
      begin
        if new.scheduled_for = '${refusedAt}'::timestamptz then
          raise exception 'test: run refused';
        end if;
        return new;
      end $$`),
      );
      await store.database.db.execute(
        sql`create trigger test_refuse_run before insert on runs for each row execute function test_refuse_run()`,
      );
      try {
        await expect(
          createJob(store.ctx, tenantId, testJobSpec(T0, { name: 'explode', schedule: { type: 'once', at: refusedAt } }), T0),
        ).rejects.toThrow();
        const left = await query<{ n: number }>(store.database.db, sql`select count(*)::int as n from jobs where name = 'explode'`);
        expect(left[0]!.n).toBe(0);
        // The trigger lets other jobs through: the refusal above was the run insert, not the job insert.
        const ok = await createJob(store.ctx, tenantId, testJobSpec(T0, { name: 'fine' }), T0);
        expect(await runsOf(store.database, ok.id)).toHaveLength(1);
      } finally {
        await store.database.db.execute(sql`drop trigger if exists test_refuse_run on runs`);
      }
    },
  );

  /** Inserts a waiting run of `jobId` at `scheduledForMs`, as the store does (ON CONFLICT DO NOTHING) or without it. */
  const insertOccurrence = async (jobId: string, scheduledForMs: number, o: { trigger?: string; onConflict?: boolean } = {}) => {
    const insert = store.database.db.insert(runs).values({
      shard: shardOf(tenantId),
      id: newId(),
      tenantId,
      jobId,
      scheduledFor: new Date(scheduledForMs),
      trigger: o.trigger ?? 'schedule',
      status: 'scheduled',
      nextAttemptAt: new Date(scheduledForMs),
      createdAt: new Date(T0),
    });
    return (o.onConflict === false ? insert : insert.onConflictDoNothing()).returning({ id: runs.id });
  };

  it('a scheduled occurrence exists once: inserting it twice yields one run', async () => {
    const job = await createJob(store.ctx, tenantId, testJobSpec(T0, { schedule: { type: 'interval', everyMs: MINUTE } }), T0);
    expect(await insertOccurrence(job.id, T0 + MINUTE)).toHaveLength(1);
    expect(await insertOccurrence(job.id, T0 + MINUTE)).toHaveLength(0);
    // The first occurrence, inserted by createJob, cannot be inserted again either.
    expect(await insertOccurrence(job.id, T0)).toHaveLength(0);
    // A writer that forgets ON CONFLICT is stopped by the unique index itself.
    await expect(insertOccurrence(job.id, T0 + MINUTE, { onConflict: false })).rejects.toThrow();
    expect((await runsOf(store.database, job.id)).map((r) => r.scheduledForMs)).toEqual([T0, T0 + MINUTE]);
    // The index covers scheduled occurrences only: manual runs at the same instant are separate runs.
    expect(await insertOccurrence(job.id, T0 + MINUTE, { trigger: 'manual', onConflict: false })).toHaveLength(1);
    expect(await insertOccurrence(job.id, T0 + MINUTE, { trigger: 'manual', onConflict: false })).toHaveLength(1);
    expect(await runsOf(store.database, job.id)).toHaveLength(4);
  });

  it('a claim whose next occurrence already exists does not create it again', async () => {
    const job = await createJob(store.ctx, tenantId, testJobSpec(T0, { schedule: { type: 'interval', everyMs: MINUTE } }), T0);
    const [pre] = await insertOccurrence(job.id, T0 + MINUTE);
    expect(await claim('A', T0)).toHaveLength(1);
    const all = await runsOf(store.database, job.id);
    expect(all.map((r) => [r.scheduledForMs, r.status])).toEqual([
      [T0, 'running'],
      [T0 + MINUTE, 'scheduled'],
    ]);
    expect(all[1]!.id).toBe(pre!.id);
  });

  it('claiming a recurring run creates exactly its next occurrence and advances the job', async () => {
    const job = await createJob(store.ctx, tenantId, testJobSpec(T0, { schedule: { type: 'interval', everyMs: MINUTE } }), T0);
    const [first, ...rest] = await claim('A', T0);
    expect(rest).toEqual([]);
    expect(first).toMatchObject({ jobId: job.id, scheduledForMs: T0, attempt: 1 });
    let all = await runsOf(store.database, job.id);
    expect(all.map((r) => [r.scheduledForMs, r.status])).toEqual([
      [T0, 'running'],
      [T0 + MINUTE, 'scheduled'],
    ]);
    expect(all[1]!.nextAttemptAtMs).toBe(T0 + MINUTE);
    const advanced = await getJob(store.ctx, tenantId, job.id);
    expect(advanced?.nextRunAt?.getTime()).toBe(T0 + MINUTE);
    expect(advanced?.lastRunAt?.getTime()).toBe(T0);

    // Nothing else is due: claiming again creates nothing.
    expect(await claim('B', T0 + 1000)).toEqual([]);
    expect(await runsOf(store.database, job.id)).toHaveLength(2);

    const [second] = await claim('B', T0 + MINUTE);
    expect(second?.scheduledForMs).toBe(T0 + MINUTE);
    all = await runsOf(store.database, job.id);
    expect(all.map((r) => [r.scheduledForMs, r.status])).toEqual([
      [T0, 'running'],
      [T0 + MINUTE, 'running'],
      [T0 + 2 * MINUTE, 'scheduled'],
    ]);
  });

  // The failure is made with a trigger, which Citus refuses on a distributed table.
  it.runIf(target.kind !== 'citus')(
    'the next occurrence is created in the claim transaction: if it cannot be inserted, the claim is undone',
    async () => {
      const job = await createJob(store.ctx, tenantId, testJobSpec(T0, { schedule: { type: 'interval', everyMs: MINUTE } }), T0);
      const next = new Date(T0 + MINUTE).toISOString();
      await store.database.db.execute(
        sql.raw(`create or replace function test_refuse_next() returns trigger language plpgsql as $$
      begin
        if new.scheduled_for = '${next}'::timestamptz then raise exception 'test: next occurrence refused'; end if;
        return new;
      end $$`),
      );
      await store.database.db.execute(
        sql`create trigger test_refuse_next before insert on runs for each row execute function test_refuse_next()`,
      );
      try {
        await expect(claim('A', T0)).rejects.toThrow();
      } finally {
        await store.database.db.execute(sql`drop trigger if exists test_refuse_next on runs`);
      }
      const [run] = await runsOf(store.database, job.id);
      expect(run).toMatchObject({ scheduledForMs: T0, status: 'scheduled', attempts: 0, leaseOwner: null, nextAttemptAtMs: T0 });
      expect(await runsOf(store.database, job.id)).toHaveLength(1);
      expect((await getJob(store.ctx, tenantId, job.id))?.lastRunAt).toBeNull();
      // Once the insert can succeed, the same claim goes through.
      expect(await claim('A', T0)).toHaveLength(1);
      expect(await runsOf(store.database, job.id)).toHaveLength(2);
    },
  );

  it('concurrent claims by two owners never return the same run nor create an occurrence twice', async () => {
    const n = 60;
    const jobIds: string[] = [];
    for (let i = 0; i < n; i++) {
      const schedule = i % 2 === 0 ? ({ type: 'interval', everyMs: MINUTE } as const) : undefined;
      const job = await createJob(store.ctx, tenantId, testJobSpec(T0, schedule ? { schedule } : {}), T0);
      jobIds.push(job.id);
    }
    // On PostgreSQL each owner has its own pool (as separate processes) and two claim loops each, all in parallel.
    const dbA = store.openAnother() ?? store.database;
    const dbB = store.openAnother() ?? store.database;
    const byOwner = new Map<string, ClaimedRun[]>([
      ['A', []],
      ['B', []],
    ]);
    const drain = async (owner: string, database: Database) => {
      for (;;) {
        const got = await claim(owner, T0, 4, database);
        if (got.length === 0) return;
        byOwner.get(owner)!.push(...got);
      }
    };
    if (target.kind === 'postgres') {
      // Both pools connected first, so that neither owner drains everything while the other is still connecting.
      await Promise.all([dbA, dbB].flatMap((d) => [d.db.execute(sql`select 1`), d.db.execute(sql`select 1`)]));
      await Promise.all([drain('A', dbA), drain('B', dbB), drain('A', dbA), drain('B', dbB)]);
    } else {
      await drain('A', dbA);
      await drain('B', dbB);
    }
    const a = byOwner.get('A')!.map((r) => r.runId);
    const b = byOwner.get('B')!.map((r) => r.runId);
    const all = [...a, ...b];
    expect(new Set(all).size).toBe(all.length);
    expect(all).toHaveLength(n);
    if (target.kind === 'postgres') {
      expect(a.length).toBeGreaterThan(0);
      expect(b.length).toBeGreaterThan(0);
    }
    const rows = await runsOf(store.database, null);
    for (const id of a) expect(rows.find((r) => r.id === id)).toMatchObject({ status: 'running', leaseOwner: 'A', attempts: 1 });
    for (const id of b) expect(rows.find((r) => r.id === id)).toMatchObject({ status: 'running', leaseOwner: 'B', attempts: 1 });
    // Each interval job got exactly one next occurrence; each once job none.
    for (const [i, jobId] of jobIds.entries()) {
      const mine = rows.filter((r) => r.jobId === jobId);
      expect(mine.map((r) => r.scheduledForMs)).toEqual(i % 2 === 0 ? [T0, T0 + MINUTE] : [T0]);
    }
  });
});
