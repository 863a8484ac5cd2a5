/**
 * Writes attempt outcomes (`finishRuns`, one transaction per bucket): outcomes that finish within `gatherMs` of each
 * other share a statement (`idleGatherMs` when no attempt is under way), a backlog is written `batchSize` at a time, and a bucket whose write fails (the database
 * is down; or on Citus the worker holding that bucket) is parked: its outcomes, and those that come for it meanwhile,
 * are retried with backoff by a loop of its own while the other buckets' batches go on being written; forever
 * by default (a long-running dispatcher keeps its leases' outcomes until the database is back or the process dies),
 * or up to `maxTries` (a Workers tick, which must end). Outcomes given up on are logged; their runs come back through
 * the reaper when their leases expire.
 *
 * A write that fails on the outcomes' own data (a PostgreSQL data exception: sending it again fails again) is never
 * parked: the batch is halved until the outcome at fault is alone, which is written again without its texts (the
 * excerpt and the error), or given up on. The others are recorded as usual (issue #28: one receiver's answer must
 * not stall its bucket, other tenants included).
 */

import type { AttemptOutcome } from '../../domain/attempt-outcome.ts';
import type { Clock } from '../../domain/clock.ts';
import { type Db, isDataException } from '../../store/db.ts';
import { finishRuns } from '../../store/queue/finish-runs.ts';
import type { DispatchTracer } from '../tracing.ts';
import { backoffDelays } from './backoff.ts';
import type { EngineLogger } from './logger.ts';

export type OutcomeWriterOptions = {
  /** Lease owner whose leases the outcomes are written under. */
  owner: string;
  /** How long outcomes gather before a write while attempts are under way, in ms (0: write at once). */
  gatherMs: number;
  /** How long they gather when no attempt is under way (default `gatherMs`). */
  idleGatherMs?: number;
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
  options: OutcomeWriterOptions;
  /** After each write: the batch and the ids of the runs whose outcome was recorded (the others had lost their lease). */
  onWritten?: (batch: readonly AttemptOutcome[], recorded: ReadonlySet<string>) => void;
  /** Seconds each write took, for the metrics. */
  observeWrite?: (seconds: number) => void;
  /**
   * How many attempts are under way whose outcomes will come (the run queue's in flight). A gathering that starts with
   * some under way waits `gatherMs` for them; with none, only `idleGatherMs`: an outcome waits no longer than there is
   * something to share its write with (a crash loses fewer results, and each lost one is a run sent again), and steady
   * traffic still shares writes. Default: always `gatherMs`.
   */
  inFlight?: () => number;
  /** The finish statement (default: `finishRuns`); injected in unit tests. */
  finish?: typeof finishRuns;
  /**
   * Makes a `chime.finish` span per write (`chime.finish.outcomes`, `chime.finish.recorded`, `chime.finish.failed`;
   * ERROR when a bucket's write failed), linked to the attempt spans whose outcomes it writes; absent: none.
   */
  tracer?: DispatchTracer;
};

export interface OutcomeWriter {
  /** Outcomes not yet written. */
  readonly pending: number;
  /** Queues an outcome; a write follows within `gatherMs`. */
  push(outcome: AttemptOutcome): void;
  /**
   * Resolves when nothing is pending (every outcome written or given up on), or at once when `signal` aborts: then the
   * failing buckets' retries stop after their current try, and what is left unwritten is logged (the reaper takes
   * those runs back when their leases expire).
   */
  flushAll(signal?: AbortSignal): Promise<void>;
}

/** An outcome waiting in a failing bucket, with the number of writes it has failed in. */
type Parked = { outcome: AttemptOutcome; tries: number };
/** A bucket's failed try: its outcomes (each try counted) and the error. */
type Failure = { items: Parked[]; error: unknown };

/** The error text an outcome is recorded with when its own texts could not be stored. */
export const UNSTORABLE_TEXT_NOTE = 'the response excerpt and error text could not be stored and were dropped';

