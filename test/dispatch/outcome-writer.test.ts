/**
 * The outcome writer (src/dispatch/engine/outcome-writer.ts) on its own, with an injected finish statement: gathering
 * for `gatherMs` and writing at once with 0, batching a backlog by `batchSize`, a failing bucket retried alone with
 * doubling, capped backoff while the other buckets' batches go on, giving up after `maxTries`, `onWritten` (and a
 * throwing one), `pending` and `flushAll()`.
 * Time is a ManualClock moved by hand: the gather and backoff sleeps end only when a test ticks the clock past them.
 * (Data exceptions and an aborted flushAll: outcome-writer-data.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { createOutcomeWriter, type OutcomeWriterDeps, type OutcomeWriterOptions } from '../../src/dispatch/engine/outcome-writer.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import type { Db } from '../../src/store/db.ts';
import { bucket2DownFinish, deferred, fakeFinish, ids, isSettled, noDb, outcomeOf, settle } from '../support/engine.ts';
import { recordingLogger } from '../support/logger.ts';
import { T0 } from '../support/store.ts';

const writerOptions = (o: Partial<OutcomeWriterOptions> = {}): OutcomeWriterOptions => ({
  owner: 'owner-1',
  gatherMs: 20,
  batchSize: 100,
  maxTries: Infinity,
  backoffMinMs: 100,
  backoffMaxMs: 400,
  ...o,
});

/** A writer on a ManualClock at T0 over `finish`, with a recording logger unless given. */
function writerOf(finish: OutcomeWriterDeps['finish'], o: Partial<OutcomeWriterOptions> = {}, deps: Partial<OutcomeWriterDeps> = {}) {
  const clock = new ManualClock(T0);
  const logger = recordingLogger();
  const writer = createOutcomeWriter({ db: noDb, clock, logger, finish, options: writerOptions(o), ...deps });
  return { clock, logger, writer };
}

