/**
 * The claim of runs whose jobs name a flow control (API.md "Destination control"), in the claim transaction of one
 * bucket, before the claim of the others (claim-runs.ts, which leaves these runs alone in a bucket with flow controls).
 * For each flow control of the bucket that no other claim holds right now (`FOR UPDATE SKIP LOCKED` on its row, so one
 * dispatcher at a time grants its starts, in due order):
 * 1. counts its slots taken: its runs holding a lease (`runs_flow_lease_idx`). A slot comes back when the lease goes,
 *    whoever clears it (finish, reaper, give-back), so a dispatcher that dies holding slots holds them no longer than
 *    its leases;
 * 2. locks its earliest waiting runs due by the horizon, as many as its parallelism has room for;
 * 3. grants them starts (src/domain/flow-control.ts `grantStarts`) and writes the rate's log back;
 * the claim statement then leases the granted runs with the flow control's id (`runs.flow_id`) and their start as the
 * time the dispatcher fires them. Runs not granted stay as they were: due, in order, counted as `waiting`.
 */
import { sql } from 'drizzle-orm';
import { type FlowCandidate, grantStarts, rateLogOf } from '../../domain/flow-control.ts';
import { RUN_TRIGGER } from '../../domain/states.ts';
import { type Executor, epochMs, query } from '../db.ts';

type FlowRow = {
  id: string;
  tenant_id: string;
  key: string;
  rate_limit: number | null;
  rate_period_ms: number | null;
  parallelism: number | null;
  starts: unknown;
  in_flight: number | string;
};

type CandidateRow = { id: string; next_attempt_at: Date | string; scheduled_for: Date | string; relevancy_window_ms: number | null };

/** A run granted a start: the claim statement leases it (`flowDue`). */
export type FlowGranted = { id: string; startAtMs: number; flowId: string };

/**
 * How far after the claim's now a granted start is at the earliest, in ms. A start granted for "now" leaves only once
 * the claim has committed, later by however long the claim took, while one granted ahead leaves on its timer: that
 * difference would let the receiver see more than the rate allows in a window. Granted this far ahead, every start
 * leaves on its timer (a claim takes less).
 */
export const FLOW_START_DELAY_MS = 100;

/**
 * Grants starts to up to `limit` waiting runs of bucket `shard`'s flow controls, from FLOW_START_DELAY_MS after
 * `claimNowMs` (epoch ms) to `claimHorizonMs` after it (or at that delay when the horizon is shorter), in the caller's claim transaction `tx`: locks the flow controls it serves and the runs it grants
 * until the transaction ends, and writes each served rate's log. The flow controls are served from a random one on,
 * so that one key's backlog cannot take every claim's limit.
 * @returns the runs granted, to lease in the same transaction (`flowDue`)
 */
export async function grantFlowRuns(
  tx: Executor,
  shard: number,
  limit: number,
  claimNowMs: number,
  claimHorizonMs: number,
): Promise<FlowGranted[]> {
  const nowMs = claimNowMs + FLOW_START_DELAY_MS;
  const horizonMs = Math.max(0, claimHorizonMs - FLOW_START_DELAY_MS);
  const flows = await query<FlowRow>(
    tx,
    sql`select f.id, f.tenant_id, f.key, f.rate_limit, f.rate_period_ms, f.parallelism, f.starts,
          (select count(*) from runs where shard = ${shard} and flow_id = f.id and flow_leased) as in_flight
        from flow_controls f where f.shard = ${shard} and not f.paused
        for update of f skip locked`,
  );
  const granted: FlowGranted[] = [];
  const first = Math.floor(Math.random() * flows.length);
  for (let i = 0; i < flows.length && granted.length < limit; i++) {
    const f = flows[(first + i) % flows.length]!;
    const spec = {
      rate: f.rate_limit !== null && f.rate_period_ms !== null ? { limit: f.rate_limit, periodMs: f.rate_period_ms } : null,
      parallelism: f.parallelism,
      paused: false,
    };
    const inFlight = Number(f.in_flight);
    const room = Math.min(limit - granted.length, spec.parallelism === null ? limit : spec.parallelism - inFlight);
    // Nothing to lock when no slot is free or the rate allows no start before the horizon: the log alone says so.
    const probe = grantStarts(
      spec,
      rateLogOf(f.starts),
      inFlight,
      [{ id: '', dueAtMs: nowMs, scheduledForMs: nowMs, relevancyWindowMs: null }],
      nowMs,
      horizonMs,
    );
    if (room <= 0 || probe.granted.length === 0) continue;
    const candidates = await query<CandidateRow>(
      tx,
      sql`select r.id, r.next_attempt_at, r.scheduled_for, j.relevancy_window_ms from runs r, jobs j
          where r.shard = ${shard} and r.status in ('scheduled', 'retrying') and r.trigger <> ${RUN_TRIGGER.result}
            and r.next_attempt_at <= ${new Date(nowMs + horizonMs).toISOString()}::timestamptz
            and j.shard = ${shard} and j.id = r.job_id and j.tenant_id = ${f.tenant_id} and j.flow_control_key = ${f.key}
          order by r.next_attempt_at, r.id limit ${room}
          for update of r skip locked`,
    );
    if (candidates.length === 0) continue;
    const grant = grantStarts(spec, rateLogOf(f.starts), inFlight, candidates.map(candidateOf), nowMs, horizonMs);
    for (const g of grant.granted) granted.push({ ...g, flowId: f.id });
    if (spec.rate) {
      await query(tx, sql`update flow_controls set starts = ${JSON.stringify(grant.log)}::jsonb where shard = ${shard} and id = ${f.id}`);
    }
  }
  return granted;
}

/**
 * The claim statement's `due` rows for granted runs: each run's id, its start as `next_attempt_at` (its lease and fire
 * time count from it) and its flow control as `flow_id`.
 */
export function flowDue(granted: readonly FlowGranted[]) {
  const rows = granted.map((g) => ({ id: g.id, start_at: new Date(g.startAtMs).toISOString(), flow_id: g.flowId }));
  return sql`select v.id, v.start_at as next_attempt_at, v.flow_id
             from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as v(id uuid, start_at timestamptz, flow_id uuid)`;
}

function candidateOf(c: CandidateRow): FlowCandidate {
  return {
    id: c.id,
    dueAtMs: epochMs(c.next_attempt_at),
    scheduledForMs: epochMs(c.scheduled_for),
    relevancyWindowMs: c.relevancy_window_ms,
  };
}
