/**
 * Every statement of the dispatch hot path (claim, finish, renew, unclaim, release, reap, and the events they
 * record) that reads, locks or changes tenant rows names exactly one bucket (docs/design.md, "Partitioning and
 * fairness"): the statements are captured as the store runs them for two tenants in different buckets, then each is
 * EXPLAINed with its parameters, and every scan of a tenant table must carry a `shard = <n>` condition, one `n` per
 * statement; on a Citus cluster (issue #21) Citus's own EXPLAIN must show each routed to one shard (`Task Count: 1`),
 * or an INSERT … SELECT of its parameters that the coordinator routes row by row, never of a CTE's result (which
 * Citus sends to every node: test/citus/one-worker-down.test.ts).
 * The only statements allowed to span buckets are the read-only probes (`bucketsToProbe`: which buckets have due runs
 * or expired leases). The rows written carry their tenant's bucket.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import { shardOf } from '../../src/domain/shard.ts';
import { query } from '../../src/store/db.ts';
import { createJob } from '../../src/store/jobs.ts';
import { createNotificationEndpoint } from '../../src/store/notifications.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { finishRuns } from '../../src/store/queue/finish-runs.ts';
import { reapExpiredLeases, releaseLeases } from '../../src/store/queue/reap-leases.ts';
import { renewLeases, unclaimRuns } from '../../src/store/queue/renew-leases.ts';
import { WITH_CITUS } from '../support/databases.ts';
import { createTestTenantIn, FAILED_500, openTestStore, T0, type TestStore, testJobSpec, testOutcome } from '../support/store.ts';

const TENANT_TABLES = new Set([
  'tenants',
  'jobs',
  'runs',
  'attempts',
  'notification_endpoints',
  'api_keys',
  'signing_secrets',
  'idempotency_keys',
]);
type PlanNode = {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Cond'?: string;
  'Recheck Cond'?: string;
  Filter?: string;
  Plans?: PlanNode[];
};

/** The buckets named by each scan of a tenant table in `plan` (one entry per scan: the values its conditions name). */
function scansOf(plan: PlanNode, out: { table: string; shards: number[] }[] = []): { table: string; shards: number[] }[] {
  if (plan['Relation Name'] && TENANT_TABLES.has(plan['Relation Name']) && /Scan/.test(plan['Node Type'])) {
    const conds = [plan['Index Cond'], plan['Recheck Cond'], plan.Filter].filter(Boolean).join(' ');
    const shards = [...conds.matchAll(/\bshard = '?(\d+)'?(?:::smallint)?/g)].map((m) => Number(m[1]));
    out.push({ table: plan['Relation Name'], shards });
  }
  for (const p of plan.Plans ?? []) scansOf(p, out);
  return out;
}

