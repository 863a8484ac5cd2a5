/**
 * The in-memory job table behind `chime node` (docs/protocol.md "Messages"): one-time and cron jobs, running what is
 * due, and failed runs with exponential backoff. Pure: time comes from the `Clock` it is given, ids from `newId`;
 * due times come from the service's schedule code (`src/domain/schedule.ts`) and backoff from its retry code
 * (`src/domain/retry.ts`), so the node exercises the real domain logic.
 *
 * Job life cycle (the run states of `src/domain/states.ts`):
 *   scheduled ──run ok──▶ succeeded (one-time)  |  scheduled at its next occurrence (cron)
 *       │
 *       └──run failed──▶ retrying, due at now + backoff ──run ok──▶ as above
 *                            └──failed max_attempts times──▶ failed (one-time)  |  scheduled at its next occurrence (cron)
 * A successful run ends the run and resets the failure count; failures of a run count 1, 2, … until then.
 */
import type { Clock } from '../domain/clock.ts';
import { newId as newUuidV7 } from '../domain/ids.ts';
import { baseBackoffMs, DEFAULT_RETRY, MAX_ATTEMPTS_LIMIT, type RetryPolicy, resolveRetryPolicy, retryDelayMs } from '../domain/retry.ts';
import { nextOccurrence, normalizeSchedule, type Schedule, type ScheduleIssue, scheduleIssues } from '../domain/schedule.ts';
import { RUN_STATUS } from '../domain/states.ts';

/** Retry settings of a node job (docs/protocol.md `retry: { base_ms, max_attempts }`). */
export type RetrySettings = {
  /** Backoff unit in ms: after the n-th failure the backoff is baseMs × 2^n. Positive integer. */
  baseMs: number;
  /** Attempts of one run in all, the first included; retries stop once this many have failed. 1…100. */
  maxAttempts: number;
};

/** The protocol's defaults: base 1000 ms (first backoff 2000 ms), 5 attempts. */
export const DEFAULT_NODE_RETRY: Readonly<RetrySettings> = Object.freeze({ baseMs: 1000, maxAttempts: DEFAULT_RETRY.maxAttempts });

/** Largest backoff reported, in ms; the formula is exact below it (it caps only absurd base_ms × 2^n). */
const BACKOFF_CAP_MS = Number.MAX_SAFE_INTEGER;
/** The latest time a Date can hold, in epoch ms (ECMA-262 §21.4.1.1). */
const MAX_EPOCH_MS = 8.64e15;

/**
 * The domain retry policy giving `backoff = baseMs × 2^n` after the n-th failure: exponential, multiplier 2,
 * no jitter, initialDelayMs = 2 × baseMs (domain retry n is `initialDelayMs × 2^(n−1)`), and a cap that only
 * keeps the number a safe integer.
 */
export function nodeRetryPolicy(r: RetrySettings): RetryPolicy {
  return resolveRetryPolicy({
    strategy: 'exponential',
    maxAttempts: r.maxAttempts,
    initialDelayMs: 2 * r.baseMs,
    multiplier: 2,
    jitter: false,
    maxDelayMs: BACKOFF_CAP_MS,
  });
}

/** What to schedule: a task name, an opaque JSON payload, optional retry settings, and exactly one timing. */
export type JobSpec = {
  task: string;
  payload: unknown;
  retry?: Partial<RetrySettings>;
} & ({ delayMs: number; cron?: undefined } | { cron: string; delayMs?: undefined });

/** Where a job stands: `scheduled` or `retrying` are waiting for `dueAt`; `succeeded` and `failed` are final. */
export type NodeJobStatus =
  | typeof RUN_STATUS.scheduled
  | typeof RUN_STATUS.retrying
  | typeof RUN_STATUS.succeeded
  | typeof RUN_STATUS.failed;

/** A snapshot of one job. Times are UTC epoch ms. */
export type NodeJob = {
  readonly id: string;
  readonly task: string;
  readonly payload: unknown;
  /** `once` for a `delay_ms` job, `cron` for a recurring one. */
  readonly kind: 'once' | 'cron';
  /** The normalized domain schedule (`delay` with its `at`, or `cron` in UTC). */
  readonly schedule: Schedule;
  readonly status: NodeJobStatus;
  /** When the job runs next (its occurrence, or its retry); null once it is final. */
  readonly dueAt: number | null;
  /** Failed attempts of the current run. */
  readonly failures: number;
  readonly retry: RetrySettings;
  /** Runs so far, successful or not. */
  readonly runs: number;
  /** Order of scheduling, from 1; breaks ties between equal due times. */
  readonly seq: number;
};

