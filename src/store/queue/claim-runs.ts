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
import type { PlannedRun } from '../../domain/plan.ts';
import { JOB_STATUS, RUN_STATUS, RUN_TRIGGER } from '../../domain/states.ts';
import { announceRun, type Db, type Executor, epochMs, type PlannerSettings, pipelined, planTransaction, query, uuidArray } from '../db.ts';
import { endpointsOfEvents, recordEvents } from '../notifications.ts';
import { planColumns, planRuleOf } from '../plan-columns.ts';
import { runs } from '../schema.ts';
import { inBucket, type OnBucketError } from './by-bucket.ts';
import { triggerChains } from './chain-runs.ts';
import { type FlowGranted, flowDue, grantFlowRuns } from './claim-flow-runs.ts';
import { advanceJobs, asResultDelivery, type ClaimRow, endRuns, runsNotOurs } from './claim-steps.ts';
import { dueBuckets } from './due-backlog.ts';
import { giveBack, holdRuns, tenantOfRun } from './hold-runs.ts';
import { releaseNextBuffered } from './run-ends.ts';
import { dueTimes } from './spread-runs.ts';

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
 * The claim's planner settings, in force for its whole transaction (`planTransaction`): sorting is priced out, so the
 * due runs can only be read in order from the partial due index (`runs_due_idx`), stopping after `limit`, whatever
 * the table's statistics say. Without it, on a table with no statistics yet (a fresh database, or a burst of new runs
 * before autovacuum's ANALYZE) PostgreSQL estimated a few dozen due rows and chose a bitmap scan of the whole due
 * backlog and a sort: every claim read and sorted the backlog, so a drain was quadratic in its size. Every statement
 * of the claim joins its few rows to rows of one bucket by primary key, so hash and merge joins and bitmap scans are
 * priced out too: short of statistics, the planner took the bucket's condition for selective and read every job of
 * the bucket into a hash for a claim's hundred. The same mistake in a nested loop (the bucket's rows read once and
 * compared with every row of the batch) is priced out by the statements themselves: each that updates rows of the
 * batch by primary key names their ids as an array too (`batchByPrimaryKey`, or `id = any(…)`), so it reads the
 * batch's rows, or at worst the bucket's once, whatever the statistics: never the bucket once per row of the batch.
 */
export const CLAIM_PLAN: PlannerSettings = {
  enable_sort: 'off',
  enable_hashjoin: 'off',
  enable_mergejoin: 'off',
  enable_bitmapscan: 'off',
};

/**
 * The claim statement (step 1 above) at `nowMs`: locks and leases up to `o.limit` due runs and returns them with their
 * jobs. Run it under CLAIM_PLAN (`planTransaction`, or `queryPlanned` for one statement); exported for the plan's test.
 */
