/**
 * Claims due runs of one bucket (`shard`) for one dispatcher: the hot path's first half. One transaction, every
 * statement of it naming the bucket:
 * 1. in a bucket with flow controls, their runs first: each flow control grants starts to its earliest waiting runs
 *    (claim-flow-runs.ts), which the claim statement leases with their start as due time;
 * 2. `UPDATE … FROM (SELECT … FOR UPDATE SKIP LOCKED)` takes up to what is left of `limit` of the other waiting runs
 *    whose time has come (or comes within `horizonMs`), sets the lease (from the due time: callback timeout + margin)
 *    and counts the attempt, returning each run with its job;
 * 3. gives back the runs of suspended tenants and of tenants past their callbacks per day (hold-runs.ts), those over a
 *    destination's room and a flow control's runs the plain claim took (claim-steps.ts), then decides each other run's
 *    fate (`decideClaim`): deliver, or end it `expired`/`skipped` without a request;
 * 4. creates each advancing job's next occurrence and updates the job (docs/design.md invariant 2: the next occurrence
 *    is created in the same transaction that claims the current one).
 * Any number of dispatchers may call this concurrently: SKIP LOCKED partitions the rows without a leader.
 */
import { sql } from 'drizzle-orm';
import { decideClaim } from '../../domain/claim-plan.ts';
import type { ClaimedRun } from '../../domain/claimed-run.ts';
import { asyncCompletionOf } from '../../domain/completion.ts';
import { DESTINATION_PATTERN } from '../../domain/destination.ts';
import type { EventSeed } from '../../domain/events.ts';
import { type BucketDue, type BucketShare, Rotation, shareClaim, shareLeftover } from '../../domain/fair-share.ts';
import { newId } from '../../domain/ids.ts';
import { jitterOffsetMs } from '../../domain/schedule.ts';
import { JOB_STATUS, RUN_STATUS, RUN_TRIGGER } from '../../domain/states.ts';
import { announceRun, type Db, type Executor, type PlannerSettings, pipelined, queryPlanned } from '../db.ts';
import { endpointsOfEvents, recordEvents } from '../notifications.ts';
import { runs } from '../schema.ts';
import { inBucket, type OnBucketError } from './by-bucket.ts';
import { type FlowGranted, flowDue, grantFlowRuns } from './claim-flow-runs.ts';
import { advanceJobs, asResultDelivery, type ClaimRow, endRuns, runsNotOurs } from './claim-steps.ts';
import { dueBuckets } from './due-backlog.ts';
import { giveBack, holdRuns, tenantOfRun } from './hold-runs.ts';

export type ClaimOptions = {
  /** This dispatcher's lease owner id. */
  owner: string;
  limit: number;
  nowMs: number;
  /** Added to the callback's timeout to make the lease, in ms. */
  leaseMarginMs: number;
  /** Also claim runs due up to this many ms after `nowMs` (the dispatcher fires them on a timer); default 0. */
  horizonMs?: number;
  /** Leave runs whose callback destination (`destinationOf`) is one of these unclaimed (saturated destinations). */
  skipDestinations?: string[];
  /**
   * How many more runs of a destination (`destinationOf` of the callback URL) this dispatcher may take now (its
   * per-destination limit, as adapted, less the runs of it it holds): the claim keeps at most that many of each, in due
   * order, and gives the rest back untouched in the same transaction, for other dispatchers. Absent: no cap.
   */
  destinationRoom?: (destination: string) => number;
  /**
   * The bucket has flow controls (`BucketDue.flows`): the runs of jobs that name one are claimed through their flow
   * control (claim-flow-runs.ts) and passed over by the plain claim. Absent or false: a claimed run of such a job (the
   * flow control is newer than the caller's read of the buckets) is given back untouched.
   */
  flows?: boolean;
  /** The default callbacks-per-day quota of a tenant (CHIME_QUOTA_CALLBACKS_PER_DAY; 0 or absent = none): hold-runs.ts. */
  callbacksPerDay?: number;
};

const ms = (d: Date | string): number => (d instanceof Date ? d.getTime() : Date.parse(d));

/** How many of the earliest due runs a claim that skips destinations looks through. */
const SKIP_WINDOW = 5_000;

