/**
 * The dispatch engine's modules (src/dispatch/engine/) on their own, with injected time and injected store functions:
 * - the outcome writer: gathering, batching, retries with capped backoff, giving up after `maxTries`, `onWritten`;
 * - the run queue: per-destination slots, what it holds (`held`, `free`, `unsent()`, `saturatedDestinations()`),
 *   released runs, runs whose lease ran out before their slot, `slotFreed()` and `drained()`;
 * - the claim pacer: `claimOnce` (its arguments, the due buckets read and kept 50 ms) and the loop (claim again after
 *   a full claim, read the due buckets after a partial one, back off after a failing claim, wait for a slot when the
 *   queue is full and for a quarter batch of slots for a few ms, look past saturated destinations, stop while it
 *   sleeps);
 * - the lease keeper's round: against a database that fails (no database needed), and on every database target
 *   (renewal of unsent runs, release of lost leases, reaping).
 * Time is a ManualClock; the only real timers are the pacer's Wakeup sleeps and error backoff (the module's own), and
 * tests wait for them by polling with a deadline.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.ts';
import { Rotation, type BucketDue } from '../../src/domain/fair-share.ts';
import { claimWaitMs, CONTENDED_SLEEP_MS, createClaimPacer, type ClaimPacer } from '../../src/dispatch/engine/claim-pacer.ts';
import { createLeaseKeeper } from '../../src/dispatch/engine/lease-keeper.ts';
import type { EngineLogger } from '../../src/dispatch/engine/logger.ts';
import { createOutcomeWriter, type OutcomeWriterOptions } from '../../src/dispatch/engine/outcome-writer.ts';
import { createRunQueue, type RunQueueOptions } from '../../src/dispatch/engine/run-queue.ts';
import { Wakeup } from '../../src/dispatch/wakeup.ts';
import { resolveRetryPolicy } from '../../src/domain/retry.ts';
import type { Db } from '../../src/store/db.ts';
import { createJob } from '../../src/store/jobs.ts';
import { claimRuns, type ClaimedRun } from '../../src/store/queue/claim-runs.ts';
import type { AttemptOutcome } from '../../src/store/queue/finish-runs.ts';
import { renewLeases } from '../../src/store/queue/renew-leases.ts';
import { reapExpiredLeases } from '../../src/store/queue/reap-leases.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { recordingLogger } from '../support/logger.ts';
import { runById, T0, testJobSpec, testOutcome, useTestStore, type TestStore } from '../support/store.ts';

// ---------------------------------------------------------------------------------------------------------------------
// Fixtures

/** A database handle for modules whose store functions are injected: any use of it fails the test. */
const noDb = new Proxy({}, {
  get() {
    throw new Error('the database was used');
  },
}) as Db;

/** A database that is down: every use throws. */
const downDb = new Proxy({}, {
  get() {
    throw new Error('database down');
  },
}) as Db;

/** A promise and its resolve. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * Lets every promise callback already queued run, and those they queue in turn (one turn of the event loop): a check
 * that something did not happen is meaningful after it, as nothing in these modules waits on a timer unless said so.
 */
const settle = () => new Promise<void>((r) => setImmediate(r));

/** Whether `p` has settled by now. */
async function isSettled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await settle();
  return done;
}

/** A claimed run of `url`, due at `dueAtMs`, its lease a callback timeout (1 s) and a margin (1 s) past that. */
function claimed(runId: string, url = 'https://a.example/hook', dueAtMs = T0, o: Partial<ClaimedRun> = {}): ClaimedRun {
  return {
    shard: 0,
    runId,
    jobId: `job-${runId}`,
    tenantId: 'tenant',
    scheduledForMs: dueAtMs,
    trigger: 'schedule',
    attempt: 1,
    leaseExpiresAtMs: dueAtMs + 2_000,
    dueAtMs,
    callback: { url, method: 'POST', headers: {}, successStatusCodes: ['2xx'], timeoutMs: 1_000 },
    authTokenEnc: null,
    payload: null,
    eventId: null,
    retry: resolveRetryPolicy({}),
    relevancyWindowMs: null,
    deliveryMode: 'at-least-once',
    ...o,
  };
}

/** The outcome of a successful first attempt of `runId`. */
function outcomeOf(runId: string): AttemptOutcome {
  return testOutcome({ shard: 0, runId, jobId: `job-${runId}`, attempt: 1 });
}

const ids = (xs: readonly { runId: string }[]) => xs.map((x) => x.runId);

// ---------------------------------------------------------------------------------------------------------------------
// Outcome writer

/** A Sleep that records what it was asked for; resolves at once when `auto`, else when released. */
function fakeSleep(auto: boolean) {
  const asked: number[] = [];
  const waiting: (() => void)[] = [];
  return {
    asked,
    sleep: (ms: number) => {
      asked.push(ms);
      if (auto) return Promise.resolve();
      return new Promise<void>((r) => waiting.push(r));
    },
    /** Ends every sleep in progress. */
    releaseAll() {
      for (const r of waiting.splice(0)) r();
    },
    get sleeping() {
      return waiting.length;
    },
  };
}

/** A finish statement that records each batch; `answer` decides each call's result (default: all recorded). */
function fakeFinish(answer: (batch: AttemptOutcome[], call: number) => Promise<Set<string>> | Set<string> = (b) => new Set(ids(b))) {
  const calls: AttemptOutcome[][] = [];
  return {
    calls,
    finish: async (_db: Db, _owner: string, batch: AttemptOutcome[]) => {
      calls.push([...batch]);
      return answer(batch, calls.length);
    },
  };
}

/**
 * A finish statement whose bucket 2 fails (its Citus worker is down) in the calls where `down(call)` holds (1-based),
 * handing those outcomes to onBucketError; the other buckets' outcomes are recorded. `calls` are the batches' ids.
 */
function bucket2DownFinish(down: (call: number) => boolean) {
  const calls: string[][] = [];
  const finish = async (_db: Db, _owner: string, batch: AttemptOutcome[], onBucketError?: (shard: number, err: unknown, group: AttemptOutcome[]) => void) => {
    calls.push(ids(batch));
    const failing = down(calls.length) ? batch.filter((b) => b.shard === 2) : [];
    if (failing.length > 0) onBucketError!(2, new Error('worker down'), failing);
    return new Set(ids(batch.filter((b) => !failing.includes(b))));
  };
  return { calls, finish };
}

const writerOptions = (o: Partial<OutcomeWriterOptions> = {}): OutcomeWriterOptions => ({
  owner: 'owner-1',
  gatherMs: 20,
  batchSize: 100,
  maxTries: Infinity,
  backoffMinMs: 100,
  backoffMaxMs: 400,
  ...o,
});