export function claimStatement(o: ClaimOptions & { shard: number }, granted?: readonly FlowGranted[]) {
  const now = new Date(o.nowMs).toISOString();
  const horizon = new Date(o.nowMs + (o.horizonMs ?? 0)).toISOString();
  const due = granted ? flowDue(granted) : dueRuns(o.shard, horizon, o.limit, o.skipDestinations ?? [], o.flows ?? false);
  // The due runs are a materialized CTE: evaluated once. As a subquery in FROM, a plan that rescanned it (a nested
  // loop over the bucket's runs, chosen on a small table) locked a new set of runs on every rescan, past the limit.
  // The bucket's first waiting run past the horizon: one probe of the due index, so the dispatcher knows when to claim
  // next without reading every bucket (claimBucket's `nextDueAtMs`).
  return sql`with due as materialized (${due}),
          after as materialized (select next_attempt_at from runs
            where shard = ${o.shard} and status in ('scheduled', 'retrying') and next_attempt_at > ${horizon}::timestamptz
            order by next_attempt_at limit 1)
          update runs r
          set status = 'running', lease_owner = ${o.owner},
              -- A run claimed ahead of its time (horizon) is held from its due time on. The sum is taken in UTC
              -- (timestamp + interval, immutable): Citus refuses timestamptz + interval (stable) over columns in an UPDATE.
              lease_expires_at = ((greatest(${now}::timestamptz, due.next_attempt_at) at time zone 'UTC')
                + (coalesce((coalesce(r.callback, j.callback)->>'timeoutMs')::int, 10000) + ${o.leaseMarginMs}::int) * interval '1 millisecond') at time zone 'UTC',
              -- The due time stays: the run keeps its place in runs_due_idx while leased, so this update changes no
              -- indexed column (HOT; the claims pass over leased runs by status, the reaper looks there).
              attempts = r.attempts + 1,
              started_at = coalesce(r.started_at, greatest(${now}::timestamptz, due.next_attempt_at)), flow_id = due.flow_id
          from due, jobs j
          where r.shard = ${o.shard} and r.id = due.id and j.shard = ${o.shard} and j.id = r.job_id
          returning r.id, r.job_id, r.tenant_id, r.scheduled_for, r.trigger, r.attempts, r.lease_expires_at, due.next_attempt_at as due_at,
                    j.status as job_status, coalesce(r.callback, j.callback) as callback, j.auth_token_enc, j.auth_secret_enc,
                    coalesce(r.payload, j.payload) as payload, case when r.payload is null then j.body end as body, r.event_id, j.retry,
                    j.relevancy_window_ms, j.delivery_mode, j.overlap_policy, j.catch_up,
                    j.trace_parent, j.on_success, j.on_failure, j.completion, ${tenantOfRun(o.shard)}, due.flow_id, r.upstream,
                    r.buffered, r.created_at, j.then_jobs, ${planColumns(o.shard)},
                    case when r.trigger <> ${RUN_TRIGGER.result} and j.flow_control_key is not null then
                      (select f.id from flow_controls f where f.shard = ${o.shard} and f.tenant_id = j.tenant_id and f.key = j.flow_control_key)
                    end as flow_control_id, (select next_attempt_at from after) as after_due`;
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
  /**
   * Called after each bucket's claim with its earliest waiting run left (`claimBucket`'s `nextDueAtMs`: epoch ms, null
   * when none is left, undefined when the claim cannot tell), so the caller can sleep until then without reading the
   * buckets again (docs/design.md "The dispatch engine", the claim pacer). Not called for a bucket whose claim failed.
   */
  onBucketDue?: (shard: number, nextDueAtMs: BucketClaim['nextDueAtMs']) => void;
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
      o.onBucketDue?.(share.shard, runs.nextDueAtMs);
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

/** What one bucket's claim did (`claimBucket`). */
export type BucketClaim = {
  /** The runs to deliver (the others were ended in the same transaction). */
  deliver: ClaimedRun[];
  /** How many runs the claim took in all. */
  taken: number;
  /**
   * The due time (epoch ms) of the bucket's earliest waiting run after the claim, null when none waits, or undefined
   * when the claim cannot tell: it took nothing, or its limit's worth (more may be due within the horizon), or it looked
   * past destinations or flow controls, or it gave runs back. Runs this transaction makes due other than the jobs' next
   * occurrences (chained runs, events, released buffered runs) are not counted: each is announced on RUNS_CHANNEL.
   */
  nextDueAtMs?: number | null;
};

/** Claims up to `limit` due runs of bucket `o.shard` (see BucketClaim for what it returns). */
export async function claimBucket(db: Db, o: ClaimOptions & { shard: number }): Promise<BucketClaim> {
  return db.transaction(async (tx) => {
    const now = new Date(o.nowMs).toISOString();
    // Every statement of the claim is planned under CLAIM_PLAN: set once for the transaction, in the claim's round trip.
    const [, claimedRows] = await Promise.all([planTransaction(tx, CLAIM_PLAN), claimRows(tx, o)]);
    if (claimedRows.length === 0) return { deliver: [], taken: 0 };
    // A suspended tenant's runs and those past its callbacks per day go back untouched (hold-runs.ts), and so do the
    // runs that are another claim's: a flow control's (claimed by the plain claim) and those over a destination's room.
    const held = await holdRuns(tx, o.shard, claimedRows, o.nowMs, o.callbacksPerDay ?? 0);
    const notOurs = runsNotOurs(claimedRows, held, o.destinationRoom);
    if (notOurs.length > 0) {
      await giveBack(
        tx,
        o.shard,
        notOurs.map((r) => ({ id: r.id, until: new Date(epochMs(r.due_at)).toISOString() })),
      );
      for (const r of notOurs) held.add(r.id);
    }
    const rows = held.size === 0 ? claimedRows : claimedRows.filter((r) => !held.has(r.id));

    const overlap = await overlapOf(tx, o.shard, rows);
    const ended: { id: string; status: string; error: string | null }[] = [];
    const buffered: string[] = [];
    const jobUpdates: { id: string; next_ms: number | null; last_ms: number; completed: boolean }[] = [];
    const planned: NextRun[] = [];
    const deliver: ClaimedRun[] = [];
    const events: EventSeed[] = [];
    for (const raw of rows) {
      const r = raw.trigger === RUN_TRIGGER.result ? asResultDelivery(raw) : raw;
      const scheduledForMs = epochMs(r.scheduled_for);
      const d = decideClaim(
        {
          trigger: r.trigger,
          attempt: r.attempts,
          scheduledForMs,
          plan: planRuleOf(r.job_id, r),
          jobActive: r.job_status === JOB_STATUS.active,
          catchUp: r.catch_up,
          overlapPolicy: r.overlap_policy,
          relevancyWindowMs: r.relevancy_window_ms,
          // A backfilled run's window counts from the backfill (API.md "Richer schedules"), not from its past occurrence.
          windowFromMs: r.trigger === RUN_TRIGGER.backfill ? epochMs(r.created_at) : scheduledForMs,
          overlapBusy: overlap.busy.has(r.job_id),
          released: r.buffered,
          bufferedWaiting: overlap.buffered.has(r.job_id),
        },
        o.nowMs,
      );
      if (d.advances) {
        jobUpdates.push({ id: r.job_id, next_ms: d.next?.firesAtMs ?? null, last_ms: scheduledForMs, completed: d.next === null });
        if (d.next !== null) planned.push({ run: r, next: d.next });
      }
      if (d.advances && d.next === null) events.push({ type: 'job.completed', tenantId: r.tenant_id, jobId: r.job_id });
      if (d.outcome === 'buffered') {
        buffered.push(r.id);
        overlap.buffered.add(r.job_id);
        continue;
      }
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
        leaseExpiresAtMs: epochMs(r.lease_expires_at),
        dueAtMs: epochMs(r.due_at),
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
        upstream: r.upstream,
      });
    }

    const nextRuns = await nextScheduledRuns(tx, o.shard, planned, jobUpdates, o.nowMs);
    // What follows depends on nothing but the claim: sent together, one round trip (the events' endpoints read with them).
    const [endpoints] = await pipelined(
      tx,
      null,
      () => endpointsOfEvents(tx, events),
      () => (ended.length > 0 ? endRuns(tx, o.shard, ended, now) : Promise.resolve()),
      () => (buffered.length > 0 ? bufferRuns(tx, o.shard, buffered) : Promise.resolve()),
      () => (nextRuns.length > 0 ? tx.insert(runs).values(nextRuns).onConflictDoNothing() : Promise.resolve()),
      () =>
        nextRuns.length > 0 ? announceRun(tx, Math.min(...nextRuns.map((n) => n.nextAttemptAt!.getTime())), o.nowMs) : Promise.resolve(),
      () => (jobUpdates.length > 0 ? advanceJobs(tx, o.shard, jobUpdates) : Promise.resolve()),
    );
    // Runs ended `expired` here fire their jobs' chains as any end does (chain-runs.ts), after the end is written.
    const expiredIds = new Set(ended.filter((e) => e.status === RUN_STATUS.expired).map((e) => e.id));
    const expired = rows.filter((r) => expiredIds.has(r.id));
    if (expired.length > 0) {
      await triggerChains(
        tx,
        o.shard,
        expired.map((r) => ({ id: r.id, job_id: r.job_id, trigger: r.trigger, status: RUN_STATUS.expired, then_jobs: r.then_jobs })),
        o.nowMs,
      );
    }
    // A run ended here (a released one expired, say) no longer holds its job's turn: the job's next buffered run goes
    // (run-ends.ts), or a backfill's would wait forever. Not for a job with a run in flight (its end releases it).
    const endedIds = new Set(ended.map((e) => e.id));
    const freed = rows.filter((r) => endedIds.has(r.id) && r.overlap_policy !== 'allow' && !overlap.busy.has(r.job_id));
    if (freed.length > 0) await releaseNextBuffered(tx, o.shard, [...new Set(freed.map((r) => r.job_id))], o.nowMs);
    // After the updates above, so the events show the runs ended and the jobs completed.
    await recordEvents(tx, events, o.nowMs, endpoints);
    // Short of its limit, with nothing given back or looked past: every waiting run due by the horizon was taken (or is
    // locked by another claim), so the bucket's earliest is the first past the horizon or a next run made here.
    const exact = claimedRows.length < o.limit && held.size === 0 && !o.flows && (o.skipDestinations ?? []).length === 0;
    const nextDueAtMs = exact ? earliestDue(claimedRows[0]!.after_due, nextRuns) : undefined;
    return { deliver, taken: claimedRows.length, nextDueAtMs };
  });
}

