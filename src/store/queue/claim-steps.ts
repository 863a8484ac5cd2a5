/**
 * The claim's steps after its statement (claim-runs.ts): which claimed runs go back untouched, how a result delivery is
 * sent, and the statements that end runs at the claim, advance their jobs and find the jobs busy for `overlapPolicy:
 * skip`. Each names the claim's one bucket (docs/design.md invariant 10).
 */
import { sql } from 'drizzle-orm';
import type { ChainLink, ChainUpstream } from '../../domain/chain.ts';
import { destinationOf } from '../../domain/destination.ts';
import { EVENT_DELIVERY_RETRY, EVENT_DELIVERY_WINDOW_MS } from '../../domain/events.ts';
import type { CallbackSpec, ResultRoute } from '../../domain/job.ts';
import type { RetryPolicy } from '../../domain/retry.ts';
import type { CatchUpPolicy, DeliveryMode, OverlapPolicy, RunTrigger } from '../../domain/states.ts';
import { batchByPrimaryKey, type Executor } from '../db.ts';
import type { PlanColumns } from '../plan-columns.ts';
import type { HoldCandidate } from './hold-runs.ts';

/** A row the claim statement returns: a run with what its job and tenant say about it (the plan columns included). */
export type ClaimRow = PlanColumns & {
  id: string;
  job_id: string;
  tenant_id: string;
  scheduled_for: Date | string;
  trigger: RunTrigger;
  attempts: number;
  lease_expires_at: Date | string;
  due_at: Date | string;
  job_status: string;
  callback: CallbackSpec;
  auth_token_enc: string | null;
  auth_secret_enc: string | null;
  payload: unknown;
  body: string | null;
  event_id: string | null;
  retry: RetryPolicy;
  relevancy_window_ms: number | null;
  delivery_mode: DeliveryMode;
  overlap_policy: OverlapPolicy;
  catch_up: CatchUpPolicy;
  trace_parent: string | null;
  on_success: ResultRoute | null;
  on_failure: ResultRoute | null;
  /** The job's `completion` as stored (src/domain/completion.ts `asyncCompletionOf`). */
  completion: unknown;
  /** The run's tenant: its status and `callbacksPerDay` override (hold-runs.ts `tenantOfRun`). */
  tenant: HoldCandidate['tenant'];
  /** The flow control the job names, if it exists (null for a result delivery, which no flow control limits). */
  flow_control_id: string | null;
  /** The flow control whose start this claim granted the run (claim-flow-runs.ts); null: claimed without one. */
  flow_id: string | null;
  /** The run waits, buffered, for its job's run in flight (`buffer-one`); claimed only once released. */
  buffered: boolean;
  created_at: Date | string;
  /** The job's chain links (`then`), for a run the claim ends `expired` (chain-runs.ts). */
  then_jobs: ChainLink[] | null;
  /** A chained run's upstream (`trigger = 'chain'`: src/store/queue/chain-runs.ts); null for any other run. */
  upstream: ChainUpstream | null;
  /** The bucket's earliest waiting run due after the claim's horizon, as the claim found it (the same on every row). */
  after_due: Date | string | null;
};

/**
 * The claimed runs, not already `held`, that this claim gives back untouched: a run of a job whose flow control the
 * plain claim took (its flow control is newer than the caller's read of the bucket, or the job named it since), and, in
 * due order, the runs of each destination beyond `destinationRoom` (a flow control's grants are kept: their starts are
 * in its rate's log, but they count against the room).
 */
export function runsNotOurs(
  rows: readonly ClaimRow[],
  held: ReadonlySet<string>,
  destinationRoom?: (destination: string) => number,
): ClaimRow[] {
  const out: ClaimRow[] = [];
  const taken = new Map<string, number>();
  for (const r of rows) {
    if (held.has(r.id)) continue;
    if (r.flow_id === null && r.flow_control_id !== null) {
      out.push(r);
      continue;
    }
    if (!destinationRoom) continue;
    const destination = destinationOf(r.callback.url);
    const n = taken.get(destination) ?? 0;
    taken.set(destination, n + 1);
    if (r.flow_id === null && n >= destinationRoom(destination)) out.push(r);
  }
  return out;
}

/**
 * A result delivery (`trigger = 'result'`) as the claim sends it: its own callback (the claim statement already took
 * `runs.callback` over the job's) and body, retried as notification events are (EVENT_DELIVERY_RETRY within
 * EVENT_DELIVERY_WINDOW_MS, at least once), without the job's auth token (a secret for the job's receiver, not for
 * the result's destination) and without result routes of its own (a delivery's end routes nothing).
 */
export function asResultDelivery(r: ClaimRow): ClaimRow {
  return {
    ...r,
    auth_token_enc: null,
    auth_secret_enc: null,
    body: null,
    retry: EVENT_DELIVERY_RETRY,
    relevancy_window_ms: EVENT_DELIVERY_WINDOW_MS,
    delivery_mode: 'at-least-once',
    on_success: null,
    on_failure: null,
    completion: null, // its response decides it: no report is awaited from a result's destination
  };
}

/** Ends runs the claim took but decided not to deliver (`expired`, `skipped`), at `nowIso`: the attempt is not counted. */
export function endRuns(tx: Executor, shard: number, ended: { id: string; status: string; error: string | null }[], nowIso: string) {
  return tx.execute(sql`update runs r
    set status = v.status, error = v.error, finished_at = ${nowIso}::timestamptz, lease_owner = null, lease_expires_at = null,
        next_attempt_at = null, attempts = r.attempts - 1
    from jsonb_to_recordset(${JSON.stringify(ended)}::jsonb) as v(id uuid, status text, error text)
    where ${batchByPrimaryKey(
      'r',
      shard,
      ended.map((e) => e.id),
    )}`);
}

/**
 * Moves the claimed runs' jobs on: when each fires next (`next_ms`, epoch ms: `nextRunAt`) and its last occurrence, one
 * more scheduled run made (for `maxRuns`), and `completed` when no occurrence is left, then no longer in `open_jobs`.
 * One statement. No index of `jobs` names a column it changes, so with room on the page the update is HOT.
 */
export function advanceJobs(
  tx: Executor,
  shard: number,
  updates: { id: string; next_ms: number | null; last_ms: number; completed: boolean }[],
) {
  return tx.execute(advanceJobsStatement(shard, updates));
}

/** `advanceJobs`' statement; exported for the plan's test (test/store/queue-cost.test.ts). */
export function advanceJobsStatement(
  shard: number,
  updates: { id: string; next_ms: number | null; last_ms: number; completed: boolean }[],
) {
  return sql`with advanced as (
      update jobs j
      set next_run_at = to_timestamp(v.next_ms / 1000.0), last_run_at = to_timestamp(v.last_ms / 1000.0),
          scheduled_runs = j.scheduled_runs + 1,
          status = case when v.completed and j.status = 'active' then 'completed' else j.status end
      from jsonb_to_recordset(${JSON.stringify(updates)}::jsonb)
           as v(id uuid, next_ms bigint, last_ms bigint, completed boolean)
      where ${batchByPrimaryKey(
        'j',
        shard,
        updates.map((u) => u.id),
      )}
      returning j.id, j.tenant_id, j.status)
    delete from open_jobs o using advanced a
    where o.shard = ${shard} and o.tenant_id = a.tenant_id and o.job_id = a.id and a.status = 'completed'`;
}
