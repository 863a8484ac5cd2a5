/**
 * What a destination is to the run queue (issue #28 point 8): the per-destination slots are keyed on the callback URL's
 * normalized origin (`destinationOf`), so a port written out, the host's case, backslashes or a trailing dot do not make
 * another destination with slots of its own; and a saturated destination is named by every spelling of it among its
 * held runs, in the form the claim's SQL computes, so the claim leaves all of them unclaimed (checked against the
 * real claim on every database target).
 */
import { describe, expect, it } from 'vitest';
import { createRunQueue, type RunQueueOptions } from '../../src/dispatch/engine/run-queue.ts';
import type { AttemptOutcome } from '../../src/domain/attempt-outcome.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { createJob } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { claimed, settle } from '../support/engine.ts';
import { T0, type TestStore, testJobSpec, useTestStore } from '../support/store.ts';

/** Spellings of one destination, `https://a.example`, as tenants may write them. */
const A_SPELLINGS = [
  'https://a.example/one',
  'HTTPS://A.EXAMPLE/two',
  'https://a.example:443/three',
  'https://a.example:0443/four',
  'https:\\\\a.example\\five',
  'https://a.example./six',
  'https://%61.example/seven',
];

/** A queue on a ManualClock standing at T0 (every run is due) whose attempts never end (the runs stay in flight or queued). */
function queueOf(options: Partial<RunQueueOptions>) {
  const attempted: string[] = [];
  const queue = createRunQueue({
    clock: new ManualClock(T0),
    options: { concurrency: 100, perDestination: 1, backlog: 0, ...options },
    attempt: (run) => {
      attempted.push(run.callback.url);
      return new Promise<AttemptOutcome | null>(() => {});
    },
    onOutcome: () => {},
  });
  return { queue, attempted };
}

describe('run queue destinations', () => {
  it('gives every spelling of one origin the same slots', async () => {
    const { queue, attempted } = queueOf({ perDestination: 2 });
    A_SPELLINGS.forEach((url, i) => {
      queue.add(claimed(`a${i}`, url));
    });
    queue.add(claimed('b', 'https://b.example/one'));
    queue.add(claimed('port', 'https://a.example:8443/one'));
    queue.add(claimed('scheme', 'http://a.example/one'));
    await settle();
    expect(attempted).toEqual([
      A_SPELLINGS[0],
      A_SPELLINGS[1],
      'https://b.example/one',
      'https://a.example:8443/one',
      'http://a.example/one',
    ]);
    expect(new Map(queue.inFlightByDestination)).toEqual(
      new Map([
        ['https://a.example', 2],
        ['https://b.example', 1],
        ['https://a.example:8443', 1],
        ['http://a.example', 1],
      ]),
    );
  });

  it('names a saturated destination by every spelling of it among its held runs', async () => {
    const { queue } = queueOf({ perDestination: 2 });
    queue.add(claimed('in-flight', A_SPELLINGS[0]!));
    await settle();
    expect(queue.saturatedDestinations()).toEqual([]);
    // Its held runs reach its limit: saturated, named by the spellings of the one in flight and the one queued.
    queue.add(claimed('q1', 'https://A.example:443/x'));
    await settle();
    expect(queue.saturatedDestinations().sort()).toEqual(['https://a.example', 'https://a.example:443']);
    queue.add(claimed('q2', 'https://a.example/y'));
    queue.add(claimed('q3', 'https:\\\\a.example\\z'));
    queue.add(claimed('other', 'https://b.example/'));
    await settle();
    // The held runs' spellings as SQL computes them (DESTINATION_PATTERN, lower-cased; '' for the backslash form,
    // which the pattern does not match, as the SQL's coalesce(…, '')).
    expect(queue.saturatedDestinations().sort()).toEqual(['', 'https://a.example', 'https://a.example:443']);
  });
});

describe.each(DATABASE_TARGETS)('the claim leaves every spelling of a saturated destination unclaimed ($kind)', (target) => {
  let store: TestStore;
  let tenantId: string;
  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });

  it('skips the runs of all its spellings and claims the others', async () => {
    const { queue } = queueOf({ perDestination: 1 });
    // The dispatcher holds runs of `https://a.example` in three spellings: one in flight, the rest queued.
    queue.add(claimed('held-1', 'https://a.example/held'));
    queue.add(claimed('held-2', 'https://A.example:443/held'));
    queue.add(claimed('held-3', 'https:\\\\a.example\\held'));
    queue.add(claimed('held-4', 'https://a.example/held-too'));
    await settle();
    const skip = queue.saturatedDestinations();
    expect(skip.length).toBeGreaterThan(0);

    const a: string[] = [];
    for (const url of ['https://a.example/due', 'https://A.EXAMPLE:443/due', 'https:\\\\a.example\\due']) {
      a.push((await createJob(store.ctx, tenantId, testJobSpec(T0, { callback: { url } }), T0)).id);
    }
    const b = (await createJob(store.ctx, tenantId, testJobSpec(T0, { callback: { url: 'https://b.example/due' } }), T0)).id;

    const got = await claimRuns(store.database.db, { owner: 'd1', limit: 10, nowMs: T0, leaseMarginMs: 1_000, skipDestinations: skip });
    expect(got.map((r) => r.jobId)).toEqual([b]);
    const rest = await claimRuns(store.database.db, { owner: 'd1', limit: 10, nowMs: T0, leaseMarginMs: 1_000 });
    expect(rest.map((r) => r.jobId).sort()).toEqual([...a].sort());
  });
});