/**
 * The claim's rows, due order: in a bucket with flow controls, first the runs their flow controls grant (with the
 * rate's start as their due time), then, with what is left of the limit, the other due runs.
 */
async function claimRows(tx: Executor, o: ClaimOptions & { shard: number }): Promise<ClaimRow[]> {
  const granted = o.flows ? await grantFlowRuns(tx, o.shard, o.limit, o.nowMs, o.horizonMs ?? 0) : [];
  const flowRows = granted.length > 0 ? await query<ClaimRow>(tx, claimStatement(o, granted)) : [];
  const left = o.limit - flowRows.length;
  const rows = left > 0 ? await query<ClaimRow>(tx, claimStatement({ ...o, limit: left })) : [];
  return [...flowRows, ...rows].sort((a, b) => epochMs(a.due_at) - epochMs(b.due_at));
}

/** The earlier of `afterDue` (the first waiting run past the claim's horizon) and the next runs made, in epoch ms; null: none. */
function earliestDue(afterDue: Date | string | null, nextRuns: readonly { nextAttemptAt?: Date | null }[]): number | null {
  const due = nextRuns.map((n) => n.nextAttemptAt!.getTime());
  if (afterDue !== null) due.push(epochMs(afterDue));
  return due.length === 0 ? null : Math.min(...due);
}

