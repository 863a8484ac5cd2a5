/**
 * Writes attempt outcomes (`finishRuns`, one transaction per bucket): outcomes that finish within `gatherMs` of each
 * other share a statement, a backlog is written `batchSize` at a time, and a write that fails is retried with backoff
 * (the database is down; or on Citus the worker holding some of its buckets, and then those buckets alone): forever
 * by default (a long-running dispatcher keeps its leases' outcomes until the database is back or the process dies),
 * or up to `maxTries` (a Workers tick, which must end). Outcomes given up on are logged; their runs come back through
 * the reaper when their leases expire.
 */
import type { Clock } from '../../domain/clock.ts';
import type { Db } from '../../store/db.ts';
import { finishRuns, type AttemptOutcome } from '../../store/queue/finish-runs.ts';
import type { EngineLogger } from './logger.ts';
import { backoffDelays, type Sleep } from './sleep.ts';

export type OutcomeWriterOptions = {
  /** Lease owner whose leases the outcomes are written under. */
  owner: string;
  /** How long outcomes gather before a write, in ms (0: write at once). */
  gatherMs: number;
  /** Most outcomes per write. */
  batchSize: number;
  /** Tries of one batch before giving up on it (Infinity: never give up). */
  maxTries: number;
  /** First and longest wait between tries, in ms (doubling). */
  backoffMinMs: number;
  backoffMaxMs: number;
};

export type OutcomeWriterDeps = {
  db: Db;
  clock: Clock;
  logger: EngineLogger;
  sleep: Sleep;
  options: OutcomeWriterOptions;
  /** After each write: the batch and the ids of the runs whose outcome was recorded (the others had lost their lease). */
  onWritten?: (batch: readonly AttemptOutcome[], recorded: ReadonlySet<string>) => void;
  /** Seconds each write took, for the metrics. */
  observeWrite?: (seconds: number) => void;
  /** The finish statement (default: `finishRuns`); injected in unit tests. */
  finish?: typeof finishRuns;
};

export interface OutcomeWriter {
  /** Outcomes not yet written. */
  readonly pending: number;
  /** Queues an outcome; a write follows within `gatherMs`. */
  push(outcome: AttemptOutcome): void;
  /** Resolves when nothing is pending (every outcome written or given up on). */
  flushAll(): Promise<void>;
}

/** Creates a writer with nothing pending. */
export function createOutcomeWriter(deps: OutcomeWriterDeps): OutcomeWriter {
  const { options: o, logger, clock } = deps;
  const finish = deps.finish ?? finishRuns;
  const pending: AttemptOutcome[] = [];
  /** Outcomes taken from `pending` and not yet written (a write or its retries under way). */
  let writing = 0;
  let flushing: Promise<void> | null = null;

  async function write(batch: AttemptOutcome[]): Promise<void> {
    writing += batch.length;
    try {
      await writeWithRetries(batch);
    } finally {
      writing -= batch.length;
    }
  }

  /** After a write of `part`: the lost leases logged, the hooks called (a throwing hook is no failed write). */
  function written(part: AttemptOutcome[], recorded: ReadonlySet<string>, seconds: number): void {
    const kept = part.filter((o) => recorded.has(o.runId)).length;
    if (kept < part.length) logger.warn({ lost: part.length - kept }, 'outcomes not recorded: their leases had expired and were reclaimed');
    try {
      deps.observeWrite?.(seconds);
      deps.onWritten?.(part, recorded);
    } catch (err) {
      logger.error({ err }, 'an outcome writer hook failed');
    }
  }

  /**
   * Writes `batch`, retrying what failed until it is written or `maxTries` is reached (then it is given up on). A
   * bucket that fails (on Citus, its worker is down) is retried alone: the batch's other buckets are recorded at once.
   * Later batches still wait for this one (docs/scaling.md, "Known limit").
   */
  async function writeWithRetries(batch: AttemptOutcome[]): Promise<void> {
    const delays = backoffDelays(o.backoffMinMs, o.backoffMaxMs);
    let todo = batch;
    for (let tries = 1; ; tries++) {
      const started = clock.now();
      let failed: AttemptOutcome[] = [];
      let error: unknown = null;
      let recorded: Set<string> = new Set();
      try {
        recorded = await finish(deps.db, o.owner, todo, (_shard, err, group) => {
          failed.push(...group);
          error = err;
        });
      } catch (err) {
        failed = todo;
        error = err;
      }
      const failing = new Set(failed);
      const done = failing.size === 0 ? todo : todo.filter((x) => !failing.has(x));
      if (done.length > 0) written(done, recorded, (clock.now() - started) / 1000);
      if (failed.length === 0) return;
      if (tries >= o.maxTries) {
        logger.error({ err: error, runs: failed.map((b) => b.runId) }, 'recording outcomes failed; the reaper will take the runs back');
        return;
      }
      const backoffMs = delays.next().value;
      logger.error({ err: error, backoffMs, runs: failed.length }, 'recording outcomes failed; retrying');
      await deps.sleep(backoffMs);
      todo = failed;
    }
  }

  /**
   * One flush: after `gatherMs`, batch after batch while a backlog lasts (full batches); a trickle is left to gather
   * again, or steady traffic would be written one outcome per statement as it arrives.
   */
  function flush(): Promise<void> {
    flushing ??= (async () => {
      if (o.gatherMs > 0) await deps.sleep(o.gatherMs);
      do await write(pending.splice(0, o.batchSize));
      while (pending.length >= o.batchSize || (o.gatherMs === 0 && pending.length > 0));
      flushing = null;
      if (pending.length > 0) void flush();
    })();
    return flushing;
  }

  return {
    get pending() {
      return pending.length + writing;
    },
    push(outcome) {
      pending.push(outcome);
      void flush();
    },
    async flushAll() {
      while (pending.length > 0 || flushing) await (flushing ?? flush());
    },
  };
}