/** The first (in a finish of one bucket, the only) failure of a try, or null. */
function firstFailure(failed: Map<number, Failure>): Failure | null {
  return failed.values().next().value ?? null;
}

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
  /** Set when flushAll's signal aborts: the parked buckets' loops give up instead of trying again. */
  let abandoned = false;

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

  /** One try of `items`: what was written goes to `written`; returns each bucket that failed (a `finish` that throws fails them all). */
  async function tryWrite(items: Parked[]): Promise<Map<number, Failure>> {
    const outcomes = items.map((p) => p.outcome);
    const errors = new Map<AttemptOutcome, unknown>();
    const started = clock.now();
    const span = deps.tracer?.startSpan('chime.finish', {
      kind: 'internal',
      attributes: { 'chime.finish.outcomes': outcomes.length, 'chime.dispatcher': o.owner },
      links: outcomes.map((x) => ({ traceParent: x.attemptTraceParent })),
    });
    let recorded = new Set<string>();
    try {
      recorded = await finish(deps.db, o.owner, outcomes, (_shard, err, group) => {
        for (const x of group) errors.set(x, err);
      });
    } catch (err) {
      for (const x of outcomes) errors.set(x, err);
    }
    if (span) {
      span.setAttributes({ 'chime.finish.recorded': recorded.size, 'chime.finish.failed': errors.size });
      if (errors.size > 0) span.fail('recording outcomes failed', errors.values().next().value);
      span.end();
    }
    const done = outcomes.filter((x) => !errors.has(x));
    if (done.length > 0) written(done, recorded, (clock.now() - started) / 1000);
    const failed = new Map<number, Failure>();
    for (const p of items) {
      if (!errors.has(p.outcome)) continue;
      const f = failed.get(p.outcome.shard) ?? { items: [], error: errors.get(p.outcome) };
      f.items.push({ outcome: p.outcome, tries: p.tries + 1 });
      failed.set(p.outcome.shard, f);
    }
    return failed;
  }

  /**
   * After a bucket's try of `items` failed on the data itself (`isDataException`): writes halves of `items` until the
   * outcomes at fault are alone, so the others are recorded in ~2·log2(n) tries; one at fault is written again
   * without its texts (`UNSTORABLE_TEXT_NOTE`), or given up on if even that fails on its data.
   * @returns what failed for another reason meanwhile (the database went away), to be parked; null when nothing did
   */
  async function isolate(items: Parked[], error: unknown): Promise<Failure | null> {
    if (items.length === 1) {
      const item = items[0]!;
      const stripped = { ...item.outcome, responseBodyExcerpt: null, error: UNSTORABLE_TEXT_NOTE };
      const f = firstFailure(await tryWrite([{ outcome: stripped, tries: item.tries }]));
      if (!f)
        logger.warn(
          { err: error, runId: stripped.runId },
          'an outcome was recorded without its response excerpt and error text, which could not be stored',
        );
      else if (isDataException(f.error))
        logger.error(
          { err: f.error, runId: stripped.runId },
          'an outcome could not be stored; given up on (the reaper will take its run back)',
        );
      else return f;
      return null;
    }
    const mid = Math.ceil(items.length / 2);
    const left: Failure = { items: [], error };
    for (const half of [items.slice(0, mid), items.slice(mid)]) {
      const f = firstFailure(await tryWrite(half));
      const still = f && isDataException(f.error) ? await isolate(half, f.error) : f;
      if (still) {
        left.items.push(...still.items);
        left.error = still.error;
      }
    }
    return left.items.length > 0 ? left : null;
  }

  /** What to do with a bucket's failed try: a data exception is isolated, anything else parks the bucket. */
  async function settle(shard: number, f: Failure): Promise<void> {
    const rest = isDataException(f.error) ? await isolate(f.items, f.error) : f;
    if (rest) park(shard, giveUpSpent(rest.items, rest.error), rest.error);
  }

  /** Outcomes that failed `maxTries` writes are given up on (logged); returns the others. */
  function giveUpSpent(items: Parked[], error: unknown): Parked[] {
    const spent = items.filter((p) => p.tries >= o.maxTries);
    if (spent.length > 0)
      logger.error(
        { err: error, runs: spent.map((p) => p.outcome.runId) },
        'recording outcomes failed; the reaper will take the runs back',
      );
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
      for (const [shard, f] of await tryWrite(now)) await settle(shard, f);
    } finally {
      writing -= now.length;
    }
  }

  /** Parks a failing bucket's outcomes and starts its retry loop (with its own backoff). */
  function park(shard: number, items: Parked[], error: unknown): void {
    if (items.length === 0) return;
    if (abandoned) {
      giveUpParked(shard, items);
      return;
    }
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
      const items = parked.get(shard);
      if (!items) return; // given up on by an aborted flushAll
      const backoffMs = delays.next().value;
      logger.error({ err: error, backoffMs, shard, runs: items.length }, 'recording outcomes failed; retrying');
      await clock.sleep(backoffMs);
      if (abandoned) return giveUpParked(shard, items);
      const taken = items.splice(0);
      writing += taken.length;
      let f: Failure | null;
      try {
        f = firstFailure(await tryWrite(taken));
        if (f && isDataException(f.error)) f = await isolate(f.items, f.error);
      } finally {
        writing -= taken.length;
      }
      const still = f ? giveUpSpent(f.items, f.error) : [];
      if (f) error = f.error;
      if (abandoned) return giveUpParked(shard, still);
      // Joined during the try, after those that failed in it: the order of a bucket's outcomes is kept.
      items.unshift(...still);
      if (still.length > 0) continue;
      parked.delete(shard);
      if (items.length > 0) {
        pending.push(...items.map((p) => p.outcome));
        void flush();
      }
      return;
    }
  }

  /** Gives up on bucket `shard`'s parked outcomes (`items`: those parked) after flushAll was aborted, logging their runs. */
  function giveUpParked(shard: number, items: Parked[] = parked.get(shard) ?? []): void {
    if (parked.get(shard) === items) parked.delete(shard);
    const runs = items.splice(0).map((p) => p.outcome.runId);
    if (runs.length > 0) logger.error({ shard, runs }, 'stopping: outcomes not recorded; the reaper will take the runs back');
  }

  /**
   * One flush: after `gatherMs`, batch after batch while a backlog lasts (full batches); a trickle is left to gather
   * again, or steady traffic would be written one outcome per statement as it arrives.
   */
  function flush(): Promise<void> {
    flushing ??= (async () => {
      const gatherMs = (deps.inFlight?.() ?? 1) > 0 ? o.gatherMs : Math.min(o.gatherMs, o.idleGatherMs ?? o.gatherMs);
      if (gatherMs > 0) await clock.sleep(gatherMs);
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
    async flushAll(signal) {
      const aborted = new Promise<void>((resolve) => {
        if (signal?.aborted) resolve();
        signal?.addEventListener('abort', () => resolve(), { once: true });
      });
      let stop = false;
      void aborted.then(() => (stop = abandoned = true));
      while (!stop && (pending.length > 0 || flushing || retries.size > 0)) {
        if (pending.length > 0 || flushing) await Promise.race([flushing ?? flush(), aborted]);
        else await Promise.race([Promise.all([...retries]), aborted]);
      }
      if (stop) {
        for (const shard of [...parked.keys()]) giveUpParked(shard);
        if (pending.length + writing > 0)
          logger.error(
            { runs: pending.length + writing },
            'stopping: outcomes still being written were left; the reaper will take those not recorded back',
          );
      }
    },
  };
}