/**
 * The waiting runs due by `horizonIso`, earliest first, locked for the claim: read in order on the partial due index
 * (see CLAIM_PLAN), stopping after `limit`. With destinations to skip, each candidate's job is looked up to
 * match its callback URL's destination (the same DESTINATION_PATTERN as `destinationOf`) and the walk is bounded to the
 * SKIP_WINDOW earliest due runs (the bound's due time is read on the index first), so its cost does not grow with the
 * skipped backlog. Either way the query reads one table in index order, so no plan can turn it into a scan and sort
 * of the whole backlog, or a join of the backlog to itself.
 */
function dueRuns(shard: number, horizonIso: string, limit: number, skip: string[], flows: boolean) {
  if (skip.length === 0 && !flows) {
    return sql`select id, next_attempt_at, null::uuid as flow_id from runs
      where shard = ${shard} and status in ('scheduled', 'retrying') and next_attempt_at <= ${horizonIso}::timestamptz
      order by next_attempt_at limit ${limit} for update skip locked`;
  }
  // A run whose job names an existing flow control is that flow control's to claim (claim-flow-runs.ts); a result
  // delivery goes to its own destination, which no flow control limits.
  // The bucket's jobs that name a flow control, read once per claim (a hashed subplan), not looked up per run passed.
  const ofNoFlow = flows
    ? sql`and (w.trigger = ${RUN_TRIGGER.result} or w.job_id not in (select fj.id from flow_controls f, jobs fj
             where f.shard = ${shard} and fj.tenant_id = f.tenant_id and fj.shard = ${shard} and fj.flow_control_key = f.key))`
    : sql``;
  const ofOpenDestination =
    skip.length === 0
      ? sql``
      : sql`and (select coalesce(lower(substring(coalesce(w.callback, wj.callback)->>'url' from ${DESTINATION_PATTERN}::text)), '') from jobs wj
             where wj.shard = ${shard} and wj.id = w.job_id)
            <> all(select value from jsonb_array_elements_text(${JSON.stringify(skip)}::jsonb))`;
  return sql`select id, next_attempt_at, null::uuid as flow_id from runs w
      where shard = ${shard} and status in ('scheduled', 'retrying')
        and next_attempt_at <= coalesce(
          (select next_attempt_at from runs
           where shard = ${shard} and status in ('scheduled', 'retrying') and next_attempt_at <= ${horizonIso}::timestamptz
           order by next_attempt_at offset ${SKIP_WINDOW - 1} limit 1),
          ${horizonIso}::timestamptz)
        ${ofOpenDestination} ${ofNoFlow}
      order by next_attempt_at limit ${limit} for update skip locked`;
}

/**
 * The claim's planner settings, for each of its statements: sorting is priced out, so the due runs can only be read in order from the
 * partial due index (`runs_due_idx`), stopping after `limit`, whatever the table's statistics say. Without it, on a
 * table with no statistics yet (a fresh database, or a burst of new runs before autovacuum's ANALYZE) PostgreSQL
 * estimated a few dozen due rows and chose a bitmap scan of the whole due backlog and a sort: every claim read and
 * sorted the backlog, so a drain was quadratic in its size. Every statement of the claim joins its few rows to rows
 * of one bucket by primary key, so hash and merge joins and bitmap scans are priced out too: short of statistics, the
 * planner took the bucket's condition for selective and read every job of the bucket into a hash for a claim's hundred.
 */
export const CLAIM_PLAN: PlannerSettings = {
  enable_sort: 'off',
  enable_hashjoin: 'off',
  enable_mergejoin: 'off',
  enable_bitmapscan: 'off',
};

/**
 * The claim statement (step 1 above) at `nowMs`: locks and leases up to `o.limit` due runs and returns them with their
 * jobs. Run it under CLAIM_PLAN (`queryPlanned`); exported for the plan's test.
 */
