/**
 * Issue #28, finding 1: an outcome whose own data the database refuses (a receiver's NUL byte, an unpaired surrogate)
 * is recorded without the offending texts, or given up on alone; it is never retried forever and never holds back the
 * other outcomes of its bucket, other tenants' included. And `flushAll(signal)` ends when its signal aborts, however
 * long a bucket keeps failing, so a dispatcher's stop is bounded.
 * The first part runs the writer over the real finish statement on every database target; the rest injects it.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createOutcomeWriter, type OutcomeWriterOptions, UNSTORABLE_TEXT_NOTE } from '../../src/dispatch/engine/outcome-writer.ts';
import type { AttemptOutcome } from '../../src/domain/attempt-outcome.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { type Db, query } from '../../src/store/db.ts';
import { createJob } from '../../src/store/jobs.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { recordingLogger } from '../support/logger.ts';
import { T0, type TestStore, testJobSpec, testOutcome, useTestStore } from '../support/store.ts';

const options = (o: Partial<OutcomeWriterOptions> = {}): OutcomeWriterOptions => ({
  owner: 'writer',
  gatherMs: 0,
  batchSize: 100,
  maxTries: Infinity,
  backoffMinMs: 1,
  backoffMaxMs: 1,
  ...o,
});
/** A PostgreSQL data exception as the drivers report one (SQLSTATE 22P05: `\u0000` in jsonb). */
const dataException = () => Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05' });

describe.each(DATABASE_TARGETS)('outcomes the database refuses, on $kind', (target) => {
  let store: TestStore;
  let tenantId: string;
  useTestStore(target, (s, t) => {
    store = s;
    tenantId = t;
  });

  it('records the others as they are and the refused ones without their texts, and ends', { timeout: 20_000 }, async () => {
    for (let i = 0; i < 6; i++) await createJob(store.ctx, tenantId, testJobSpec(T0), T0);
    const claimed = await claimRuns(store.database.db, { owner: 'writer', limit: 10, nowMs: T0, leaseMarginMs: 60_000 });
    expect(claimed).toHaveLength(6);
    // Texts as they would reach the writer if anything upstream let them through (outcomeOf makes them storable).
    const bad = new Map<string, Partial<AttemptOutcome>>([
      [claimed[2]!.runId, { responseBodyExcerpt: 'a\u0000b' }],
      [claimed[4]!.runId, { runStatus: 'failed', responseStatus: 500, errorClass: 'bad_status', error: 'half a pair \ud800' }],
    ]);
    const log = recordingLogger();
    const writer = createOutcomeWriter({ db: store.database.db, clock: store.clock, logger: log, options: options() });
    for (const r of claimed) writer.push(testOutcome(r, bad.get(r.runId) ?? { responseBodyExcerpt: `ok ${r.runId}` }));
    await writer.flushAll();

    const rows = await query<{ id: string; status: string; excerpt: string | null; error: string | null }>(
      store.database.db,
      sql`select r.id, r.status, a.response_body_excerpt as excerpt, a.error from runs r join attempts a on a.shard = r.shard and a.run_id = r.id`,
    );
    expect(rows).toHaveLength(6);
    for (const row of rows) {
      if (bad.has(row.id)) {
        expect(row).toMatchObject({ status: bad.get(row.id)!.runStatus ?? 'succeeded', excerpt: null, error: UNSTORABLE_TEXT_NOTE });
      } else {
        expect(row).toMatchObject({ status: 'succeeded', excerpt: `ok ${row.id}`, error: null });
      }
    }
    expect(
      log.entries
        .filter((e) => e.msg.startsWith('an outcome was recorded without'))
        .map((e) => e.fields.runId)
        .sort(),
    ).toEqual([...bad.keys()].sort());
    expect(log.entries.filter((e) => e.msg === 'recording outcomes failed; retrying')).toEqual([]);
  });
});

