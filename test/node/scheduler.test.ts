import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.ts';
import { InvalidJobError, nodeRetryPolicy, Scheduler, UnknownJobError } from '../../src/node/scheduler.ts';

const T0 = Date.parse('2026-11-22T10:00:00.000Z');
const at = (iso: string): number => Date.parse(iso);

function setup(start = T0) {
  const clock = new ManualClock(start);
  let n = 0;
  const scheduler = new Scheduler(clock, () => `job-${++n}`);
  return { clock, scheduler };
}

describe('Scheduler: one-time jobs', () => {
  it('is due at now + delayMs, runs once at its due time, and is then done', () => {
    const { clock, scheduler } = setup();
    const job = scheduler.schedule({ task: 'send-email', payload: { to: 'user@example.com' }, delayMs: 60_000 });
    expect(job).toMatchObject({
      id: 'job-1',
      kind: 'once',
      status: 'scheduled',
      dueAt: at('2026-11-22T10:01:00.000Z'),
      failures: 0,
      seq: 1,
    });
    expect(job.schedule).toEqual({ type: 'delay', delayMs: 60_000, at: '2026-11-22T10:01:00.000Z' });

    clock.set(at('2026-11-22T10:00:59.999Z'));
    expect(scheduler.runDue()).toEqual([]);
    clock.set(at('2026-11-22T10:01:00.000Z'));
    expect(scheduler.runDue()).toEqual(['job-1']);
    expect(scheduler.get('job-1')).toMatchObject({ status: 'succeeded', dueAt: null, runs: 1 });
    clock.advance(3_600_000);
    expect(scheduler.runDue()).toEqual([]);
  });

  it('is due at once with delayMs 0', () => {
    const { scheduler } = setup();
    scheduler.schedule({ task: 't', payload: null, delayMs: 0 });
    expect(scheduler.runDue()).toEqual(['job-1']);
  });

  it('refuses a negative or fractional delay (RangeError: the caller validates)', () => {
    const { scheduler } = setup();
    expect(() => scheduler.schedule({ task: 't', payload: null, delayMs: -1 })).toThrow(RangeError);
    expect(() => scheduler.schedule({ task: 't', payload: null, delayMs: 1.5 })).toThrow(RangeError);
    expect(scheduler.size).toBe(0);
  });

  it('refuses a due time past the range of Date', () => {
    const { scheduler } = setup();
    expect(() => scheduler.schedule({ task: 't', payload: null, delayMs: Number.MAX_SAFE_INTEGER })).toThrow(InvalidJobError);
  });
});

describe('Scheduler: cron jobs', () => {
  it('is due at the next occurrence strictly after now (UTC)', () => {
    const { scheduler } = setup();
    expect(scheduler.schedule({ task: 't', payload: null, cron: '*/5 * * * *' }).dueAt).toBe(at('2026-11-22T10:05:00.000Z'));
    expect(scheduler.schedule({ task: 't', payload: null, cron: '30 2 * * *' }).dueAt).toBe(at('2026-11-23T02:30:00.000Z'));
    expect(scheduler.schedule({ task: 't', payload: null, cron: '@hourly' }).dueAt).toBe(at('2026-11-22T11:00:00.000Z'));
  });

  it('runs once when due and moves to its next occurrence after now, skipping missed ones', () => {
    const { clock, scheduler } = setup();
    scheduler.schedule({ task: 't', payload: null, cron: '*/5 * * * *' });
    clock.set(at('2026-11-22T10:05:00.000Z'));
    expect(scheduler.runDue()).toEqual(['job-1']);
    expect(scheduler.get('job-1')).toMatchObject({ status: 'scheduled', dueAt: at('2026-11-22T10:10:00.000Z'), runs: 1 });
    clock.set(at('2026-11-22T10:23:00.000Z')); // 10:10, 10:15 and 10:20 have passed
    expect(scheduler.runDue()).toEqual(['job-1']);
    expect(scheduler.get('job-1')!.dueAt).toBe(at('2026-11-22T10:25:00.000Z'));
    expect(scheduler.runDue()).toEqual([]);
  });

  it.each([
    ['61 * * * *', 'expression'],
    ['* * * *', 'expression'],
    ['0 0 * * * *', 'expression'],
    ['not a cron', 'expression'],
    ['@fortnightly', 'expression'],
  ])('refuses the invalid expression %j with issues', (cron, path) => {
    const { scheduler } = setup();
    let err: unknown;
    try {
      scheduler.schedule({ task: 't', payload: null, cron });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidJobError);
    expect((err as InvalidJobError).issues[0]!.path).toBe(path);
    expect(scheduler.size).toBe(0);
  });
});