/** The outcome of running a job: success, or a failure and whether (and after how long) it is retried. */
export type RunResult = { ok: true } | { ok: false; retryScheduled: boolean; backoffMs: number };

/** A job spec the domain refuses (e.g. an invalid cron expression); `issues` say which field and why. */
export class InvalidJobError extends Error {
  constructor(readonly issues: ScheduleIssue[]) {
    super(issues.map((i) => `${i.path}: ${i.message}`).join('; '));
    this.name = 'InvalidJobError';
  }
}

/** No job has this id. */
export class UnknownJobError extends Error {
  constructor(readonly jobId: string) {
    super(`no job with id ${JSON.stringify(jobId)}`);
    this.name = 'UnknownJobError';
  }
}

type JobRecord = { -readonly [K in keyof NodeJob]: NodeJob[K] } & { policy: RetryPolicy };

/**
 * The job table. Not thread-safe nor persistent: one node, one process, memory only.
 *
 * ```ts
 * const clock = new ManualClock(Date.parse('2026-11-22T10:00:00Z'));
 * const s = new Scheduler(clock);
 * const job = s.schedule({ task: 'send-email', payload: {}, delayMs: 60_000 }); // due 10:01
 * clock.set(Date.parse('2026-11-22T10:01:00Z'));
 * s.runDue(); // [job.id]
 * ```
 */
export class Scheduler {
  private readonly jobs = new Map<string, JobRecord>();
  private seq = 0;

  /**
   * @param clock the time source ("now" for scheduling and running)
   * @param newId id generator for jobs; default a UUID v7 (`src/store/ids.ts`)
   */
  constructor(
    private readonly clock: Clock,
    private readonly newId: () => string = newUuidV7,
  ) {}

  /** Number of jobs in the table, final ones included. */
  get size(): number {
    return this.jobs.size;
  }

  /**
   * Adds a job. A `delayMs` job is due once at now + delayMs; a `cron` job (5 fields or an `@hourly`-style macro,
   * UTC) is due at its first occurrence strictly after now.
   * @returns the new job
   * @throws InvalidJobError when the domain refuses the schedule (invalid cron, no occurrence, out-of-range time)
   * @throws RangeError for values the caller should have checked: delayMs not a non-negative integer, retry
   *   baseMs not a positive integer, maxAttempts outside 1…100
   */
  schedule(spec: JobSpec): NodeJob {
    const now = this.clock.now();
    const retry: RetrySettings = { ...DEFAULT_NODE_RETRY, ...definedOnly(spec.retry ?? {}) };
    if (!Number.isSafeInteger(retry.baseMs) || retry.baseMs < 1)
      throw new RangeError(`retry baseMs must be a positive integer, got ${retry.baseMs}`);
    if (!Number.isInteger(retry.maxAttempts) || retry.maxAttempts < 1 || retry.maxAttempts > MAX_ATTEMPTS_LIMIT) {
      throw new RangeError(`retry maxAttempts must be an integer in 1…${MAX_ATTEMPTS_LIMIT}, got ${retry.maxAttempts}`);
    }
    let raw: Schedule;
    if (spec.cron !== undefined) {
      // The node protocol's cron has 5 fields (PROTOCOL.md); the service's 6-field form (seconds) is not part of it.
      if (spec.cron.trim().split(/\s+/).length === 6) {
        throw new InvalidJobError([{ path: 'expression', message: 'expected 5 fields (minute hour day-of-month month day-of-week)' }]);
      }
      raw = { type: 'cron', expression: spec.cron, timezone: 'UTC' };
    } else {
      if (!Number.isSafeInteger(spec.delayMs) || spec.delayMs < 0)
        throw new RangeError(`delayMs must be a non-negative integer, got ${spec.delayMs}`);
      if (now + spec.delayMs > MAX_EPOCH_MS)
        throw new InvalidJobError([{ path: 'delayMs', message: 'the due time is past the latest representable time' }]);
      raw = { type: 'delay', delayMs: spec.delayMs };
    }
    const issues = scheduleIssues(raw, now);
    if (issues.length > 0) throw new InvalidJobError(issues);
    const schedule = normalizeSchedule(raw, now);
    // The first occurrence at or after now (a delay of 0 is due at once); scheduleIssues made sure there is one.
    const first = schedule.type === 'cron' ? nextOccurrence(schedule, now) : nextOccurrence(schedule, now - 1);
    if (first === null) throw new InvalidJobError([{ path: 'schedule', message: 'the schedule has no occurrence after now' }]);
    const job: JobRecord = {
      id: this.newId(),
      task: spec.task,
      payload: spec.payload,
      kind: schedule.type === 'cron' ? 'cron' : 'once',
      schedule,
      status: RUN_STATUS.scheduled,
      dueAt: first,
      failures: 0,
      retry,
      runs: 0,
      seq: ++this.seq,
      policy: nodeRetryPolicy(retry),
    };
    this.jobs.set(job.id, job);
    return snapshot(job);
  }