export function claimStatement(o: ClaimOptions & { shard: number }, granted?: readonly FlowGranted[]) {
  const now = new Date(o.nowMs).toISOString();
  const horizon = new Date(o.nowMs + (o.horizonMs ?? 0)).toISOString();
  const due = granted ? flowDue(granted) : dueRuns(o.shard, horizon, o.limit, o.skipDestinations ?? [], o.flows ?? false);
  // The due runs are a materialized CTE: evaluated once. As a subquery in FROM, a plan that rescanned it (a nested
  // loop over the bucket's runs, chosen on a small table) locked a new set of runs on every rescan, past the limit.
  return sql`with due as materialized (${due})
          update runs r
          set status = 'running', lease_owner = ${o.owner},
              -- A run claimed ahead of its time (horizon) is held from its due time on. The sum is taken in UTC
              -- (timestamp + interval, immutable): Citus refuses timestamptz + interval (stable) over columns in an UPDATE.
              lease_expires_at = ((greatest(${now}::timestamptz, due.next_attempt_at) at time zone 'UTC')
                + (coalesce((coalesce(r.callback, j.callback)->>'timeoutMs')::int, 10000) + ${o.leaseMarginMs}::int) * interval '1 millisecond') at time zone 'UTC',
              attempts = r.attempts + 1, next_attempt_at = null,
              started_at = coalesce(r.started_at, greatest(${now}::timestamptz, due.next_attempt_at)), flow_id = due.flow_id
          from due, jobs j
          where r.shard = ${o.shard} and r.id = due.id and j.shard = ${o.shard} and j.id = r.job_id
          returning r.id, r.job_id, r.tenant_id, r.scheduled_for, r.trigger, r.attempts, r.lease_expires_at, due.next_attempt_at as due_at,
                    j.status as job_status, j.schedule, coalesce(r.callback, j.callback) as callback, j.auth_token_enc, j.auth_secret_enc,
                    coalesce(r.payload, j.payload) as payload, case when r.payload is null then j.body end as body, r.event_id, j.retry,
                    j.relevancy_window_ms, j.delivery_mode, j.overlap_policy, j.catch_up, j.jitter_ms,
                    j.trace_parent, j.on_success, j.on_failure, j.completion, ${tenantOfRun(o.shard)}, due.flow_id,
                    case when r.trigger <> ${RUN_TRIGGER.result} and j.flow_control_key is not null then
                      (select f.id from flow_controls f where f.shard = ${o.shard} and f.tenant_id = j.tenant_id and f.key = j.flow_control_key)
                    end as flow_control_id`;
}

/** How a claim across buckets shares itself out (`claimRuns`). */
export type FairClaim = {
  /** Where the round starts; kept by the caller from claim to claim (default: a new one, starting at bucket 0). */
  rotation?: Rotation;
  /** The buckets with waiting runs, if just read (default: read now with `dueBuckets`). */
  buckets?: readonly BucketDue[];
  /**
   * Called when one bucket's claim fails; the claim then goes on with the other buckets (on Citus, a worker that is
   * down fails only the buckets it holds). Without it, the first failure is thrown.
   */
  onBucketError?: OnBucketError;
};

/**
 * Claims up to `o.limit` runs due by now + horizon, shared out over the buckets that have some (`shareClaim`), then
 * what is left over the buckets that filled their share (`shareLeftover`): one claim transaction per bucket, each
 * naming its bucket only (`claimBucket`).
 * @returns the runs to deliver, bucket after bucket, each bucket's in due order
 * @throws a bucket's error without `o.onBucketError`; with it, an Error when every bucket tried failed
 */
export async function claimRuns(db: Db, o: ClaimOptions & FairClaim): Promise<ClaimedRun[]> {
  const rotation = o.rotation ?? new Rotation();
  const buckets = o.buckets ?? (await dueBuckets(db));
  const claimed: ClaimedRun[] = [];
  const withFlows = new Set(buckets.filter((b) => b.flows).map((b) => b.shard));
  let shares = shareClaim(buckets, o.limit, o.nowMs + (o.horizonMs ?? 0), rotation);
  const tried = new Set<number>();
  const failed = new Set<number>();
  const onBucketError: OnBucketError | undefined =
    o.onBucketError &&
    ((shard, err) => {
      o.onBucketError!(shard, err);
      failed.add(shard);
    });
  for (let pass = 0; pass < 2 && shares.length > 0; pass++) {
    const served: (BucketShare & { claimed: number })[] = [];
    for (const share of shares) {
      tried.add(share.shard);
      const runs = await inBucket(
        share.shard,
        () => claimBucket(db, { ...o, shard: share.shard, limit: share.limit, flows: withFlows.has(share.shard) }),
        onBucketError,
      );
      if (!runs) continue;
      // A bucket whose runs all ended at the claim (expired, skipped) may still have more due: count what was taken.
      served.push({ ...share, claimed: runs.taken });
      claimed.push(...runs.deliver);
    }
    const left = o.limit - served.reduce((n, s) => n + s.claimed, 0);
    shares = shareLeftover(served, left);
  }
  // Every bucket tried failed: the database is down, not a part of it (the caller backs off).
  if (failed.size > 0 && failed.size === tried.size) throw new Error(`claims failed in every bucket tried (${failed.size})`);
  return claimed;
}