describe('Scheduler: due order', () => {
  it('runs due jobs in due order, ties in scheduling order, and leaves jobs not yet due', () => {
    const { clock, scheduler } = setup();
    scheduler.schedule({ task: 'a', payload: null, delayMs: 3000 }); // job-1 10:00:03
    scheduler.schedule({ task: 'b', payload: null, delayMs: 1000 }); // job-2 10:00:01
    scheduler.schedule({ task: 'c', payload: null, cron: '* * * * *' }); // job-3 10:01:00
    scheduler.schedule({ task: 'd', payload: null, delayMs: 1000 }); // job-4 10:00:01, after job-2
    scheduler.schedule({ task: 'e', payload: null, delayMs: 60_000 }); // job-5 10:01:00, after job-3
    scheduler.schedule({ task: 'f', payload: null, delayMs: 60_001 }); // job-6 not due
    clock.set(at('2026-11-22T10:01:00.000Z'));
    expect(scheduler.runDue()).toEqual(['job-2', 'job-4', 'job-1', 'job-3', 'job-5']);
    expect(scheduler.get('job-6')!.status).toBe('scheduled');
  });
});

describe('Scheduler: failures and retries', () => {
  it('backs off 2000, 4000, 8000, 16000 ms and stops retrying at the 5th failure (defaults)', () => {
    const { scheduler } = setup();
    const { id } = scheduler.schedule({ task: 't', payload: null, delayMs: 0 });
    const results = Array.from({ length: 6 }, () => scheduler.run(id, { fail: true }));
    expect(results).toEqual([
      { ok: false, retryScheduled: true, backoffMs: 2000 },
      { ok: false, retryScheduled: true, backoffMs: 4000 },
      { ok: false, retryScheduled: true, backoffMs: 8000 },
      { ok: false, retryScheduled: true, backoffMs: 16000 },
      { ok: false, retryScheduled: false, backoffMs: 32000 },
      { ok: false, retryScheduled: false, backoffMs: 64000 },
    ]);
    expect(scheduler.get(id)).toMatchObject({ status: 'failed', dueAt: null, failures: 6 });
  });

  it('uses retry.baseMs and retry.maxAttempts', () => {
    const { scheduler } = setup();
    const { id } = scheduler.schedule({ task: 't', payload: null, delayMs: 0, retry: { baseMs: 500, maxAttempts: 3 } });
    expect([1, 2, 3].map(() => scheduler.run(id, { fail: true }))).toEqual([
      { ok: false, retryScheduled: true, backoffMs: 1000 },
      { ok: false, retryScheduled: true, backoffMs: 2000 },
      { ok: false, retryScheduled: false, backoffMs: 4000 },
    ]);
    const once = scheduler.schedule({ task: 't', payload: null, delayMs: 0, retry: { maxAttempts: 1 } });
    expect(scheduler.run(once.id, { fail: true })).toEqual({ ok: false, retryScheduled: false, backoffMs: 2000 });
  });

  it('refuses retry settings out of range (RangeError: the caller validates)', () => {
    const { scheduler } = setup();
    expect(() => scheduler.schedule({ task: 't', payload: null, delayMs: 0, retry: { baseMs: 0 } })).toThrow(RangeError);
    expect(() => scheduler.schedule({ task: 't', payload: null, delayMs: 0, retry: { maxAttempts: 0 } })).toThrow(RangeError);
    expect(() => scheduler.schedule({ task: 't', payload: null, delayMs: 0, retry: { maxAttempts: 101 } })).toThrow(RangeError);
  });

  it('schedules the retry at now + backoff, where runDue picks it up; success resets the count', () => {
    const { clock, scheduler } = setup();
    const { id } = scheduler.schedule({ task: 't', payload: null, delayMs: 10_000 });
    scheduler.run(id, { fail: true });
    expect(scheduler.get(id)).toMatchObject({ status: 'retrying', dueAt: T0 + 2000, failures: 1 });
    clock.advance(1999);
    expect(scheduler.runDue()).toEqual([]);
    clock.advance(1);
    expect(scheduler.runDue()).toEqual([id]);
    expect(scheduler.get(id)).toMatchObject({ status: 'succeeded', dueAt: null, failures: 0, runs: 2 });
  });

  it('starts counting again after a successful run', () => {
    const { scheduler } = setup();
    const { id } = scheduler.schedule({ task: 't', payload: null, cron: '0 * * * *' });
    scheduler.run(id, { fail: true });
    scheduler.run(id, { fail: true });
    expect(scheduler.run(id)).toEqual({ ok: true });
    expect(scheduler.run(id, { fail: true })).toEqual({ ok: false, retryScheduled: true, backoffMs: 2000 });
  });

  it('returns a cron job whose retries are exhausted to its next occurrence', () => {
    const { scheduler } = setup();
    const { id } = scheduler.schedule({ task: 't', payload: null, cron: '0 * * * *', retry: { maxAttempts: 2 } });
    scheduler.run(id, { fail: true });
    expect(scheduler.get(id)).toMatchObject({ status: 'retrying', dueAt: T0 + 2000 });
    expect(scheduler.run(id, { fail: true })).toEqual({ ok: false, retryScheduled: false, backoffMs: 4000 });
    expect(scheduler.get(id)).toMatchObject({ status: 'scheduled', dueAt: at('2026-11-22T11:00:00.000Z') });
  });

  it('agrees with the protocol formula base_ms × 2^n for any base and failure count (via the domain policy)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 1, max: 30 }),
        (baseMs, maxAttempts, failures) => {
          const { scheduler } = setup();
          const { id } = scheduler.schedule({ task: 't', payload: null, delayMs: 0, retry: { baseMs, maxAttempts } });
          for (let n = 1; n <= failures; n++) {
            const r = scheduler.run(id, { fail: true });
            expect(r).toEqual({ ok: false, retryScheduled: n < maxAttempts, backoffMs: baseMs * 2 ** n });
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('builds a domain policy without jitter whose first delay is 2 × base', () => {
    expect(nodeRetryPolicy({ baseMs: 1000, maxAttempts: 5 })).toMatchObject({
      strategy: 'exponential',
      initialDelayMs: 2000,
      multiplier: 2,
      jitter: false,
      maxAttempts: 5,
    });
  });
});

describe('Scheduler: lookups', () => {
  it('throws UnknownJobError for an unknown id', () => {
    const { scheduler } = setup();
    expect(() => scheduler.run('nope')).toThrow(UnknownJobError);
    expect(() => scheduler.run('nope', { fail: true })).toThrow(UnknownJobError);
  });

  it('hands out snapshots, not its records', () => {
    const { scheduler } = setup();
    const job = scheduler.schedule({ task: 't', payload: null, delayMs: 5 });
    (job as { dueAt: number | null }).dueAt = 0;
    (job.retry as { baseMs: number }).baseMs = 1;
    expect(scheduler.get(job.id)).toMatchObject({ dueAt: T0 + 5, retry: { baseMs: 1000, maxAttempts: 5 } });
    expect(scheduler.list().map((j) => j.id)).toEqual([job.id]);
  });

  it('uses UUID v7 ids by default', () => {
    const s = new Scheduler(new ManualClock(T0));
    const a = s.schedule({ task: 't', payload: null, delayMs: 0 });
    const b = s.schedule({ task: 't', payload: null, delayMs: 0 });
    expect(a.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.id).not.toBe(b.id);
  });
});