/** A claimed run whose job advances, and the next run planned for it. */
type NextRun = { run: ClaimRow; next: PlannedRun };

/**
 * The rows of the advancing jobs' next scheduled runs, due as `dueTimes` places them (spread jobs where their
 * destination is least busy); the `nextRunAt` of a spread job's update in `jobUpdates` is set to its placed due time.
 */
async function nextScheduledRuns(
  tx: Executor,
  shard: number,
  planned: readonly NextRun[],
  jobUpdates: { id: string; next_ms: number | null }[],
  nowMs: number,
): Promise<(typeof runs.$inferInsert)[]> {
  if (planned.length === 0) return [];
  const due = await dueTimes(
    tx,
    shard,
    planned.map(({ run, next }) => ({
      tenantId: run.tenant_id,
      jobId: run.job_id,
      url: run.callback.url,
      jitterMs: run.jitter_ms,
      jitterMode: run.jitter_mode,
      planned: next,
    })),
  );
  const placed = new Map<string, number>();
  const rows = planned.map(({ run, next }, i) => {
    if (due[i] !== next.dueMs && next.firesAtMs === next.dueMs) placed.set(run.job_id, due[i]!);
    return {
      shard,
      id: newId(),
      tenantId: run.tenant_id,
      jobId: run.job_id,
      scheduledFor: new Date(next.occurrenceMs),
      trigger: RUN_TRIGGER.schedule,
      status: RUN_STATUS.scheduled,
      nextAttemptAt: new Date(due[i]!),
      createdAt: new Date(nowMs),
    };
  });
  for (const u of jobUpdates) u.next_ms = placed.get(u.id) ?? u.next_ms;
  return rows;
}

/**
 * For the scheduled first claims among `rows` of jobs whose runs may not overlap (`skip`, `buffer-one`): the jobs with
 * another run running (awaiting completion included), retrying, or buffered and released but not claimed yet (it
 * holds the job's turn) (`busy`), and the jobs with a buffered scheduled occurrence waiting (`buffered`; a backfill's
 * buffered runs are not one: the live occurrence waits before them, run-ends.ts). A retry of the job claimed in this
 * same batch (already `running` in this transaction) counts: only the candidates themselves are left out. No statement
 * when no row is such a candidate.
 */
async function overlapOf(tx: Executor, shard: number, rows: ClaimRow[]): Promise<{ busy: Set<string>; buffered: Set<string> }> {
  const candidates = rows.filter((r) => r.overlap_policy !== 'allow' && r.trigger === 'schedule' && r.attempts === 1 && !r.buffered);
  if (candidates.length === 0) return { busy: new Set(), buffered: new Set() };
  const jobIds = JSON.stringify([...new Set(candidates.map((r) => r.job_id))]);
  const claimed = JSON.stringify(candidates.map((r) => r.id));
  const found = await query<{ job_id: string; buffered: boolean }>(
    tx,
    sql`select distinct job_id, (status = 'scheduled' and next_attempt_at is null) as buffered from runs
        where shard = ${shard} and job_id in (select value::uuid from jsonb_array_elements_text(${jobIds}::jsonb))
          and (status in ('running', 'retrying')
               or (buffer_waiting and (next_attempt_at is not null or trigger = ${RUN_TRIGGER.schedule})))
          and trigger <> ${RUN_TRIGGER.result}
          and id not in (select value::uuid from jsonb_array_elements_text(${claimed}::jsonb))`,
  );
  return {
    busy: new Set(found.filter((f) => !f.buffered).map((f) => f.job_id)),
    buffered: new Set(found.filter((f) => f.buffered).map((f) => f.job_id)),
  };
}

/** Puts claimed runs back waiting, buffered (`buffer-one`): no due time until a run of their job ends (run-ends.ts). */
function bufferRuns(tx: Executor, shard: number, ids: readonly string[]) {
  return tx.execute(sql`update runs set status = 'scheduled', buffered = true, next_attempt_at = null, lease_owner = null,
      lease_expires_at = null, attempts = attempts - 1, started_at = null, flow_id = null
    where shard = ${shard} and id = any(${uuidArray(ids)}::uuid[])`);
}