/**
 * Claims up to `limit` due runs of bucket `o.shard`.
 * @returns `deliver`, the runs to deliver (the others were ended in the same transaction), and `taken`, how many
 *   runs the claim took in all
 */
export async function claimBucket(db: Db, o: ClaimOptions & { shard: number }): Promise<{ deliver: ClaimedRun[]; taken: number }> {
  return db.transaction(async (tx) => {
    const now = new Date(o.nowMs).toISOString();
    const claimedRows = await claimRows(tx, o);
    if (claimedRows.length === 0) return { deliver: [], taken: 0 };
    // A suspended tenant's runs and those past its callbacks per day go back untouched (hold-runs.ts), and so do the
    // runs that are another claim's: a flow control's (claimed by the plain claim) and those over a destination's room.
    const held = await holdRuns(tx, o.shard, claimedRows, o.nowMs, o.callbacksPerDay ?? 0);
    const notOurs = runsNotOurs(claimedRows, held, o.destinationRoom);
    if (notOurs.length > 0) {
      await giveBack(
        tx,
        o.shard,
        notOurs.map((r) => ({ id: r.id, until: new Date(ms(r.due_at)).toISOString() })),
      );
      for (const r of notOurs) held.add(r.id);
    }
    const rows = held.size === 0 ? claimedRows : claimedRows.filter((r) => !held.has(r.id));

    const busy = await busyJobs(tx, o.shard, rows);
    const ended: { id: string; status: string; error: string | null }[] = [];
    const jobUpdates: { id: string; next_ms: number | null; last_ms: number; completed: boolean }[] = [];
    const nextRuns: (typeof runs.$inferInsert)[] = [];
    const deliver: ClaimedRun[] = [];
    const events: EventSeed[] = [];
    for (const raw of rows) {
      const r = raw.trigger === RUN_TRIGGER.result ? asResultDelivery(raw) : raw;
      const scheduledForMs = ms(r.scheduled_for);
      const d = decideClaim(
        {
          trigger: r.trigger,
          attempt: r.attempts,
          scheduledForMs,
          schedule: r.schedule,
          jobActive: r.job_status === JOB_STATUS.active,
          catchUp: r.catch_up,
          overlapPolicy: r.overlap_policy,
          relevancyWindowMs: r.relevancy_window_ms,
          overlapBusy: busy.has(r.job_id),
        },
        o.nowMs,
      );
      if (d.advances) {
        jobUpdates.push({ id: r.job_id, next_ms: d.nextMs, last_ms: scheduledForMs, completed: d.nextMs === null });
        if (d.nextMs !== null) {
          nextRuns.push({
            shard: o.shard,
            id: newId(),
            tenantId: r.tenant_id,
            jobId: r.job_id,
            scheduledFor: new Date(d.nextMs),
            trigger: 'schedule',
            status: RUN_STATUS.scheduled,
            nextAttemptAt: new Date(d.nextMs + jitterOffsetMs(r.job_id, r.jitter_ms)),
            createdAt: new Date(o.nowMs),
          });
        }
      }
      if (d.advances && d.nextMs === null) events.push({ type: 'job.completed', tenantId: r.tenant_id, jobId: r.job_id });
      if (d.outcome !== RUN_STATUS.running) {
        ended.push({ id: r.id, status: d.outcome, error: d.reason });
        if (d.outcome === RUN_STATUS.expired && r.trigger !== RUN_TRIGGER.notification && r.trigger !== RUN_TRIGGER.result) {
          events.push({ type: 'run.expired', tenantId: r.tenant_id, jobId: r.job_id, runId: r.id });
        }
        continue;
      }
      deliver.push({
        shard: o.shard,
        runId: r.id,
        jobId: r.job_id,
        tenantId: r.tenant_id,
        scheduledForMs,
        trigger: r.trigger,
        attempt: r.attempts,
        leaseExpiresAtMs: ms(r.lease_expires_at),
        dueAtMs: ms(r.due_at),
        callback: r.callback,
        authTokenEnc: r.auth_token_enc,
        authSecretEnc: r.auth_secret_enc,
        payload: r.payload,
        body: r.body,
        eventId: r.event_id,
        retry: r.retry,
        relevancyWindowMs: r.relevancy_window_ms,
        deliveryMode: r.delivery_mode,
        jobTraceParent: r.trace_parent,
        onSuccess: r.on_success,
        onFailure: r.on_failure,
        completion: asyncCompletionOf(r.completion),
      });
    }

    // What follows depends on nothing but the claim: sent together, one round trip (the events' endpoints read with them).
    const [endpoints] = await pipelined(
      tx,
      CLAIM_PLAN,
      () => endpointsOfEvents(tx, events),
      () => (ended.length > 0 ? endRuns(tx, o.shard, ended, now) : Promise.resolve()),
      () => (nextRuns.length > 0 ? tx.insert(runs).values(nextRuns).onConflictDoNothing() : Promise.resolve()),
      () =>
        nextRuns.length > 0 ? announceRun(tx, Math.min(...nextRuns.map((n) => n.nextAttemptAt!.getTime())), o.nowMs) : Promise.resolve(),
      () => (jobUpdates.length > 0 ? advanceJobs(tx, o.shard, jobUpdates) : Promise.resolve()),
    );
    // After the updates above, so the events show the runs ended and the jobs completed.
    await recordEvents(tx, events, o.nowMs, endpoints);
    return { deliver, taken: claimedRows.length };
  });
}