describe('outcome writer', () => {
  it('writes outcomes pushed together in one call, after the gather sleep', async () => {
    const s = fakeSleep(false);
    const f = fakeFinish();
    const w = createOutcomeWriter({ db: noDb, clock: new ManualClock(T0), logger: recordingLogger(), sleep: s.sleep, finish: f.finish, options: writerOptions() });
    w.push(outcomeOf('a'));
    w.push(outcomeOf('b'));
    w.push(outcomeOf('c'));
    await settle();
    expect(s.asked).toEqual([20]);
    expect(f.calls).toEqual([]);
    expect(w.pending).toBe(3);
    s.releaseAll();
    await w.flushAll();
    expect(f.calls.map(ids)).toEqual([['a', 'b', 'c']]);
    expect(w.pending).toBe(0);
  });

  it('passes its owner and the database to the finish statement', async () => {
    const seen: { db: Db; owner: string }[] = [];
    const db = {} as Db;
    const w = createOutcomeWriter({
      db,
      clock: new ManualClock(T0),
      logger: recordingLogger(),
      sleep: fakeSleep(true).sleep,
      finish: async (d, owner, batch) => {
        seen.push({ db: d, owner });
        return new Set(ids(batch));
      },
      options: writerOptions({ owner: 'dispatcher-7' }),
    });
    w.push(outcomeOf('a'));
    await w.flushAll();
    expect(seen).toHaveLength(1);
    expect(seen[0]!.db).toBe(db);
    expect(seen[0]!.owner).toBe('dispatcher-7');
  });

  it('writes a backlog larger than the batch size in batches of that size', async () => {
    const s = fakeSleep(true);
    const f = fakeFinish();
    const w = createOutcomeWriter({ db: noDb, clock: new ManualClock(T0), logger: recordingLogger(), sleep: s.sleep, finish: f.finish, options: writerOptions({ batchSize: 2 }) });
    for (const id of ['a', 'b', 'c', 'd', 'e']) w.push(outcomeOf(id));
    // Without flushAll: the remainder is written on its own.
    await eventually(() => f.calls.length === 3, { what: 'three writes' });
    expect(f.calls.map(ids)).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    // The full batches go out back to back; the remainder gathers again.
    expect(s.asked).toEqual([20, 20]);
    expect(w.pending).toBe(0);
    await w.flushAll();
    expect(f.calls).toHaveLength(3);
  });

  it('with gatherMs 0 writes at once, without a gather sleep', async () => {
    const s = fakeSleep(true);
    const first = deferred<Set<string>>();
    const f = fakeFinish((batch, call) => (call === 1 ? first.promise : new Set(ids(batch))));
    const w = createOutcomeWriter({ db: noDb, clock: new ManualClock(T0), logger: recordingLogger(), sleep: s.sleep, finish: f.finish, options: writerOptions({ gatherMs: 0 }) });
    w.push(outcomeOf('a'));
    expect(f.calls.map(ids)).toEqual([['a']]);
    w.push(outcomeOf('b'));
    w.push(outcomeOf('c'));
    // Not yet written: b and c, and a, whose write is under way.
    expect(w.pending).toBe(3);
    first.resolve(new Set(['a']));
    await w.flushAll();
    expect(f.calls.map(ids)).toEqual([['a'], ['b', 'c']]);
    expect(s.asked).toEqual([]);
  });

  it('retries a failing bucket with doubling backoff up to the max, losing and repeating nothing', async () => {
    const s = fakeSleep(true);
    const log = recordingLogger();
    let w: ReturnType<typeof createOutcomeWriter>;
    const f = fakeFinish((batch, call) => {
      // An outcome that comes in for the failing bucket joins its retries (it is not tried on its own meanwhile).
      if (call === 2) w.push(outcomeOf('d'));
      if (call <= 4) throw new Error('database down');
      return new Set(ids(batch));
    });
    const recorded: string[] = [];
    w = createOutcomeWriter({
      db: noDb,
      clock: new ManualClock(T0),
      logger: log,
      sleep: s.sleep,
      finish: f.finish,
      options: writerOptions({ backoffMinMs: 100, backoffMaxMs: 400 }),
      onWritten: (_, r) => recorded.push(...r),
    });
    for (const id of ['a', 'b', 'c']) w.push(outcomeOf(id));
    await w.flushAll();
    // The gather sleep of d's batch comes during the first retry.
    expect(s.asked).toEqual([20, 100, 20, 200, 400, 400]);
    expect(f.calls.map(ids)).toEqual([['a', 'b', 'c'], ['a', 'b', 'c'], ['a', 'b', 'c', 'd'], ['a', 'b', 'c', 'd'], ['a', 'b', 'c', 'd']]);
    expect(recorded.sort()).toEqual(['a', 'b', 'c', 'd']);
    const retries = log.entries.filter((e) => e.msg === 'recording outcomes failed; retrying');
    expect(retries.map((e) => [e.level, e.fields.backoffMs])).toEqual([
      ['error', 100],
      ['error', 200],
      ['error', 400],
      ['error', 400],
    ]);
    expect(w.pending).toBe(0);
  });

  it('retries a failing bucket alone: the other buckets are recorded at once, not after it', async () => {
    const s = fakeSleep(true);
    const log = recordingLogger();
    // Bucket 2's transaction fails twice (its Citus worker is down), bucket 1's goes through.
    const { calls, finish } = bucket2DownFinish((call) => call <= 2);
    const written: { batch: string[]; recorded: string[] }[] = [];
    const w = createOutcomeWriter({
      db: noDb,
      clock: new ManualClock(T0),
      logger: log,
      sleep: s.sleep,
      finish,
      options: writerOptions(),
      onWritten: (batch, recorded) => written.push({ batch: ids(batch), recorded: [...recorded].sort() }),
    });
    for (const [id, shard] of [['a', 1], ['b', 2], ['c', 1], ['d', 2]] as const) w.push({ ...outcomeOf(id), shard });
    await w.flushAll();
    expect(calls).toEqual([['a', 'b', 'c', 'd'], ['b', 'd'], ['b', 'd']]);
    expect(written).toEqual([
      { batch: ['a', 'c'], recorded: ['a', 'c'] },
      { batch: ['b', 'd'], recorded: ['b', 'd'] },
    ]);
    expect(s.asked).toEqual([20, 100, 200]);
    expect(log.entries.filter((e) => e.msg === 'recording outcomes failed; retrying').map((e) => e.fields.runs)).toEqual([2, 2]);
    expect(log.entries.filter((e) => e.level === 'warn')).toEqual([]);
    expect(w.pending).toBe(0);
  });

  it('writes later batches of the other buckets while a failing bucket waits for its retry', async () => {
    const s = fakeSleep(false);
    const log = recordingLogger();
    let bucket2Down = true;
    const { calls, finish } = bucket2DownFinish(() => bucket2Down);
    const recorded: string[] = [];
    const w = createOutcomeWriter({
      db: noDb,
      clock: new ManualClock(T0),
      logger: log,
      sleep: s.sleep,
      finish,
      options: writerOptions({ gatherMs: 0 }),
      onWritten: (_, r) => recorded.push(...r),
    });
    const push = (id: string, shard: number) => w.push({ ...outcomeOf(id), shard });
    push('a', 2);
    await eventually(() => s.sleeping === 1, { what: "bucket 2's retry to wait" });
    // Bucket 1's outcomes go out while bucket 2 waits; bucket 2's new outcome waits with it, untried.
    push('b', 1);
    push('c', 2);
    push('d', 1);
    await eventually(() => recorded.includes('d'), { what: "bucket 1's later outcomes" });
    expect(calls).toEqual([['a'], ['b'], ['d']]);
    expect(recorded).toEqual(['b', 'd']);
    expect(w.pending).toBe(2);
    bucket2Down = false;
    s.releaseAll();
    await w.flushAll();
    expect(calls).toEqual([['a'], ['b'], ['d'], ['a', 'c']]);
    expect(recorded.sort()).toEqual(['a', 'b', 'c', 'd']);
    // Once written, the bucket is back in the ordinary batches.
    push('e', 2);
    await w.flushAll();
    expect(calls.at(-1)).toEqual(['e']);
    expect(s.asked).toEqual([100]);
    expect(w.pending).toBe(0);
  });

  it('with maxTries 3 gives an outcome that always fails up after 3 tries, logging its runs, and flushAll resolves', async () => {
    const s = fakeSleep(true);
    const log = recordingLogger();
    const f = fakeFinish(() => {
      throw new Error('database down');
    });
    const written: unknown[] = [];
    const w = createOutcomeWriter({
      db: noDb,
      clock: new ManualClock(T0),
      logger: log,
      sleep: s.sleep,
      finish: f.finish,
      options: writerOptions({ gatherMs: 0, maxTries: 3 }),
      onWritten: (b) => written.push(b),
    });
    w.push(outcomeOf('a'));
    w.push(outcomeOf('b'));
    await w.flushAll();
    // 'a' is written at once, alone; 'b' joins the retries of its bucket, and each is tried 3 times.
    expect(f.calls.map(ids)).toEqual([['a'], ['a'], ['a', 'b'], ['b'], ['b']]);
    expect(s.asked).toEqual([100, 200, 400, 400]);
    const gaveUp = log.entries.filter((e) => e.msg === 'recording outcomes failed; the reaper will take the runs back');
    expect(gaveUp.map((e) => [e.level, e.fields.runs])).toEqual([
      ['error', ['a']],
      ['error', ['b']],
    ]);
    expect(written).toEqual([]);
    expect(w.pending).toBe(0);
  });

  it('hands onWritten each batch with the ids recorded, and warns of outcomes whose lease was lost', async () => {
    const log = recordingLogger();
    const f = fakeFinish((batch) => new Set(ids(batch).filter((id) => id !== 'b')));
    const written: { batch: string[]; recorded: string[] }[] = [];
    const w = createOutcomeWriter({
      db: noDb,
      clock: new ManualClock(T0),
      logger: log,
      sleep: fakeSleep(true).sleep,
      finish: f.finish,
      options: writerOptions({ batchSize: 2 }),
      onWritten: (batch, recorded) => written.push({ batch: ids(batch), recorded: [...recorded].sort() }),
    });
    for (const id of ['a', 'b', 'c']) w.push(outcomeOf(id));
    await w.flushAll();
    expect(written).toEqual([
      { batch: ['a', 'b'], recorded: ['a'] },
      { batch: ['c'], recorded: ['c'] },
    ]);
    const lost = log.entries.filter((e) => e.level === 'warn');
    expect(lost.map((e) => e.fields.lost)).toEqual([1]);
  });

  it('counts pushed outcomes in pending until they are written', async () => {
    const s = fakeSleep(false);
    const w = createOutcomeWriter({ db: noDb, clock: new ManualClock(T0), logger: recordingLogger(), sleep: s.sleep, finish: fakeFinish().finish, options: writerOptions() });
    expect(w.pending).toBe(0);
    w.push(outcomeOf('a'));
    expect(w.pending).toBe(1);
    w.push(outcomeOf('b'));
    expect(w.pending).toBe(2);
    const flushed = w.flushAll();
    expect(await isSettled(flushed)).toBe(false);
    s.releaseAll();
    await flushed;
    expect(w.pending).toBe(0);
  });

  it('flushAll with nothing pending resolves at once, without writing', async () => {
    const s = fakeSleep(false);
    const f = fakeFinish();
    const w = createOutcomeWriter({ db: noDb, clock: new ManualClock(T0), logger: recordingLogger(), sleep: s.sleep, finish: f.finish, options: writerOptions() });
    await w.flushAll();
    expect(f.calls).toEqual([]);
    expect(s.asked).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Run queue

/** `untilDue` on a ManualClock: resolves at once for a time already come, else when `advanceTo` reaches it. */
function dueGate(clock: ManualClock) {
  const waiting: { dueAtMs: number; resolve: () => void }[] = [];
  return {
    untilDue: (dueAtMs: number) => {
      if (dueAtMs <= clock.now()) return Promise.resolve();
      return new Promise<void>((resolve) => waiting.push({ dueAtMs, resolve }));
    },
    advanceTo(ms: number) {
      clock.set(ms);
      for (const w of waiting.filter((x) => x.dueAtMs <= ms)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve();
      }
    },
  };
}

/** A run queue on a ManualClock whose attempts end when the test says. */
function queueFixture(options: Partial<RunQueueOptions> = {}) {
  const clock = new ManualClock(T0);
  const gate = dueGate(clock);
  const attempts = new Map<string, { resolve: (o: AttemptOutcome | null) => void }>();
  const attempted: string[] = [];
  const outcomes: string[] = [];
  const late: string[] = [];
  const queue = createRunQueue({
    clock,
    options: { concurrency: 10, perDestination: 2, saturation: 3, ...options },
    untilDue: gate.untilDue,
    attempt: (run) => {
      attempted.push(run.runId);
      const d = deferred<AttemptOutcome | null>();
      attempts.set(run.runId, d);
      return d.promise;
    },
    onOutcome: (o, run) => {
      expect(o.runId).toBe(run.runId);
      outcomes.push(o.runId);
    },
    onLateOutcome: (o) => late.push(o.runId),
  });
  return {
    clock,
    gate,
    queue,
    attempted,
    outcomes,
    late,
    /** Ends the attempt of `runId` with a success (or `null`: abandoned). */
    finish(runId: string, outcome: AttemptOutcome | null = outcomeOf(runId)) {
      const a = attempts.get(runId);
      if (!a) throw new Error(`${runId} was not attempted`);
      a.resolve(outcome);
    },
  };
}

describe('run queue', () => {
  it('keeps at most perDestination attempts in flight per destination while other destinations proceed', async () => {
    const f = queueFixture({ perDestination: 2 });
    f.queue.add(claimed('a1', 'https://a.example/one'));
    f.queue.add(claimed('a2', 'https://A.example/two?x=1'));
    f.queue.add(claimed('a3', 'https://a.example/three'));
    f.queue.add(claimed('port', 'https://a.example:8443/one'));
    f.queue.add(claimed('scheme', 'http://a.example/one'));
    f.queue.add(claimed('b1', 'https://b.example/one'));
    await settle();
    expect(f.attempted.sort()).toEqual(['a1', 'a2', 'b1', 'port', 'scheme']);
    expect(f.queue.inFlightByDestination.get('https://a.example')).toBe(2);
    expect(f.queue.inFlightByDestination.get('https://a.example:8443')).toBe(1);
    f.finish('b1');
    f.finish('port');
    await settle();
    expect(f.attempted).not.toContain('a3');
    f.finish('a2');
    await eventually(() => f.attempted.includes('a3'), { what: 'a3 to get the slot a2 freed' });
    expect(f.queue.inFlightByDestination.get('https://a.example')).toBe(2);
    expect(f.outcomes.sort()).toEqual(['a2', 'b1', 'port']);
  });

  it('counts waiting, queued and in-flight runs in held and free', async () => {
    const f = queueFixture({ concurrency: 5, perDestination: 1 });
    expect([f.queue.held, f.queue.free]).toEqual([0, 5]);
    f.queue.add(claimed('later', 'https://b.example/', T0 + 1_000));
    f.queue.add(claimed('a1'));
    f.queue.add(claimed('a2'));
    f.queue.add(claimed('a3'));
    await settle();
    expect(f.attempted).toEqual(['a1']);
    expect([f.queue.held, f.queue.free]).toEqual([4, 1]);
    f.finish('a1');
    await eventually(() => f.attempted.includes('a2'));
    expect([f.queue.held, f.queue.free]).toEqual([3, 2]);
    f.gate.advanceTo(T0 + 1_000);
    await eventually(() => f.attempted.includes('later'));
    expect([f.queue.held, f.queue.free]).toEqual([3, 2]);
    f.finish('a2');
    f.finish('later');
    await eventually(() => f.attempted.includes('a3'));
    f.finish('a3');
    await f.queue.drained();
    expect([f.queue.held, f.queue.free]).toEqual([0, 5]);
  });

  it('lists in unsent() the runs waiting for their due time or a slot, not those in flight', async () => {
    const f = queueFixture({ perDestination: 1 });
    f.queue.add(claimed('later', 'https://b.example/', T0 + 1_000));
    f.queue.add(claimed('a1'));
    f.queue.add(claimed('a2'));
    await settle();
    expect(ids(f.queue.unsent()).sort()).toEqual(['a2', 'later']);
    expect(ids(f.queue.inFlight())).toEqual(['a1']);
    f.finish('a1');
    await eventually(() => f.attempted.includes('a2'));
    expect(ids(f.queue.unsent())).toEqual(['later']);
    expect(ids(f.queue.inFlight())).toEqual(['a2']);
    // The objects themselves, so a renewal can move their lease.
    const later = f.queue.unsent()[0]!;
    later.leaseExpiresAtMs += 1;
    expect(f.queue.unsent()[0]!.leaseExpiresAtMs).toBe(T0 + 1_000 + 2_000 + 1);
  });

  it('names a destination saturated once `saturation` runs wait for its slots', async () => {
    const f = queueFixture({ perDestination: 1, saturation: 2 });
    f.queue.add(claimed('a1'));
    f.queue.add(claimed('a2'));
    f.queue.add(claimed('b1', 'https://b.example/'));
    f.queue.add(claimed('b2', 'https://b.example/'));
    await settle();
    expect(f.queue.saturatedDestinations()).toEqual([]);
    f.queue.add(claimed('a3'));
    await settle();
    expect(f.queue.saturatedDestinations()).toEqual(['https://a.example']);
    // Runs waiting for their due time do not count.
    f.queue.add(claimed('b3', 'https://b.example/', T0 + 1_000));
    await settle();
    expect(f.queue.saturatedDestinations()).toEqual(['https://a.example']);
    f.finish('a1');
    await eventually(() => f.attempted.includes('a2'));
    expect(f.queue.saturatedDestinations()).toEqual([]);
  });

  it('never attempts a run released before its slot, and its entry ends', async () => {
    const f = queueFixture({ perDestination: 1 });
    f.queue.add(claimed('a1'));
    f.queue.add(claimed('a2'));
    f.queue.add(claimed('a3'));
    f.queue.add(claimed('later', 'https://b.example/', T0 + 1_000));
    await settle();
    f.queue.release(['a2', 'later']);
    expect(f.queue.isReleased('a2')).toBe(true);
    expect(f.queue.isReleased('a1')).toBe(false);
    expect(ids(f.queue.unsent())).toEqual(['a3']);
    f.finish('a1');
    await eventually(() => f.attempted.includes('a3'), { what: 'a3 to get the slot' });
    f.gate.advanceTo(T0 + 1_000);
    f.finish('a3');
    await f.queue.drained();
    expect(f.attempted).toEqual(['a1', 'a3']);
    expect(f.outcomes).toEqual(['a1', 'a3']);
    expect(f.late).toEqual([]);
    expect(f.queue.held).toBe(0);
  });

  it('hands the outcome of a run released while in flight to onLateOutcome, not onOutcome', async () => {
    const f = queueFixture();
    f.queue.add(claimed('a1'));
    f.queue.add(claimed('a2'));
    await settle();
    f.queue.release(['a1']);
    f.finish('a1');
    f.finish('a2');
    await f.queue.drained();
    expect(f.late).toEqual(['a1']);
    expect(f.outcomes).toEqual(['a2']);
  });

  it('does not attempt a run whose lease has run out (lease ≤ now) by the time it gets its slot', async () => {
    const f = queueFixture({ perDestination: 1 });
    f.queue.add(claimed('a1'));
    f.queue.add(claimed('expired', undefined, T0, { leaseExpiresAtMs: T0 + 2_000 }));
    f.queue.add(claimed('renewed', undefined, T0, { leaseExpiresAtMs: T0 + 2_000 }));
    await settle();
    // While they wait, a renewal extends one lease (on the object), and time passes to the other's expiry exactly.
    f.queue.unsent().find((r) => r.runId === 'renewed')!.leaseExpiresAtMs = T0 + 10_000;
    f.clock.set(T0 + 2_000);
    f.finish('a1');
    await eventually(() => f.attempted.includes('renewed'), { what: 'the renewed run to be attempted' });
    f.finish('renewed');
    await f.queue.drained();
    expect(f.attempted).toEqual(['a1', 'renewed']);
    expect(f.outcomes).toEqual(['a1', 'renewed']);
  });

  it('waits for a run’s due time before attempting it', async () => {
    const f = queueFixture();
    f.queue.add(claimed('later', undefined, T0 + 500));
    await settle();
    expect(f.attempted).toEqual([]);
    f.gate.advanceTo(T0 + 499);
    await settle();
    expect(f.attempted).toEqual([]);
    f.gate.advanceTo(T0 + 500);
    await eventually(() => f.attempted.includes('later'));
  });

  it('by default waits for the due time by the clock, not by timers alone', async () => {
    const clock = new ManualClock(T0);
    const attempted: string[] = [];
    const queue = createRunQueue({
      clock,
      options: { concurrency: 10, perDestination: 2, saturation: 3 },
      attempt: async (run) => {
        attempted.push(run.runId);
        return outcomeOf(run.runId);
      },
      onOutcome: () => {},
    });
    queue.add(claimed('soon', undefined, T0 + 30));
    queue.add(claimed('now', undefined, T0));
    await eventually(() => attempted.includes('now'));
    expect(attempted).toEqual(['now']);
    clock.set(T0 + 30);
    await eventually(() => attempted.includes('soon'), { what: 'the run to fire once the clock reaches its due time' });
    await queue.drained();
  });

  it('ends a run abandoned by its attempt (null) without an outcome', async () => {
    const f = queueFixture();
    f.queue.add(claimed('a1'));
    await settle();
    f.finish('a1', null);
    await f.queue.drained();
    expect(f.outcomes).toEqual([]);
    expect(f.late).toEqual([]);
    expect(f.queue.held).toBe(0);
  });

  it('resolves slotFreed() when a run finishes, or when woken', async () => {
    const f = queueFixture();
    f.queue.add(claimed('a1'));
    await settle();
    const freed = f.queue.slotFreed();
    expect(await isSettled(freed)).toBe(false);
    f.finish('a1');
    await freed;
    expect(f.queue.held).toBe(0);
    const woken = f.queue.slotFreed();
    expect(await isSettled(woken)).toBe(false);
    f.queue.wake();
    await woken;
  });

  it('resolves drained() when every held run is done', async () => {
    const f = queueFixture({ perDestination: 1 });
    await f.queue.drained();
    f.queue.add(claimed('a1'));
    f.queue.add(claimed('a2'));
    f.queue.add(claimed('later', 'https://b.example/', T0 + 1_000));
    const drained = f.queue.drained();
    await eventually(() => f.attempted.includes('a1'));
    f.finish('a1');
    await eventually(() => f.attempted.includes('a2'));
    f.finish('a2');
    expect(await isSettled(drained)).toBe(false);
    // A run added while drained() waits is waited for too.
    f.queue.add(claimed('added', 'https://c.example/'));
    f.gate.advanceTo(T0 + 1_000);
    await eventually(() => f.attempted.includes('later') && f.attempted.includes('added'));
    f.finish('later');
    expect(await isSettled(drained)).toBe(false);
    f.finish('added');
    await drained;
    expect(f.queue.held).toBe(0);
    expect(f.outcomes.sort()).toEqual(['a1', 'a2', 'added', 'later']);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Claim pacer

/** The part of a run queue the pacer uses, with `free` set by the test. */
function fakeQueue(free: number, saturated: string[] = []) {
  let waiter: (() => void) | null = null;
  const q = {
    free,
    added: [] as ClaimedRun[],
    saturated,
    slotWaits: 0,
    add(run: ClaimedRun) {
      q.added.push(run);
      q.free--;
    },
    slotFreed() {
      q.slotWaits++;
      return new Promise<void>((r) => (waiter = r));
    },
    wake() {
      const w = waiter;
      waiter = null;
      w?.();
    },
    saturatedDestinations: () => q.saturated,
    /** A held run finished. */
    freeSlot() {
      q.free++;
      q.wake();
    },
  };
  return q;
}

type ClaimArgs = Parameters<typeof claimRuns>[1];

/**
 * Fake store reads for the pacer: each claim and due-bucket read is logged in `events`, in order; `claims` answers
 * each claim (by call number, from 1), `due` each read.
 */
function fakeStore(claims: (args: ClaimArgs, call: number) => ClaimedRun[] | Promise<ClaimedRun[]>, due: (call: number) => BucketDue[] = () => []) {
  const events: string[] = [];
  const claimCalls: ClaimArgs[] = [];
  let dueCalls = 0;
  return {
    events,
    claimCalls,
    store: {
      claimRuns: async (db: Db, args: ClaimArgs) => {
        expect(db).toBe(noDb);
        claimCalls.push(args);
        events.push(`claim ${args.limit}`);
        return claims(args, claimCalls.length);
      },
      dueBuckets: async (db: Db) => {
        expect(db).toBe(noDb);
        events.push('due');
        return due(++dueCalls);
      },
    },
  };
}

const pacerOptions = { owner: 'owner-1', batchSize: 2, leaseMarginMs: 5_000, lookaheadMs: 250, pollMs: 60_000 };

/** Runs r<from>… r<from+n-1>. */
const batch = (from: number, n: number) => Array.from({ length: n }, (_, i) => claimed(`r${from + i}`));

/** Stops `pacer` and fails unless it is stopped within `ms` (real time). */
async function stopWithin(pacer: ClaimPacer, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), ms)));
  const how = await Promise.race([pacer.stop().then(() => 'stopped' as const), late]);
  clearTimeout(timer);
  expect(how).toBe('stopped');
}

describe('claim pacer', () => {
  it('claimOnce passes owner, limit, now, horizon, margin and one Rotation, and queues every run claimed', async () => {
    const clock = new ManualClock(T0);
    const queue = fakeQueue(10);
    const s = fakeStore((args, call) => (call === 1 ? batch(1, 3) : batch(4, 1)));
    const observed: number[] = [];
    const pacer = createClaimPacer({ db: noDb, clock, logger: recordingLogger(), wakeup: new Wakeup(), queue, options: pacerOptions, store: s.store, observeClaim: (sec) => observed.push(sec) });
    expect(ids(await pacer.claimOnce(5, 250))).toEqual(['r1', 'r2', 'r3']);
    clock.advance(1_000);
    expect(ids(await pacer.claimOnce(3, 0))).toEqual(['r4']);
    expect(ids(queue.added)).toEqual(['r1', 'r2', 'r3', 'r4']);
    expect(s.claimCalls).toHaveLength(2);
    expect(s.claimCalls[0]).toMatchObject({ owner: 'owner-1', limit: 5, nowMs: T0, horizonMs: 250, leaseMarginMs: 5_000, skipDestinations: [] });
    expect(s.claimCalls[1]).toMatchObject({ owner: 'owner-1', limit: 3, nowMs: T0 + 1_000, horizonMs: 0, leaseMarginMs: 5_000 });
    expect(s.claimCalls[0]!.rotation).toBeInstanceOf(Rotation);
    expect(s.claimCalls[1]!.rotation).toBe(s.claimCalls[0]!.rotation);
    expect(observed).toEqual([0, 0]);
  });

  it('claimOnce reads the due buckets for its claim, and reuses them for claims within 50 ms by the clock', async () => {
    const clock = new ManualClock(T0);
    const read = [[{ shard: 1, dueAtMs: T0 }], [{ shard: 2, dueAtMs: T0 + 40 }]];
    const s = fakeStore(() => [], (call) => read[call - 1] ?? []);
    const pacer = createClaimPacer({ db: noDb, clock, logger: recordingLogger(), wakeup: new Wakeup(), queue: fakeQueue(10), options: pacerOptions, store: s.store });
    await pacer.claimOnce(5, 0);
    clock.advance(50);
    await pacer.claimOnce(5, 0);
    clock.advance(1);
    await pacer.claimOnce(5, 0);
    expect(s.events).toEqual(['due', 'claim 5', 'claim 5', 'due', 'claim 5']);
    expect(s.claimCalls.map((c) => c.buckets)).toEqual([read[0], read[0], read[1]]);
  });

  it('claimOnce throws the store’s error and queues nothing', async () => {
    const queue = fakeQueue(10);
    const s = fakeStore(() => {
      throw new Error('database down');
    });
    const pacer = createClaimPacer({ db: noDb, clock: new ManualClock(T0), logger: recordingLogger(), wakeup: new Wakeup(), queue, options: pacerOptions, store: s.store });
    await expect(pacer.claimOnce(5, 0)).rejects.toThrow('database down');
    expect(queue.added).toEqual([]);
  });

  it('claims again at once after a full claim, and reads the due buckets to sleep only after a partial one', async () => {
    const clock = new ManualClock(T0);
    const queue = fakeQueue(5);
    const s = fakeStore((args, call) => (call <= 2 ? batch(call * 10, args.limit) : []));
    const pacer = createClaimPacer({ db: noDb, clock, logger: recordingLogger(), wakeup: new Wakeup(), queue, options: pacerOptions, store: s.store });
    pacer.start();
    try {
      await eventually(() => s.events.length >= 5, { what: 'three claims and two reads' });
      await settle();
      // The first claim reads the buckets; limits are the batch size (2) twice, then the one free slot left.
      expect(s.events).toEqual(['due', 'claim 2', 'claim 2', 'claim 1', 'due']);
      expect(queue.added).toHaveLength(4);
    } finally {
      await stopWithin(pacer, 2_000);
    }
    expect(s.events).toEqual(['due', 'claim 2', 'claim 2', 'claim 1', 'due']);
  });

  it('after a partial claim reads the due buckets and claims at once what is due, with the buckets it read', async () => {
    const clock = new ManualClock(T0);
    const queue = fakeQueue(10);
    const read = [[{ shard: 1, dueAtMs: T0 - 5 }], [{ shard: 3, dueAtMs: T0 - 1 }]];
    const s = fakeStore((_, call) => (call === 1 ? batch(1, 1) : []), (call) => read[call - 1] ?? []);
    const pacer = createClaimPacer({ db: noDb, clock, logger: recordingLogger(), wakeup: new Wakeup(), queue, options: pacerOptions, store: s.store });
    pacer.start();
    try {
      await eventually(() => s.events.length >= 5, { what: 'two claims and three reads' });
      await settle();
      expect(s.events).toEqual(['due', 'claim 2', 'due', 'claim 2', 'due']);
      expect(s.claimCalls.map((c) => c.buckets)).toEqual([read[0], read[1]]);
    } finally {
      await stopWithin(pacer, 2_000);
    }
  });

  it('claims with the due buckets read before a sleep that ran its time, however old, and reads them again after a wake', async () => {
    const clock = new ManualClock(T0);
    // The first claim is partial; the read after it finds a run entering the lookahead in 50 ms (a 50 ms sleep).
    const read = [[{ shard: 1, dueAtMs: T0 - 5 }], [{ shard: 3, dueAtMs: T0 + 300 }]];
    const s = fakeStore((_, call) => (call === 1 ? batch(1, 1) : []), (call) => read[call - 1] ?? []);
    const pacer = createClaimPacer({ db: noDb, clock, logger: recordingLogger(), wakeup: new Wakeup(), queue: fakeQueue(10), options: pacerOptions, store: s.store });
    pacer.start();
    try {
      await eventually(() => s.events.length >= 3, { what: 'the read before the sleep' });
      // Older than the 50 ms a read serves otherwise: still the one the claim after the sleep uses.
      clock.advance(60);
      await eventually(() => s.events.length >= 5, { what: 'the claim after the sleep and the read after it' });
      expect(s.events).toEqual(['due', 'claim 2', 'due', 'claim 2', 'due']);
      expect(s.claimCalls.map((c) => c.buckets)).toEqual([read[0], read[1]]);
    } finally {
      await stopWithin(pacer, 2_000);
    }

    // Woken during the same sleep (a run announced): the buckets are read again before the claim.
    const clock2 = new ManualClock(T0);
    const read2 = [...read, [{ shard: 4, dueAtMs: T0 + 10 }]];
    const s2 = fakeStore((_, call) => (call === 1 ? batch(1, 1) : []), (call) => read2[call - 1] ?? []);
    const wakeup = new Wakeup();
    const pacer2 = createClaimPacer({ db: noDb, clock: clock2, logger: recordingLogger(), wakeup, queue: fakeQueue(10), options: pacerOptions, store: s2.store });
    pacer2.start();
    try {
      await eventually(() => s2.events.length >= 3, { what: 'the read before the sleep' });
      await settle();
      wakeup.wake();
      await eventually(() => s2.events.length >= 5, { what: 'the read after the wake and the claim' });
      expect(s2.events.slice(0, 5)).toEqual(['due', 'claim 2', 'due', 'due', 'claim 2']);
      expect(s2.claimCalls.map((c) => c.buckets)).toEqual([read2[0], read2[2]]);
    } finally {
      await stopWithin(pacer2, 2_000);
    }
  });

  it('logs a failing claim and retries it after a backoff', async () => {
    const log = recordingLogger();
    const queue = fakeQueue(10);
    const failure = new Error('database down');
    const s = fakeStore((_, call) => {
      if (call === 1) throw failure;
      return call === 2 ? batch(1, 1) : [];
    });
    const pacer = createClaimPacer({ db: noDb, clock: new ManualClock(T0), logger: log, wakeup: new Wakeup(), queue, options: pacerOptions, store: s.store });
    pacer.start();
    try {
      await eventually(() => s.claimCalls.length >= 2, { timeoutMs: 5_000, what: 'the claim to be retried' });
      await eventually(() => s.events.length >= 5);
      // The failed claim's buckets are read again for the retry.
      expect(s.events).toEqual(['due', 'claim 2', 'due', 'claim 2', 'due']);
      expect(ids(queue.added)).toEqual(['r1']);
      const failed = log.entries.filter((e) => e.msg === 'claim failed; retrying');
      expect(failed).toHaveLength(1);
      expect(failed[0]).toMatchObject({ level: 'error', fields: { err: failure, backoffMs: 100 } });
    } finally {
      await stopWithin(pacer, 2_000);
    }
  });

  it('stop() resolves promptly while the loop sleeps, and nothing is claimed after it', async () => {
    const queue = fakeQueue(10);
    const s = fakeStore(() => []);
    const pacer = createClaimPacer({ db: noDb, clock: new ManualClock(T0), logger: recordingLogger(), wakeup: new Wakeup(), queue, options: pacerOptions, store: s.store });
    pacer.start();
    // Nothing due: the loop sleeps for pollMs (a minute).
    await eventually(() => s.events.length >= 3);
    await stopWithin(pacer, 1_000);
    await settle();
    expect(s.events).toEqual(['due', 'claim 2', 'due']);
  });

  it('waits for slotFreed() instead of claiming while the queue has no free slot', async () => {
    const queue = fakeQueue(0);
    const s = fakeStore(() => batch(1, 1));
    const pacer = createClaimPacer({ db: noDb, clock: new ManualClock(T0), logger: recordingLogger(), wakeup: new Wakeup(), queue, options: pacerOptions, store: s.store });
    pacer.start();
    try {
      await eventually(() => queue.slotWaits === 1, { what: 'the loop to wait for a slot' });
      await settle();
      expect(s.claimCalls).toEqual([]);
      queue.freeSlot();
      await eventually(() => s.claimCalls.length === 1, { what: 'a claim once a slot frees' });
      // One slot: a full claim of 1, then no slot again.
      await eventually(() => queue.slotWaits === 2);
      expect(s.claimCalls.map((c) => c.limit)).toEqual([1]);
    } finally {
      // stop() ends the wait for a slot.
      await stopWithin(pacer, 1_000);
    }
    expect(s.claimCalls).toHaveLength(1);
  });

  it('with fewer free slots than a quarter batch, waits for more before claiming, for a few ms by the clock', async () => {
    const clock = new ManualClock(T0);
    const queue = fakeQueue(1);
    const s = fakeStore((args) => batch(1, args.limit));
    const pacer = createClaimPacer({ db: noDb, clock, logger: recordingLogger(), wakeup: new Wakeup(), queue, options: { ...pacerOptions, batchSize: 8 }, store: s.store });
    pacer.start();
    try {
      await eventually(() => queue.slotWaits >= 1, { what: 'the loop to wait for more slots' });
      await settle();
      expect(s.claimCalls).toEqual([]);
      // A second slot makes a quarter batch (2): claimed at once.
      queue.freeSlot();
      await eventually(() => s.claimCalls.length === 1);
      expect(s.claimCalls[0]!.limit).toBe(2);
      // Full again; one slot frees and the clock stands still: no claim.
      const waits = queue.slotWaits;
      queue.freeSlot();
      await eventually(() => queue.slotWaits > waits + 1);
      expect(s.claimCalls).toHaveLength(1);
      // Once the wait is over by the clock, the one slot is claimed.
      clock.advance(100);
      await eventually(() => s.claimCalls.length === 2, { what: 'a claim of the one slot after the wait' });
      expect(s.claimCalls[1]!.limit).toBe(1);
    } finally {
      await stopWithin(pacer, 2_000);
    }
  });

  it('with a destination saturated, claims past it, then not again until the interval has passed by the clock', async () => {
    const clock = new ManualClock(T0);
    const queue = fakeQueue(10, ['https://a.example']);
    const s = fakeStore(() => [], () => [{ shard: 0, dueAtMs: T0 }]);
    const pacer = createClaimPacer({ db: noDb, clock, logger: recordingLogger(), wakeup: new Wakeup(), queue, options: pacerOptions, store: s.store });
    pacer.start();
    try {
      await eventually(() => s.claimCalls.length === 1);
      expect(s.claimCalls[0]!.skipDestinations).toEqual(['https://a.example']);
      // A slot freeing wakes the loop, but the clock stands still: no claim.
      await eventually(() => queue.slotWaits >= 1, { what: 'the loop to wait for a slot of the saturated destination' });
      queue.freeSlot();
      await eventually(() => queue.slotWaits >= 2);
      expect(s.claimCalls).toHaveLength(1);
      clock.advance(10_000);
      queue.freeSlot();
      await eventually(() => s.claimCalls.length === 2, { what: 'a claim past the saturated destination' });
      expect(s.claimCalls[1]!.skipDestinations).toEqual(['https://a.example']);
    } finally {
      await stopWithin(pacer, 2_000);
    }
  });

  it('claimWaitMs polls with nothing due, claims a due run at once, and pauses briefly when contended', () => {
    const o = { lookaheadMs: 250, pollMs: 2_000 };
    expect(claimWaitMs(null, T0, o, true)).toBe(2_000);
    expect(claimWaitMs(T0, T0, o, true)).toBe(0);
    expect(claimWaitMs(T0, T0, o, false)).toBe(CONTENDED_SLEEP_MS);
    expect(claimWaitMs(T0 + 10_000, T0, o, true)).toBe(2_000);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Lease keeper

describe('lease keeper without a database', () => {
  it('round() never throws: a failed renewal (each bucket) and a failed reap are logged, nothing is released', async () => {
    const log = recordingLogger();
    const released: string[] = [];
    const run = claimed('a1');
    const keeper = createLeaseKeeper({
      db: downDb,
      clock: new ManualClock(T0),
      logger: log,
      options: { owner: 'owner-1', leaseMarginMs: 1_000, intervalMs: 60_000 },
      unsent: () => [run],
      release: (xs) => released.push(...xs),
    });
    await keeper.round();
    expect(log.entries.map((e) => [e.level, e.msg])).toEqual([
      ['error', 'renewing the leases of queued runs failed in one bucket; the others were renewed'],
      ['error', 'reaper failed'],
    ]);
    expect(released).toEqual([]);
    expect(run.leaseExpiresAtMs).toBe(T0 + 2_000);
    await expect(keeper.reap()).rejects.toThrow('database down');
  });

  it('renews nothing when no run is unsent', async () => {
    const log = recordingLogger();
    const keeper = createLeaseKeeper({
      db: downDb,
      clock: new ManualClock(T0),
      logger: log,
      options: { owner: 'owner-1', leaseMarginMs: 1_000, intervalMs: 60_000 },
      unsent: () => [],
      release: () => {},
    });
    await keeper.round();
    expect(log.entries.map((e) => e.msg)).toEqual(['reaper failed']);
  });

  it('start() runs rounds every intervalMs until stop()', async () => {
    const log = recordingLogger();
    const keeper = createLeaseKeeper({
      db: downDb,
      clock: new ManualClock(T0),
      logger: log,
      options: { owner: 'owner-1', leaseMarginMs: 1_000, intervalMs: 10 },
      unsent: () => [],
      release: () => {},
    });
    keeper.start();
    try {
      await eventually(() => log.entries.length >= 2, { what: 'two rounds' });
    } finally {
      await keeper.stop();
    }
    expect(log.entries.every((e) => e.msg === 'reaper failed')).toBe(true);
  });
});

/** Lease = callback timeout (1000 ms) + this margin. */
const MARGIN = 500;
const LEASE = 1_000 + MARGIN;

describe.each(DATABASE_TARGETS)('lease keeper on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  const clock = new ManualClock(T0);

  useTestStore(
    target,
    (s, t) => {
      store = s;
      tenantId = t;
    },
    clock,
  );

  const job = () => createJob(store.ctx, tenantId, testJobSpec(T0, { callback: { timeoutMs: 1_000 } }), T0);
  const claim = (owner: string) => claimRuns(store.database.db, { owner, limit: 100, nowMs: T0, leaseMarginMs: MARGIN });

  function keeperOf(unsent: ClaimedRun[]) {
    const log = recordingLogger();
    const released: string[] = [];
    const reaped: number[] = [];
    const keeper = createLeaseKeeper({
      db: store.database.db,
      clock,
      logger: log,
      options: { owner: 'A', leaseMarginMs: MARGIN, intervalMs: 60_000 },
      unsent: () => unsent,
      release: (xs) => released.push(...xs),
      onReaped: (n) => reaped.push(n),
    });
    return { keeper, log, released, reaped };
  }

  it('round() extends the leases of the unsent runs the owner holds, on the database and on the run objects', async () => {
    clock.set(T0);
    await job();
    await job();
    const runs = await claim('A');
    expect(runs).toHaveLength(2);
    expect(runs.map((r) => r.leaseExpiresAtMs)).toEqual([T0 + LEASE, T0 + LEASE]);
    const k = keeperOf(runs);
    clock.set(T0 + 800);
    await k.keeper.round();
    for (const r of runs) {
      expect(r.leaseExpiresAtMs).toBe(T0 + 800 + LEASE);
      expect(await runById(store.database, r.runId)).toMatchObject({ status: 'running', leaseOwner: 'A', leaseExpiresAtMs: T0 + 800 + LEASE });
    }
    expect(k.released).toEqual([]);
    expect(k.reaped).toEqual([]);
    expect(k.log.entries).toEqual([]);
    // Renewed, they outlive their first lease: a round past it reaps nothing.
    clock.set(T0 + LEASE + 100);
    await k.keeper.round();
    expect(k.reaped).toEqual([]);
    expect((await runById(store.database, runs[0]!.runId)).status).toBe('running');
  });

  it('round() releases the runs whose lease was lost, and leaves their objects alone', async () => {
    clock.set(T0);
    await job();
    await job();
    const [kept, lost] = await claim('A');
    // `kept` was renewed in time; `lost` was not, and another dispatcher's reaper took it back.
    await renewLeases(store.database.db, 'A', [{ shard: kept!.shard, runId: kept!.runId, attempt: kept!.attempt, leaseExpiresAtMs: T0 + 10 * LEASE }]);
    expect(await reapExpiredLeases(store.database.db, T0 + LEASE + 1)).toBe(1);
    const k = keeperOf([kept!, lost!]);
    clock.set(T0 + LEASE + 2);
    await k.keeper.round();
    expect(k.released).toEqual([lost!.runId]);
    expect(lost!.leaseExpiresAtMs).toBe(T0 + LEASE);
    // The object takes the lease the round asked for (the database keeps the longer one it had).
    expect(kept!.leaseExpiresAtMs).toBe(T0 + LEASE + 2 + LEASE);
    expect((await runById(store.database, kept!.runId)).leaseExpiresAtMs).toBe(T0 + 10 * LEASE);
    expect(await runById(store.database, lost!.runId)).toMatchObject({ status: 'retrying', leaseOwner: null });
  });

  it('round() reaps expired leases of any owner and reports them to onReaped', async () => {
    clock.set(T0);
    await job();
    await job();
    const runs = await claim('B');
    const k = keeperOf([]);
    clock.set(T0 + LEASE - 1);
    await k.keeper.round();
    expect(k.reaped).toEqual([]);
    clock.set(T0 + LEASE + 1);
    await k.keeper.round();
    expect(k.reaped).toEqual([2]);
    for (const r of runs) expect(await runById(store.database, r.runId)).toMatchObject({ status: 'retrying', leaseOwner: null });
    expect(k.log.entries.map((e) => [e.level, e.msg, e.fields.runs])).toEqual([['warn', 'reclaimed runs whose lease expired', 2]]);
  });
});

describe('engine regressions', () => {
  it('a run released once is sent when the same queue gets a later claim of it (release is per claim)', async () => {
    const attempted: string[] = [];
    let endBlocker!: () => void;
    const q = createRunQueue({
      clock: new ManualClock(T0),
      options: { concurrency: 10, perDestination: 1, saturation: 10 },
      untilDue: async () => {},
      attempt: async (r) => {
        attempted.push(`${r.runId}#${r.attempt}`);
        if (r.runId === 'blocker') await new Promise<void>((res) => (endBlocker = res));
        return outcomeOf(r.runId);
      },
      onOutcome: () => {},
    });
    q.add(claimed('blocker'));
    q.add(claimed('r1', undefined, T0, { attempt: 1, leaseExpiresAtMs: T0 + 60_000 }));
    await settle();
    q.release(['r1']); // the lease keeper found its lease lost
    endBlocker();
    await q.drained();
    q.add(claimed('r1', undefined, T0, { attempt: 2, leaseExpiresAtMs: T0 + 60_000 })); // given back by a reaper, claimed again
    await q.drained();
    expect(attempted).toEqual(['blocker#1', 'r1#2']);
  });

  it('a throwing onWritten hook does not make the writer write the batch again', async () => {
    const f = fakeFinish();
    let threw = false;
    const w = createOutcomeWriter({
      db: noDb,
      clock: new ManualClock(T0),
      logger: recordingLogger(),
      sleep: async () => {},
      finish: f.finish,
      options: writerOptions({ gatherMs: 0 }),
      onWritten: () => {
        if (threw) return;
        threw = true;
        throw new Error('hook failed');
      },
    });
    w.push(outcomeOf('a'));
    await w.flushAll();
    expect(f.calls.map(ids)).toEqual([['a']]);
    // And the writer goes on writing.
    w.push(outcomeOf('b'));
    await w.flushAll();
    expect(f.calls.map(ids)).toEqual([['a'], ['b']]);
  });

  it('pending counts a batch whose write is being retried', async () => {
    const s = fakeSleep(false);
    const w = createOutcomeWriter({
      db: noDb,
      clock: new ManualClock(T0),
      logger: recordingLogger(),
      sleep: s.sleep,
      finish: async () => {
        throw new Error('database down');
      },
      options: writerOptions({ gatherMs: 0, maxTries: Infinity }),
    });
    w.push(outcomeOf('a'));
    await eventually(() => s.asked.length > 0, { what: 'the first retry sleep' });
    expect(w.pending).toBe(1);
  });
});
