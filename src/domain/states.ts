/**
 * The state names of jobs and runs, each as one frozen constant.
 *
 * Run state machine (a run is one occurrence of a job; an attempt is one HTTP request of it); docs/design.md "Run
 * states and transitions" is the full table, with who makes each change:
 *
 *   scheduled ──claim──▶ running ──success──────────────────────────▶ succeeded
 *   retrying ──claim──▶    │  ├──failure, retries left──────────────▶ retrying
 *       │  │               │  ├──failure, none left; 410; no-retry; ambiguous ▶ failed (a dead letter)
 *       │  │               │  ├──failure, retry past the window─────▶ expired
 *       │  │               │  ├──lease expired (reaper), or released ▶ retrying (at-least-once) | failed (at-most-once)
 *       │  │               │  └──never sent, given back (unclaim)───▶ scheduled | retrying (as it was claimed)
 *       │  ├──at claim: not startable inside its relevancy window──▶ expired
 *       │  └──job canceled (or its notification endpoint deleted)──▶ canceled
 *   scheduled ──at claim: overlap policy / catch-up policy─────────▶ skipped
 *   scheduled ──job paused, schedule changed───────────────────────▶ canceled ──resume / re-plan of the same occurrence──▶ scheduled
 *   scheduled ──Chime-Control: skip-next (finish of another run)──▶ skipped;  complete ──▶ canceled
 *
 * An async job's run (src/domain/completion.ts) has a sub-state of `running`, awaiting the receiver's report
 * (`awaiting_completion`: no lease, no dispatcher holds it; only the report or the completion reaper moves it):
 *   running (leased) ──success response (finish)──▶ running, awaiting ──report succeeded────────────▶ succeeded
 *   running (leased, before the finish) ──report or heartbeat──┘       ├──report failed / completion_timeout ▶ retrying | failed | expired (policy)
 *                                                                      └──heartbeat: deadline postponed (stays)
 *
 * `scheduled` and `retrying` are the waiting states: the only ones the dispatcher claims.
 */
export const RUN_STATUS = Object.freeze({
  scheduled: 'scheduled',
  running: 'running',
  retrying: 'retrying',
  succeeded: 'succeeded',
  failed: 'failed',
  expired: 'expired',
  skipped: 'skipped',
  canceled: 'canceled',
} as const);
export type RunStatus = (typeof RUN_STATUS)[keyof typeof RUN_STATUS];
export const RUN_STATUSES = Object.values(RUN_STATUS) as [RunStatus, ...RunStatus[]];

/** Final run states: nothing happens to such a run any more. */
export const FINAL_RUN_STATUSES: readonly RunStatus[] = Object.freeze([
  RUN_STATUS.succeeded,
  RUN_STATUS.failed,
  RUN_STATUS.expired,
  RUN_STATUS.skipped,
  RUN_STATUS.canceled,
]);

export const JOB_STATUS = Object.freeze({
  active: 'active',
  paused: 'paused',
  completed: 'completed',
  canceled: 'canceled',
} as const);
export type JobStatus = (typeof JOB_STATUS)[keyof typeof JOB_STATUS];
export const JOB_STATUSES = Object.values(JOB_STATUS) as [JobStatus, ...JobStatus[]];

/**
 * How a run came to be; `notification` runs are a notification endpoint's deliveries (never shown as a job's runs);
 * `result` runs deliver another run's result to its job's `onSuccess`/`onFailure` (listed apart, under the job's
 * result deliveries, and never counted as the job's runs).
 */
export const RUN_TRIGGER = Object.freeze({
  schedule: 'schedule',
  manual: 'manual',
  replay: 'replay',
  notification: 'notification',
  result: 'result',
  backfill: 'backfill',
  chain: 'chain',
} as const);
export type RunTrigger = (typeof RUN_TRIGGER)[keyof typeof RUN_TRIGGER];
/** Triggers of runs that are deliveries, not the job's own runs: never in its run list, failures in a row, overlap, usage or dead letters. */
export const DELIVERY_TRIGGERS: readonly RunTrigger[] = Object.freeze([RUN_TRIGGER.notification, RUN_TRIGGER.result]);
/** Every RunTrigger, as zod's `z.enum` takes them. */
export const RUN_TRIGGERS = Object.values(RUN_TRIGGER) as [RunTrigger, ...RunTrigger[]];

export const DELIVERY_MODES = ['at-least-once', 'at-most-once'] as const;
export type DeliveryMode = (typeof DELIVERY_MODES)[number];
export const OVERLAP_POLICIES = ['allow', 'skip', 'buffer-one'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];
/**
 * How a job's `jitterMs` offset is drawn (API.md "Richer schedules"): `stable` per job, `random` per occurrence,
 * `spread` where the fewest runs of the tenant to the same destination are due.
 */
export const JITTER_MODES = ['stable', 'random', 'spread'] as const;
export type JitterMode = (typeof JITTER_MODES)[number];
export const CATCH_UP_POLICIES = ['one', 'all', 'none'] as const;
export type CatchUpPolicy = (typeof CATCH_UP_POLICIES)[number];