describe.each(WITH_CITUS)('hot-path statements name one bucket on $kind', (target) => {
  let store: TestStore;
  let recording = false;
  const captured: { query: string; params: readonly unknown[] }[] = [];

  beforeAll(async () => {
    store = await openTestStore(target, undefined, { onStatement: (q, params) => recording && captured.push({ query: q, params }) });
  });
  afterAll(() => store?.close());

  async function explain(q: string, params: readonly unknown[]): Promise<PlanNode> {
    const database = store.database as unknown as {
      sql?: { unsafe(q: string, p: unknown[]): Promise<Record<string, unknown>[]> };
      pg?: { query(q: string, p: unknown[]): Promise<{ rows: Record<string, unknown>[] }> };
    };
    const text = `explain (format json) ${q}`;
    const rows = database.sql ? await database.sql.unsafe(text, [...params]) : (await database.pg!.query(text, [...params])).rows;
    const raw = Object.values(rows[0]!)[0];
    return ((typeof raw === 'string' ? JSON.parse(raw) : raw) as [{ Plan: PlanNode }])[0].Plan;
  }

  /** Every object in `value` (a parsed JSON plan, at any depth) that has the key `key`. */
  function objectsWith(value: unknown, key: string): Record<string, unknown>[] {
    if (Array.isArray(value)) return value.flatMap((v) => objectsWith(v, key));
    if (value === null || typeof value !== 'object') return [];
    const inner = Object.values(value).flatMap((v) => objectsWith(v, key));
    return key in value ? [value as Record<string, unknown>, ...inner] : inner;
  }

  it('claim, renew, finish (with events), unclaim, release and reap: each statement one bucket', async () => {
    const a = await createTestTenantIn(store.ctx, 'a');
    let b = await createTestTenantIn(store.ctx, 'b');
    while (shardOf(b) === shardOf(a)) b = await createTestTenantIn(store.ctx, 'b');
    for (const tenant of [a, b]) {
      await createNotificationEndpoint(store.ctx, tenant, {
        url: 'http://127.0.0.1:9/events',
        events: ['run.failed', 'job.paused'],
        description: null,
      });
      await createJob(store.ctx, tenant, testJobSpec(T0, { name: 'interval', schedule: { type: 'interval', everyMs: 60_000 } }), T0);
      await createJob(store.ctx, tenant, testJobSpec(T0, { name: 'fails', retry: { maxAttempts: 1 } }), T0);
      await createJob(store.ctx, tenant, testJobSpec(T0, { name: 'unclaimed' }), T0);
      await createJob(store.ctx, tenant, testJobSpec(T0, { name: 'released', deliveryMode: 'at-most-once' }), T0);
      await createJob(store.ctx, tenant, testJobSpec(T0, { name: 'reaped', callback: { timeoutMs: 1_000 } }), T0);
    }
    const db = store.database.db;
    const names = new Map((await query<{ id: string; name: string }>(db, sql`select id, name from jobs`)).map((j) => [j.id, j.name]));
    const nameOf = (r: ClaimedRun) => names.get(r.jobId)!;

    recording = true;
    const claimed = await claimRuns(db, { owner: 'A', limit: 100, nowMs: T0, leaseMarginMs: 1_000 });
    expect(new Set(claimed.map((r) => r.shard))).toEqual(new Set([shardOf(a), shardOf(b)]));
    expect(claimed).toHaveLength(10);
    await renewLeases(
      db,
      'A',
      claimed
        .filter((r) => nameOf(r) !== 'reaped')
        .map((r) => ({ shard: r.shard, runId: r.runId, attempt: r.attempt, leaseExpiresAtMs: T0 + 60_000 })),
    );
    const outcome = (r: ClaimedRun, ok: boolean) => testOutcome(r, ok ? {} : FAILED_500);
    const recorded = await finishRuns(
      db,
      'A',
      claimed.filter((r) => ['interval', 'fails'].includes(nameOf(r))).map((r) => outcome(r, nameOf(r) === 'interval')),
    );
    expect(recorded.size).toBe(4);
    expect(
      (
        await unclaimRuns(
          db,
          'A',
          claimed.filter((r) => nameOf(r) === 'unclaimed'),
          T0 + 10,
        )
      ).size,
    ).toBe(2);
    await releaseLeases(
      db,
      'A',
      claimed.filter((r) => nameOf(r) === 'released'),
      T0 + 10,
    );
    expect(await reapExpiredLeases(db, T0 + 60_000)).toBe(2);
    recording = false;

    let checked = 0;
    for (const { query: q, params } of captured) {
      if (![...TENANT_TABLES].some((t) => new RegExp(`\\b${t}\\b`).test(q))) continue;
      if (/generate_series\(|from tenants group by shard/.test(q)) {
        // A probe across buckets (bucketsToProbe): read only.
        expect(q, q).not.toMatch(/for update|\bupdate\b|\bdelete\b|\binsert\b/i);
        continue;
      }
      const plan = await explain(q, params);
      checked++;
      if (target.kind === 'citus') {
        // Citus's plan: a distributed job per statement and per CTE it pushes down, each with its task count; one
        // task is one shard on one node.
        const text = JSON.stringify(plan);
        // An INSERT … SELECT the coordinator carries out (it routes each row by its bucket) must read its parameters,
        // not a CTE's result: Citus sends such a result to every node, and a stopped worker fails the statement.
        const pulledInserts = objectsWith(plan, 'INSERT/SELECT method').filter((o) => o['INSERT/SELECT method'] === 'pull to coordinator');
        const pulled = pulledInserts.length > 0;
        for (const insert of pulledInserts) {
          expect(JSON.stringify(insert), `an INSERT … SELECT of a CTE's result:\n${q}`).not.toMatch(/read_intermediate_result/);
        }
        const tasks = [...text.matchAll(/"Task Count":(\d+)/g)].map((m) => Number(m[1]));
        if (pulled && tasks.length === 0) continue;
        expect(tasks.length, `not a distributed plan:\n${q}`).toBeGreaterThan(0);
        expect(tasks, `task counts of:\n${q}`).toEqual(tasks.map(() => 1));
        continue;
      }
      const scans = scansOf(plan);
      for (const s of scans) expect(s.shards.length, `a scan of ${s.table} without its bucket in:\n${q}`).toBeGreaterThan(0);
      const named = new Set(scans.flatMap((s) => s.shards));
      expect(named.size, `buckets ${[...named].join(', ')} in one statement:\n${q}`).toBeLessThanOrEqual(1);
    }
    // Claims and finishes of both buckets, renewals, events, unclaims, releases and reaps were all looked at.
    expect(checked).toBeGreaterThanOrEqual(20);

    // Every row written on the way carries its tenant's bucket.
    const [wrong] = await query<{ n: number }>(
      db,
      sql`select (select count(*)::int from runs where shard <> chime_shard_of(tenant_id))
               + (select count(*)::int from jobs where shard <> chime_shard_of(tenant_id))
               + (select count(*)::int from attempts a where not exists (select 1 from runs r where r.shard = a.shard and r.id = a.run_id)) as n`,
    );
    expect(wrong!.n).toBe(0);
    // The failed finish and the at-most-once release recorded run.failed events for each tenant (delivery runs of its
    // endpoint), in its own bucket.
    const events = await query<{ shard: number; tenant_id: string }>(
      db,
      sql`select shard, tenant_id from runs where trigger = 'notification'`,
    );
    expect(events.map((e) => e.tenant_id).sort()).toEqual([a, a, b, b].sort());
    for (const e of events) expect(Number(e.shard)).toBe(shardOf(e.tenant_id));
  });
});
