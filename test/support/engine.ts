/**
 * Fixtures of the dispatch engine's unit tests (test/dispatch/outcome-writer, run-queue, claim-pacer, lease-keeper and
 * run-queue-destination .test.ts): stand-in databases, claimed runs and their outcomes, fake finish statements, and
 * the one-turn `settle()`. Time in those tests is a ManualClock moved by hand: nothing here waits on a timer.
 */
import type { AttemptOutcome } from '../../src/domain/attempt-outcome.ts';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import { resolveRetryPolicy } from '../../src/domain/retry.ts';
import type { Db } from '../../src/store/db.ts';
import { T0, testOutcome } from './store.ts';

/** A database handle for modules whose store functions are injected: any use of it fails the test. */
export const noDb = new Proxy(
  {},
  {
    get() {
      throw new Error('the database was used');
    },
  },
) as Db;

/** A database that is down: every use throws. */
export const downDb = new Proxy(
  {},
  {
    get() {
      throw new Error('database down');
    },
  },
) as Db;

/** A promise and its resolve. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * Lets every promise callback already queued run, and those they queue in turn (one turn of the event loop): a check
 * that something did not happen is meaningful after it, as the engine's modules wait on nothing but their ManualClock.
 */
export const settle = () => new Promise<void>((r) => setImmediate(r));

/** Whether `p` has settled by now (after one `settle()`). */
export async function isSettled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await settle();
  return done;
}

/** A claimed run of `url`, due at `dueAtMs`, its lease a callback timeout (1 s) and a margin (1 s) past that. */
export function claimed(runId: string, url = 'https://a.example/hook', dueAtMs = T0, o: Partial<ClaimedRun> = {}): ClaimedRun {
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
export function outcomeOf(runId: string): AttemptOutcome {
  return testOutcome({ shard: 0, runId, jobId: `job-${runId}`, attempt: 1 });
}

/** The run ids of `xs`, in order. */
export const ids = (xs: readonly { runId: string }[]) => xs.map((x) => x.runId);

/** A finish statement that records each batch; `answer` decides each call's result (default: all recorded). */
export function fakeFinish(answer: (batch: AttemptOutcome[], call: number) => Promise<Set<string>> | Set<string> = (b) => new Set(ids(b))) {
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
export function bucket2DownFinish(down: (call: number) => boolean) {
  const calls: string[][] = [];
  const finish = async (
    _db: Db,
    _owner: string,
    batch: AttemptOutcome[],
    onBucketError?: (shard: number, err: unknown, group: AttemptOutcome[]) => void,
  ) => {
    calls.push(ids(batch));
    const failing = down(calls.length) ? batch.filter((b) => b.shard === 2) : [];
    if (failing.length > 0) onBucketError!(2, new Error('worker down'), failing);
    return new Set(ids(batch.filter((b) => !failing.includes(b))));
  };
  return { calls, finish };
}
