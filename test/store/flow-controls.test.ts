/**
 * Flow controls at the claim (src/store/queue/claim-flow-runs.ts), in the database of each target with explicit
 * times: parallelism counts the runs holding a lease, so a reaped lease gives its slot back; the rate grants starts
 * no window of its period (plus slack) holds more of; a paused flow control holds every run; runs held back stay due,
 * untouched, in due order, and the plain claim looks past them to other runs of the bucket. Also the claim's
 * `destinationRoom`: runs of a destination beyond it go back untouched.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import { rateSlackMs } from '../../src/domain/flow-control.ts';
import { shardOf } from '../../src/domain/shard.ts';
import { query } from '../../src/store/db.ts';
import {
  deleteFlowControl,
  FlowControlInUseError,
  getFlowControl,
  listFlowControls,
  putFlowControl,
} from '../../src/store/flow-controls.ts';
import { createJob } from '../../src/store/jobs.ts';
import { FLOW_START_DELAY_MS } from '../../src/store/queue/claim-flow-runs.ts';
import { claimBucket, claimRuns } from '../../src/store/queue/claim-runs.ts';
import { reapExpiredLeases } from '../../src/store/queue/reap-leases.ts';
import { WITH_CITUS } from '../support/databases.ts';
import { createTestTenantIn, T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

const MARGIN = 1_000;

describe.each(WITH_CITUS)('flow controls at the claim ($kind)', (target) => {
  let store: TestStore;
  let tenantId: string;

  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });

  const claim = (owner: string, nowMs: number, o: { limit?: number; horizonMs?: number } = {}) =>
    claimRuns(store.database.db, { owner, limit: o.limit ?? 100, nowMs, leaseMarginMs: MARGIN, horizonMs: o.horizonMs ?? 0 });
  /**
   * `n` once-jobs due 1 ms apart from `at` (by default before the store clock's T0, so `waiting` counts them), naming
   * `flowControlKey` (or none), in creation (= due) order.
   */
  const jobs = async (n: number, flowControlKey: string | null, at = T0 - 100, tenant = tenantId) => {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const due = at + i;
      const job = await createJob(store.ctx, tenant, { ...testJobSpec(due, { name: `j${i}` }), flowControlKey }, due);
      out.push(job.id);
    }
    return out;
  };
  const jobsOf = (claimed: ClaimedRun[]) => claimed.map((r) => r.jobId);
  const put = (key: string, spec: { rate?: { limit: number; periodMs: number }; parallelism?: number; paused?: boolean }) =>
    putFlowControl(store.ctx, tenantId, key, {
      rate: spec.rate ?? null,
      parallelism: spec.parallelism ?? null,
      paused: spec.paused ?? false,
    });
  /** Ends the claimed runs as a finish would: succeeded, lease cleared. */
  const finish = (claimed: ClaimedRun[]) =>
    query(
      store.database.db,
      sql`update runs set status = 'succeeded', lease_owner = null, lease_expires_at = null
          where id in (select value::uuid from jsonb_array_elements_text(${JSON.stringify(claimed.map((r) => r.runId))}::jsonb))`,
    );
  const waitingRuns = async (jobIds: string[]) =>
    query<{ status: string; attempts: number; next: string }>(
      store.database.db,
      sql`select status, attempts, next_attempt_at::text as next from runs
          where job_id in (select value::uuid from jsonb_array_elements_text(${JSON.stringify(jobIds)}::jsonb)) order by scheduled_for`,
    );

  it('parallelism: at most that many hold a lease across claimers, in due order; a finish frees the slot', async () => {
    await put('p3', { parallelism: 3 });
    const limited = await jobs(8, 'p3');
    const free = await jobs(2, null, T0 - 95);

    const a = await claim('A', T0 + 100);
    expect(jobsOf(a).filter((j) => limited.includes(j))).toEqual(limited.slice(0, 3));
    // The plain claim looked past the held-back runs to the bucket's other runs.
    expect(
      jobsOf(a)
        .filter((j) => free.includes(j))
        .sort(),
    ).toEqual([...free].sort());
    // A granted start is never before the claim's now (nor the run's due time): FLOW_START_DELAY_MS after it.
    const start = T0 + 100 + FLOW_START_DELAY_MS;
    expect(a.filter((r) => limited.includes(r.jobId)).map((r) => r.dueAtMs)).toEqual([start, start, start]);

    const b = await claim('B', T0 + 200);
    expect(b).toEqual([]);
    const view = await getFlowControl(store.ctx, tenantId, 'p3');
    expect(view).toMatchObject({ inFlight: 3, waiting: 5, parallelism: 3, rate: null, paused: false });
    // A page of the list counts each flow control's own runs (one statement for the whole page).
    await put('q-idle', { parallelism: 1 });
    const page = await listFlowControls(store.ctx, tenantId, { limit: 10 });
    expect(page.items.map((f) => [f.key, f.inFlight, f.waiting])).toEqual([
      ['p3', 3, 5],
      ['q-idle', 0, 0],
    ]);
    // Held back means untouched: still scheduled, no attempt counted, due as before.
    const rest = await waitingRuns(limited.slice(3));
    expect(rest.map((r) => [r.status, r.attempts])).toEqual(rest.map(() => ['scheduled', 0]));

    await finish(a.filter((r) => limited.includes(r.jobId)).slice(0, 2));
    const c = await claim('B', T0 + 300);
    expect(jobsOf(c)).toEqual(limited.slice(3, 5));
  });

  it('parallelism: the slots of a dead claimer come back with its leases (reaper), not before', async () => {
    await put('p2', { parallelism: 2 });
    const limited = await jobs(4, 'p2');
    const a = await claim('dead', T0);
    expect(jobsOf(a)).toEqual(limited.slice(0, 2));
    const leaseEnd = Math.max(...a.map((r) => r.leaseExpiresAtMs));
    expect(await claim('B', leaseEnd - 1)).toEqual([]);
    await reapExpiredLeases(store.database.db, leaseEnd + 1);
    const b = await claim('B', leaseEnd + 2);
    // Both slots are free again: the next two in due order (the reaped runs are retrying, due at the reap, after them).
    expect(jobsOf(b)).toEqual(limited.slice(2, 4));
  });

  it('rate: no window of the period (plus slack) holds more than the limit; starts go on the horizon', async () => {
    const period = 1_000;
    await put('r5', { rate: { limit: 5, periodMs: period } });
    const limited = await jobs(12, 'r5');
    const first = await claim('A', T0 + 20, { horizonMs: 250 });
    expect(first.map((r) => r.dueAtMs)).toEqual(first.map(() => T0 + 20 + FLOW_START_DELAY_MS));
    expect(jobsOf(first)).toEqual(limited.slice(0, 5));
    expect(await claim('A', T0 + 500, { horizonMs: 250 })).toEqual([]);
    const window = period + rateSlackMs(period);
    const second = await claim('B', T0 + window - 100, { horizonMs: 250 + FLOW_START_DELAY_MS });
    expect(jobsOf(second)).toEqual(limited.slice(5, 10));
    // Each start is at least a window after the start it replaces in the log, and never before its run is due.
    const starts = [...first, ...second].map((r) => r.dueAtMs);
    for (let i = 5; i < starts.length; i++) expect(starts[i]! - starts[i - 5]!).toBeGreaterThanOrEqual(window);
    // Its lease counts from the start it was granted.
    for (const r of second) expect(r.leaseExpiresAtMs).toBe(r.dueAtMs + 1_000 + MARGIN);
  });

  it('a paused flow control holds its runs; resumed, they go in due order', async () => {
    await put('pz', { parallelism: 10, paused: true });
    const limited = await jobs(3, 'pz');
    expect(await claim('A', T0 + 10)).toEqual([]);
    expect(await getFlowControl(store.ctx, tenantId, 'pz')).toMatchObject({ waiting: 3, inFlight: 0, paused: true });
    await put('pz', { parallelism: 10, paused: false });
    expect(jobsOf(await claim('A', T0 + 20))).toEqual(limited);
  });

  it('a claim that does not know the bucket has flow controls gives their runs back untouched', async () => {
    await put('stale', { parallelism: 1 });
    const limited = await jobs(2, 'stale');
    const got = await claimBucket(store.database.db, {
      owner: 'A',
      limit: 10,
      nowMs: T0 + 10,
      leaseMarginMs: MARGIN,
      shard: shardOf(tenantId),
    });
    expect(got.deliver).toEqual([]);
    const rows = await waitingRuns(limited);
    expect(rows.map((r) => [r.status, r.attempts, Date.parse(r.next)])).toEqual([
      ['scheduled', 0, T0 - 100],
      ['scheduled', 0, T0 - 99],
    ]);
  });

  it('destinationRoom: runs of a destination beyond the room go back untouched, in due order', async () => {
    const ids = await jobs(5, null);
    const got = await claimRuns(store.database.db, {
      owner: 'A',
      limit: 100,
      nowMs: T0 + 10,
      leaseMarginMs: MARGIN,
      destinationRoom: (d) => (d === 'http://127.0.0.1:9' ? 2 : 100),
    });
    expect(jobsOf(got)).toEqual(ids.slice(0, 2));
    const rest = await waitingRuns(ids.slice(2));
    expect(rest.map((r) => [r.status, r.attempts])).toEqual(rest.map(() => ['scheduled', 0]));
    expect(jobsOf(await claim('B', T0 + 20))).toEqual(ids.slice(2));
  });

  it('a flow control named by open jobs cannot be deleted; other tenants do not see it', async () => {
    await put('busy', { parallelism: 1 });
    await jobs(1, 'busy');
    await expect(deleteFlowControl(store.ctx, tenantId, 'busy')).rejects.toBeInstanceOf(FlowControlInUseError);
    const other = await createTestTenantIn(store.ctx, 'other');
    expect(await getFlowControl(store.ctx, other, 'busy')).toBeNull();
    expect(await deleteFlowControl(store.ctx, other, 'busy')).toBe(false);
    await query(store.database.db, sql`update jobs set status = 'canceled' where tenant_id = ${tenantId}`);
    expect(await deleteFlowControl(store.ctx, tenantId, 'busy')).toBe(true);
  });
});