  /** A snapshot of the job with this id, or undefined. */
  get(jobId: string): NodeJob | undefined {
    const job = this.jobs.get(jobId);
    return job && snapshot(job);
  }

  /** Snapshots of all jobs, in scheduling order. */
  list(): NodeJob[] {
    return [...this.jobs.values()].map(snapshot);
  }

  /**
   * Runs every job due at or before now (scheduled occurrences and retries alike), in due order, ties in
   * scheduling order. Runs here succeed: a one-time job is then done, a cron job moves to its first occurrence
   * strictly after now (occurrences missed in between are not run one by one).
   * @returns the ids of the jobs run, in the order they ran
   */
  runDue(): string[] {
    const now = this.clock.now();
    const due: JobRecord[] = [];
    for (const job of this.jobs.values()) if (job.dueAt !== null && job.dueAt <= now) due.push(job);
    due.sort((a, b) => a.dueAt! - b.dueAt! || a.seq - b.seq);
    for (const job of due) this.succeed(job, now);
    return due.map((j) => j.id);
  }

  /**
   * Runs one job now, whatever its due time or status (a manual run).
   * Success: as in `runDue`. Failure (`fail: true`): the n-th failure of the run gets backoff baseMs × 2^n; while
   * fewer than maxAttempts attempts have failed a retry is due at now + backoff (status `retrying`); at
   * maxAttempts the run is given up (a one-time job `failed`, a cron job back to its next occurrence) and
   * further failures before a success keep reporting no retry.
   * @throws UnknownJobError when no job has this id
   */
  run(jobId: string, opts: { fail?: boolean } = {}): RunResult {
    const job = this.jobs.get(jobId);
    if (!job) throw new UnknownJobError(jobId);
    const now = this.clock.now();
    if (!opts.fail) {
      this.succeed(job, now);
      return { ok: true };
    }
    job.runs++;
    job.failures++;
    const backoffMs = baseBackoffMs(job.policy, job.failures);
    const retryScheduled = retryDelayMs(job.policy, job.failures) !== null;
    if (retryScheduled && now + backoffMs <= MAX_EPOCH_MS) {
      job.status = RUN_STATUS.retrying;
      job.dueAt = now + backoffMs;
      return { ok: false, retryScheduled: true, backoffMs };
    }
    this.moveOn(job, now, RUN_STATUS.failed);
    return { ok: false, retryScheduled: false, backoffMs };
  }

  private succeed(job: JobRecord, now: number): void {
    job.runs++;
    job.failures = 0;
    this.moveOn(job, now, RUN_STATUS.succeeded);
  }

  /** After a run has ended: a one-time job is final; a cron job waits for its next occurrence after now. */
  private moveOn(job: JobRecord, now: number, final: typeof RUN_STATUS.succeeded | typeof RUN_STATUS.failed): void {
    const next = job.kind === 'cron' ? nextOccurrence(job.schedule, now) : null;
    job.dueAt = next;
    job.status = next === null ? final : RUN_STATUS.scheduled;
  }
}

function snapshot(job: JobRecord): NodeJob {
  const { policy: _policy, ...view } = job;
  return { ...view, retry: { ...job.retry } };
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
