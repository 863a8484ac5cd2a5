/**
 * Writes attempt outcomes (`finishRuns`, one transaction per bucket): outcomes that finish within `gatherMs` of each
 * other share a statement, a backlog is written `batchSize` at a time, and a bucket whose write fails (the database
 * is down; or on Citus the worker holding that bucket) is parked: its outcomes, and those that come for it meanwhile,
 * are retried with backoff by a loop of its own while the other buckets' batches go on being written; forever
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

/** An outcome waiting in a failing bucket, with the number of writes it has failed in. */
type Parked = { outcome: AttemptOutcome; tries: number };

/** Creates a writer with nothing pending. */
export function createOutcomeWriter(deps: OutcomeWriterDeps): OutcomeWriter {
  const { options: o, logger, clock } = deps;
  const finish = deps.finish ?? finishRuns;
  const pending: AttemptOutcome[] = [];
  /** Outcomes taken from `pending` and not yet written (a write under way). */
  let writing = 0;
  let flushing: Promise<void> | null = null;
  /** Per bucket whose write failed: its outcomes, retried by that bucket's own loop while later batches go on. */
  const parked = new Map<number, Parked[]>();
  const retries = new Set<Promise<void>>();

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
   * One try of `items`: what was written goes to `written`; returns the buckets that failed, with their outcomes and
   * the error (a `finish` that throws fails every bucket of `items`).
   */
  async function tryWrite(items: Parked[]): Promise<{ failed: Map<number, Parked[]>; error: unknown }> {
    const outcomes = items.map((p) => p.outcome);
    const failedOutcomes = new Set<AttemptOutcome>();
    let error: unknown = null;
    const started = clock.now();
    let recorded = new Set<string>();
    try {
      recorded = await finish(deps.db, o.owner, outcomes, (_shard, err, group) => {
        for (const x of group) failedOutcomes.add(x);
        error = err;
      });
    } catch (err) {
      for (const x of outcomes) failedOutcomes.add(x);
      error = err;
    }
    const done = outcomes.filter((x) => !failedOutcomes.has(x));
    if (done.length > 0) written(done, recorded, (clock.now() - started) / 1000);
    const failed = new Map<number, Parked[]>();
    for (const p of items) {
      if (!failedOutcomes.has(p.outcome)) continue;
      const tried = { outcome: p.outcome, tries: p.tries + 1 };
      failed.set(p.outcome.shard, [...(failed.get(p.outcome.shard) ?? []), tried]);
    }
    return { failed, error };
  }

  /** Outcomes that failed `maxTries` writes are given up on (logged); returns the others. */
  function giveUpSpent(items: Parked[], error: unknown): Parked[] {
    const spent = items.filter((p) => p.tries >= o.maxTries);
    if (spent.length > 0) logger.error({ err: error, runs: spent.map((p) => p.outcome.runId) }, 'recording outcomes failed; the reaper will take the runs back');
    return items.filter((p) => p.tries < o.maxTries);
  }

  /** Writes a batch: a bucket already failing takes the batch's outcomes for it; a bucket that fails now is parked. */
  async function write(batch: AttemptOutcome[]): Promise<void> {
    const now: Parked[] = [];
    for (const outcome of batch) {
      const waiting = parked.get(outcome.shard);
      if (waiting) waiting.push({ outcome, tries: 0 });
      else now.push({ outcome, tries: 0 });
    }
    if (now.length === 0) return;
    writing += now.length;
    try {
      const { failed, error } = await tryWrite(now);
      for (const [shard, items] of failed) park(shard, giveUpSpent(items, error), error);
    } finally {
      writing -= now.length;
    }
  }

  /** Parks a failing bucket's outcomes and starts its retry loop (with its own backoff). */
  function park(shard: number, items: Parked[], error: unknown): void {
    if (items.length === 0) return;
    parked.set(shard, items);
    const retry = retryParked(shard, error).finally(() => retries.delete(retry));
    retries.add(retry);
  }

  /**
   * Retries bucket `shard`'s parked outcomes (and those that join them meanwhile) with doubling backoff, until they are
   * written or given up on; once a write goes through, what joined during it goes back to the ordinary batches.
   */
  async function retryParked(shard: number, firstError: unknown): Promise<void> {
    const delays = backoffDelays(o.backoffMinMs, o.backoffMaxMs);
    let error = firstError;
    for (;;) {
      const items = parked.get(shard)!;
      const backoffMs = delays.next().value;
      logger.error({ err: error, backoffMs, shard, runs: items.length }, 'recording outcomes failed; retrying');
      await deps.sleep(backoffMs);
      const taken = items.splice(0);
      writing += taken.length;
      const result = await tryWrite(taken).finally(() => (writing -= taken.length));
      error = result.error;
      const still = giveUpSpent(result.failed.get(shard) ?? [], error);
      // Joined during the try, after those that failed in it: the order of a bucket's outcomes is kept.
      items.unshift(...still);
      if (result.failed.size > 0 && items.length > 0) continue;
      parked.delete(shard);
      if (items.length > 0) {
        pending.push(...items.map((p) => p.outcome));
        void flush();
      }
      return;
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
      let waiting = 0;
      for (const items of parked.values()) waiting += items.length;
      return pending.length + writing + waiting;
    },
    push(outcome) {
      pending.push(outcome);
      void flush();
    },
    async flushAll() {
      while (pending.length > 0 || flushing || retries.size > 0) {
        if (pending.length > 0 || flushing) await (flushing ?? flush());
        else await Promise.all([...retries]);
      }
    },
  };
}