/**
 * The claim's rows, due order: in a bucket with flow controls, first the runs their flow controls grant (with the
 * rate's start as their due time), then, with what is left of the limit, the other due runs.
 */
async function claimRows(tx: Executor, o: ClaimOptions & { shard: number }): Promise<ClaimRow[]> {
  const granted = o.flows ? await grantFlowRuns(tx, o.shard, o.limit, o.nowMs, o.horizonMs ?? 0) : [];
  const flowRows = granted.length > 0 ? await queryPlanned<ClaimRow>(tx, CLAIM_PLAN, claimStatement(o, granted)) : [];
  const left = o.limit - flowRows.length;
  const rows = left > 0 ? await queryPlanned<ClaimRow>(tx, CLAIM_PLAN, claimStatement({ ...o, limit: left })) : [];
  return [...flowRows, ...rows].sort((a, b) => ms(a.due_at) - ms(b.due_at));
}

/**
 * Jobs with `overlapPolicy: skip` among `rows` that have another run running or retrying. A retry of the job claimed
 * in this same batch (already `running` in this transaction) counts: only the candidates themselves are left out.
 */
async function busyJobs(tx: Parameters<Parameters<Db['transaction']>[0]>[0], shard: number, rows: ClaimRow[]): Promise<Set<string>> {
  const candidates = rows.filter((r) => r.overlap_policy === 'skip' && r.trigger === 'schedule' && r.attempts === 1);
  if (candidates.length === 0) return new Set();
  const jobIds = JSON.stringify([...new Set(candidates.map((r) => r.job_id))]);
  const claimed = JSON.stringify(candidates.map((r) => r.id));
  const busy = await queryPlanned<{ job_id: string }>(
    tx,
    CLAIM_PLAN,
    sql`select distinct job_id from runs
        where shard = ${shard} and job_id in (select value::uuid from jsonb_array_elements_text(${jobIds}::jsonb))
          and status in ('running', 'retrying') and trigger <> ${RUN_TRIGGER.result}
          and id not in (select value::uuid from jsonb_array_elements_text(${claimed}::jsonb))`,
  );
  return new Set(busy.map((b) => b.job_id));
}