describe('outcome writer', () => {
  it('writes outcomes pushed together in one call, after the gather sleep', async () => {
    const f = fakeFinish();
    const { clock, writer: w } = writerOf(f.finish);
    w.push(outcomeOf('a'));
    w.push(outcomeOf('b'));
    w.push(outcomeOf('c'));
    await settle();
    expect(clock.sleeps).toEqual([20]);
    expect(f.calls).toEqual([]);
    expect(w.pending).toBe(3);
    await clock.tick(19);
    expect(f.calls).toEqual([]);
    await clock.tick(1);
    expect(f.calls.map(ids)).toEqual([['a', 'b', 'c']]);
    await w.flushAll();
    expect(f.calls.map(ids)).toEqual([['a', 'b', 'c']]);
    expect(w.pending).toBe(0);
  });

  it('gathers only idleGatherMs when no attempt is under way, gatherMs while some are', async () => {
    const f = fakeFinish();
    let underWay = 0;
    const { clock, writer: w } = writerOf(f.finish, { idleGatherMs: 5 }, { inFlight: () => underWay });
    w.push(outcomeOf('a'));
    await settle();
    await clock.tick(5);
    expect(f.calls.map(ids)).toEqual([['a']]);
    underWay = 1;
    w.push(outcomeOf('b'));
    await settle();
    await clock.tick(5);
    expect(f.calls).toHaveLength(1);
    await clock.tick(15);
    expect(f.calls.map(ids)).toEqual([['a'], ['b']]);
    expect(clock.sleeps).toEqual([5, 20]);
  });

  it('passes its owner and the database to the finish statement', async () => {
    const seen: { db: Db; owner: string }[] = [];
    const db = {} as Db;
    const { clock, writer: w } = writerOf(
      async (d, owner, batch) => {
        seen.push({ db: d, owner });
        return new Set(ids(batch));
      },
      { owner: 'dispatcher-7' },
      { db },
    );
    w.push(outcomeOf('a'));
    const flushed = w.flushAll();
    await clock.tick(20);
    await flushed;
    expect(seen).toHaveLength(1);
    expect(seen[0]!.db).toBe(db);
    expect(seen[0]!.owner).toBe('dispatcher-7');
  });

  it('writes a backlog larger than the batch size in batches of that size', async () => {
    const f = fakeFinish();
    const { clock, writer: w } = writerOf(f.finish, { batchSize: 2 });
    for (const id of ['a', 'b', 'c', 'd', 'e']) w.push(outcomeOf(id));
    // Without flushAll: the full batches go out back to back after the gather sleep…
    await clock.tick(20);
    expect(f.calls.map(ids)).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    expect(w.pending).toBe(1);
    // …and the remainder gathers again, then is written on its own.
    expect(clock.sleeps).toEqual([20, 20]);
    await clock.tick(20);
    expect(f.calls.map(ids)).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    expect(w.pending).toBe(0);
    await w.flushAll();
    expect(f.calls).toHaveLength(3);
  });

  it('with gatherMs 0 writes at once, without a gather sleep', async () => {
    const first = deferred<Set<string>>();
    const f = fakeFinish((batch, call) => (call === 1 ? first.promise : new Set(ids(batch))));
    const { clock, writer: w } = writerOf(f.finish, { gatherMs: 0 });
    w.push(outcomeOf('a'));
    expect(f.calls.map(ids)).toEqual([['a']]);
    w.push(outcomeOf('b'));
    w.push(outcomeOf('c'));
    // Not yet written: b and c, and a, whose write is under way.
    expect(w.pending).toBe(3);
    first.resolve(new Set(['a']));
    await w.flushAll();
    expect(f.calls.map(ids)).toEqual([['a'], ['b', 'c']]);
    expect(clock.sleeps).toEqual([]);
  });

  it('retries a failing bucket with doubling backoff up to the max, losing and repeating nothing', async () => {
    let w: ReturnType<typeof createOutcomeWriter>;
    const f = fakeFinish((batch, call) => {
      // An outcome that comes in for the failing bucket joins its retries (it is not tried on its own meanwhile).
      if (call === 2) w.push(outcomeOf('d'));
      if (call <= 4) throw new Error('database down');
      return new Set(ids(batch));
    });
    const recorded: string[] = [];
    const fixture = writerOf(f.finish, { backoffMinMs: 100, backoffMaxMs: 400 }, { onWritten: (_, r) => recorded.push(...r) });
    const { clock, logger: log } = fixture;
    w = fixture.writer;
    for (const id of ['a', 'b', 'c']) w.push(outcomeOf(id));
    const flushed = w.flushAll();
    // Gather 20 ms, then tries after 100, 200, 400 and 400 ms: the last one, which goes through, at 1,120 ms.
    await clock.tick(1_119);
    expect(f.calls).toHaveLength(4);
    expect(await isSettled(flushed)).toBe(false);
    await clock.tick(1);
    await flushed;
    // The gather sleep of d's batch comes during the first retry.
    expect(clock.sleeps).toEqual([20, 100, 20, 200, 400, 400]);
    expect(f.calls.map(ids)).toEqual([
      ['a', 'b', 'c'],
      ['a', 'b', 'c'],
      ['a', 'b', 'c', 'd'],
      ['a', 'b', 'c', 'd'],
      ['a', 'b', 'c', 'd'],
    ]);
    expect(recorded.sort()).toEqual(['a', 'b', 'c', 'd']);
    const retries = log.entries.filter((e) => e.msg === 'recording outcomes failed; retrying');
    expect(retries.map((e) => [e.level, e.fields.backoffMs])).toEqual([
      ['error', 100],
      ['error', 200],
      ['error', 400],
      ['error', 400],
    ]);
    expect(w.pending).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('retries a failing bucket alone: the other buckets are recorded at once, not after it', async () => {
    // Bucket 2's transaction fails twice (its Citus worker is down), bucket 1's goes through.
    const { calls, finish } = bucket2DownFinish((call) => call <= 2);
    const written: { batch: string[]; recorded: string[] }[] = [];
    const {
      clock,
      logger: log,
      writer: w,
    } = writerOf(finish, {}, { onWritten: (batch, recorded) => written.push({ batch: ids(batch), recorded: [...recorded].sort() }) });
    for (const [id, shard] of [
      ['a', 1],
      ['b', 2],
      ['c', 1],
      ['d', 2],
    ] as const)
      w.push({ ...outcomeOf(id), shard });
    const flushed = w.flushAll();
    await clock.tick(20);
    // Bucket 1's outcomes are recorded by the first write; bucket 2's wait for their retry.
    expect(written).toEqual([{ batch: ['a', 'c'], recorded: ['a', 'c'] }]);
    expect(w.pending).toBe(2);
    await clock.tick(300);
    await flushed;
    expect(calls).toEqual([
      ['a', 'b', 'c', 'd'],
      ['b', 'd'],
      ['b', 'd'],
    ]);
    expect(written).toEqual([
      { batch: ['a', 'c'], recorded: ['a', 'c'] },
      { batch: ['b', 'd'], recorded: ['b', 'd'] },
    ]);
    expect(clock.sleeps).toEqual([20, 100, 200]);
    expect(log.entries.filter((e) => e.msg === 'recording outcomes failed; retrying').map((e) => e.fields.runs)).toEqual([2, 2]);
    expect(log.entries.filter((e) => e.level === 'warn')).toEqual([]);
    expect(w.pending).toBe(0);
  });

  it('writes later batches of the other buckets while a failing bucket waits for its retry', async () => {
    let bucket2Down = true;
    const { calls, finish } = bucket2DownFinish(() => bucket2Down);
    const recorded: string[] = [];
    const { clock, writer: w } = writerOf(finish, { gatherMs: 0 }, { onWritten: (_, r) => recorded.push(...r) });
    const push = (id: string, shard: number) => w.push({ ...outcomeOf(id), shard });
    push('a', 2);
    await settle();
    // Bucket 2's retry waits.
    expect(clock.sleeps).toEqual([100]);
    expect(clock.pendingTimers).toBe(1);
    // Bucket 1's outcomes go out while bucket 2 waits; bucket 2's new outcome waits with it, untried.
    push('b', 1);
    push('c', 2);
    push('d', 1);
    await settle();
    expect(calls).toEqual([['a'], ['b'], ['d']]);
    expect(recorded).toEqual(['b', 'd']);
    expect(w.pending).toBe(2);
    bucket2Down = false;
    await clock.tick(100);
    await w.flushAll();
    expect(calls).toEqual([['a'], ['b'], ['d'], ['a', 'c']]);
    expect(recorded.sort()).toEqual(['a', 'b', 'c', 'd']);
    // Once written, the bucket is back in the ordinary batches.
    push('e', 2);
    await w.flushAll();
    expect(calls.at(-1)).toEqual(['e']);
    expect(clock.sleeps).toEqual([100]);
    expect(w.pending).toBe(0);
  });

  it('with maxTries 3 gives an outcome that always fails up after 3 tries, logging its runs, and flushAll resolves', async () => {
    const f = fakeFinish(() => {
      throw new Error('database down');
    });
    const written: unknown[] = [];
    const { clock, logger: log, writer: w } = writerOf(f.finish, { gatherMs: 0, maxTries: 3 }, { onWritten: (b) => written.push(b) });
    w.push(outcomeOf('a'));
    await settle();
    await clock.tick(100);
    // 'a' is written at once, alone, then retried; 'b' comes during its retries and joins them.
    expect(f.calls.map(ids)).toEqual([['a'], ['a']]);
    w.push(outcomeOf('b'));
    const flushed = w.flushAll();
    await clock.tick(200 + 400 + 400);
    await flushed;
    // Each is tried 3 times.
    expect(f.calls.map(ids)).toEqual([['a'], ['a'], ['a', 'b'], ['b'], ['b']]);
    expect(clock.sleeps).toEqual([100, 200, 400, 400]);
    const gaveUp = log.entries.filter((e) => e.msg === 'recording outcomes failed; the reaper will take the runs back');
    expect(gaveUp.map((e) => [e.level, e.fields.runs])).toEqual([
      ['error', ['a']],
      ['error', ['b']],
    ]);
    expect(written).toEqual([]);
    expect(w.pending).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('hands onWritten each batch with the ids recorded, and warns of outcomes whose lease was lost', async () => {
    const f = fakeFinish((batch) => new Set(ids(batch).filter((id) => id !== 'b')));
    const written: { batch: string[]; recorded: string[] }[] = [];
    const {
      clock,
      logger: log,
      writer: w,
    } = writerOf(
      f.finish,
      { batchSize: 2 },
      { onWritten: (batch, recorded) => written.push({ batch: ids(batch), recorded: [...recorded].sort() }) },
    );
    for (const id of ['a', 'b', 'c']) w.push(outcomeOf(id));
    const flushed = w.flushAll();
    await clock.tick(40);
    await flushed;
    expect(written).toEqual([
      { batch: ['a', 'b'], recorded: ['a'] },
      { batch: ['c'], recorded: ['c'] },
    ]);
    const lost = log.entries.filter((e) => e.level === 'warn');
    expect(lost.map((e) => e.fields.lost)).toEqual([1]);
  });

  it('counts pushed outcomes in pending until they are written', async () => {
    const { clock, writer: w } = writerOf(fakeFinish().finish);
    expect(w.pending).toBe(0);
    w.push(outcomeOf('a'));
    expect(w.pending).toBe(1);
    w.push(outcomeOf('b'));
    expect(w.pending).toBe(2);
    const flushed = w.flushAll();
    expect(await isSettled(flushed)).toBe(false);
    await clock.tick(20);
    await flushed;
    expect(w.pending).toBe(0);
  });

  it('flushAll with nothing pending resolves at once, without writing', async () => {
    const f = fakeFinish();
    const { clock, writer: w } = writerOf(f.finish);
    expect(await isSettled(w.flushAll())).toBe(true);
    expect(f.calls).toEqual([]);
    expect(clock.sleeps).toEqual([]);
  });
});

describe('outcome writer regressions', () => {
  it('a throwing onWritten hook does not make the writer write the batch again', async () => {
    const f = fakeFinish();
    let threw = false;
    const { writer: w } = writerOf(
      f.finish,
      { gatherMs: 0 },
      {
        onWritten: () => {
          if (threw) return;
          threw = true;
          throw new Error('hook failed');
        },
      },
    );
    w.push(outcomeOf('a'));
    await w.flushAll();
    expect(f.calls.map(ids)).toEqual([['a']]);
    // And the writer goes on writing.
    w.push(outcomeOf('b'));
    await w.flushAll();
    expect(f.calls.map(ids)).toEqual([['a'], ['b']]);
  });

  it('pending counts a batch whose write is being retried', async () => {
    const { clock, writer: w } = writerOf(
      async (): Promise<Set<string>> => {
        throw new Error('database down');
      },
      { gatherMs: 0, maxTries: Infinity },
    );
    w.push(outcomeOf('a'));
    await settle();
    // The first retry sleeps.
    expect(clock.sleeps).toEqual([100]);
    expect(w.pending).toBe(1);
  });
});
