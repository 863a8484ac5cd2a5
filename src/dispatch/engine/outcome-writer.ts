/**
 * Writes attempt outcomes (`finishRuns`, one transaction per bucket): outcomes that finish within `gatherMs` of each
 * other share a statement, a backlog is written `batchSize` at a time, and a write that fails (the database is down)
 * is retried with backoff: forever by default (a long-running dispatcher keeps its leases' outcomes until the database
 * is back or the process dies), or up to `maxTries` (a Workers tick, which must end). Outcomes given up on are logged;
 * their runs come back through the reaper when their leases expire.
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
      const written = await writeWithRetries(batch);
      if (!written) return;
      const { recorded, seconds } = written;
      if (recorded.size < batch.length) {
        logger.warn({ lost: batch.length - recorded.size }, 'outcomes not recorded: their leases had expired and were reclaimed');
      }
      try {
        deps.observeWrite?.(seconds);
        deps.onWritten?.(batch, recorded);
      } catch (err) {
        logger.error({ err }, 'an outcome writer hook failed');
      }
    } finally {
      writing -= batch.length;
    }
  }

  /**
   * The ids recorded and the write's duration, or null when the batch was given up on. The hooks run outside: a
   * throwing hook is no failed write.
   */
  async function writeWithRetries(batch: AttemptOutcome[]): Promise<{ recorded: Set<string>; seconds: number } | null> {
    const delays = backoffDelays(o.backoffMinMs, o.backoffMaxMs);
    for (let tries = 1; ; tries++) {
      try {
        const started = clock.now();
        const recorded = await finish(deps.db, o.owner, batch);
        return { recorded, seconds: (clock.now() - started) / 1000 };
      } catch (err) {
        if (tries >= o.maxTries) {
          logger.error({ err, runs: batch.map((b) => b.runId) }, 'recording outcomes failed; the reaper will take the runs back');
          return null;
        }
        const backoffMs = delays.next().value;
        logger.error({ err, backoffMs }, 'recording outcomes failed; retrying');
        await deps.sleep(backoffMs);
      }
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