describe('an outcome writer facing data exceptions and a database that stays down', () => {
  const outcome = (runId: string, shard = 0) => testOutcome({ shard, runId, jobId: `job-${runId}`, attempt: 1 });
  /** A finish that refuses, as a data exception, every batch holding an outcome whose run id is in `refused`. */
  function refusing(refused: (o: AttemptOutcome) => boolean) {
    const calls: string[][] = [];
    const finish = async (_db: Db, _owner: string, batch: AttemptOutcome[]) => {
      calls.push(batch.map((o) => o.runId));
      if (batch.some(refused)) throw dataException();
      return new Set(batch.map((o) => o.runId));
    };
    return { calls, finish };
  }

  it('halves the batch down to the refused outcome, so 15 others are recorded in a few tries', async () => {
    const recorded: string[] = [];
    const f = refusing((o) => o.runId === 'r11' && o.responseBodyExcerpt !== null);
    const clock = new ManualClock(T0);
    const w = createOutcomeWriter({
      db: {} as Db,
      clock,
      logger: recordingLogger(),
      finish: f.finish,
      options: options({ gatherMs: 1 }),
      onWritten: (_batch, r) => recorded.push(...r),
    });
    for (let i = 0; i < 16; i++) w.push({ ...outcome(`r${i}`), responseBodyExcerpt: 'x' });
    const flushed = w.flushAll();
    await clock.tick(1);
    await flushed;
    expect(recorded.sort()).toEqual(Array.from({ length: 16 }, (_, i) => `r${i}`).sort());
    // The whole batch, then a pair of halves per level down to r11 alone (refused), then r11 without its texts.
    expect(f.calls).toHaveLength(1 + 2 * 4 + 1);
    expect(f.calls.filter((c) => c.join() === 'r11')).toHaveLength(2);
  });

  it('gives up on an outcome refused even without its texts, alone, logging it', async () => {
    const log = recordingLogger();
    const recorded: string[] = [];
    const f = refusing((o) => o.runId === 'b');
    const w = createOutcomeWriter({
      db: {} as Db,
      clock: new ManualClock(T0),
      logger: log,
      finish: f.finish,
      options: options(),
      onWritten: (_batch, r) => recorded.push(...r),
    });
    for (const id of ['a', 'b', 'c']) w.push(outcome(id));
    await w.flushAll();
    expect(recorded.sort()).toEqual(['a', 'c']);
    expect(log.entries.filter((e) => e.level === 'error').map((e) => [e.msg, e.fields.runId])).toEqual([
      ['an outcome could not be stored; given up on (the reaper will take its run back)', 'b'],
    ]);
    expect(w.pending).toBe(0);
  });

  it('ends flushAll when its signal aborts while a bucket keeps failing, logging the outcomes left', async () => {
    const log = recordingLogger();
    const clock = new ManualClock(T0);
    let tries = 0;
    const w = createOutcomeWriter({
      db: {} as Db,
      clock,
      logger: log,
      finish: async () => {
        tries++;
        throw new Error('database down');
      },
      options: options({ backoffMinMs: 100, backoffMaxMs: 100 }),
    });
    w.push(outcome('a'));
    w.push(outcome('b'));
    const stop = new AbortController();
    const flushed = w.flushAll(stop.signal);
    // The first try, then two retries after their backoff; the third retry's backoff is under way.
    await clock.tick(200);
    expect(tries).toBe(3);
    expect(clock.pendingTimers).toBe(1);
    stop.abort();
    await flushed;
    expect(w.pending).toBe(0);
    expect(log.entries.filter((e) => e.msg.startsWith('stopping: outcomes not recorded')).map((e) => e.fields.runs)).toEqual([['a', 'b']]);
    // The retry loop, woken, tries no more and logs nothing again.
    await clock.tick(100);
    expect(tries).toBe(3);
    expect(clock.pendingTimers).toBe(0);
    expect(log.entries.filter((e) => e.msg.startsWith('stopping:'))).toHaveLength(1);
  });
});
