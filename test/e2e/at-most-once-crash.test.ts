/**
 * docs/design.md invariants 3 and 4 with real processes, a real crash and a real receiver on 127.0.0.1, on every
 * database target. A dispatcher (`chime serve`) is SIGKILLed while two callbacks hang at the receiver; a second one
 * started afterwards must
 * - never re-send the `at-most-once` run: it ends `failed` as an ambiguous outcome, after exactly one request;
 * - re-send the `at-least-once` run once its lease has expired, with the same `webhook-id` (attempt 2).
 * Without a crash, an at-most-once callback that times out is not retried either (the request may have arrived),
 * while one refused before any byte left is.
 *
 * The dying process's leases are short (CHIME_LEASE_MARGIN_MS) and the survivor reaps often (CHIME_REAP_INTERVAL_MS),
 * so the take-over comes within seconds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, apiClient, createTestTenant } from '../support/api.ts';
import { type ChimeProcess, freePort, startChime } from '../support/chime-process.ts';
import { isRunning, killProcessTree } from '../support/chime-run.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Received, type Receiver, type Reply, startReceiver } from '../support/receiver.ts';

/** The process that dies: lease = callback timeout + 500 ms, so its leases expire soon after the kill. */
const DYING_ENV = { CHIME_LEASE_MARGIN_MS: '500', CHIME_REAP_INTERVAL_MS: '200' };
/**
 * The process that takes over: looks for expired leases every 200 ms, and holds its own leases long enough that a
 * loaded machine cannot make it lose one between a callback's end and the recording of its result.
 */
const SURVIVOR_ENV = { CHIME_LEASE_MARGIN_MS: '5000', CHIME_REAP_INTERVAL_MS: '200' };
/** Long enough that the killed process cannot time the hanging callbacks out itself before it dies. */
const HANG_TIMEOUT_MS = 5_000;
const RETRY = { strategy: 'fixed', maxAttempts: 3, initialDelayMs: 100, jitter: false } as const;
const FINAL = new Set(['succeeded', 'failed', 'expired', 'skipped', 'canceled']);
/** Starts real processes, kills one, waits for leases to expire: generous on a loaded machine. */
const E2E_TIMEOUT_MS = 120_000;

type Attempt = { attempt: number; responseStatus: number | null; errorClass: string | null; error: string | null };
type RunDetail = { runId: string; status: string; attempts: number; error: string | null; attemptLog: Attempt[] };

describe.each(DATABASE_TARGETS)('at-most-once and at-least-once across a dispatcher crash on $kind', (target) => {
  let db: FreshDatabase;
  let receiver: Receiver;
  let chime: ChimeProcess | undefined;
  const hits = (path: string): Received[] => receiver.received.filter((r) => r.path === path);

  /** Hanging paths never answer; `/at-least-once` hangs the first time only. */
  function respond(r: Received): Reply {
    if (r.path === '/at-least-once') return hits(r.path).length === 1 ? { status: 200, hang: true } : { status: 200 };
    if (r.path.startsWith('/hang')) return { status: 200, hang: true };
    return { status: 200 };
  }

  beforeAll(async () => {
    db = await freshDatabase(target);
    receiver = await startReceiver((r) => respond(r));
  });
  afterAll(async () => {
    if (chime) expect(await chime.stop()).toBe(0);
    await receiver?.close();
    await db?.drop();
  });

  async function createJob(api: Api, body: Record<string, unknown>): Promise<string> {
    const r = await api.post('/v1/jobs', { schedule: { type: 'delay', delayMs: 0 }, retry: RETRY, ...body });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.jobId;
  }

  /** The job's only run, once it is final, with its attempt log. */
  async function finalRun(api: Api, jobId: string): Promise<RunDetail> {
    const runId = await eventually(
      async () => {
        const runs: { runId: string; status: string }[] = (await api.get(`/v1/jobs/${jobId}/runs`)).body.runs;
        return runs.length === 1 && FINAL.has(runs[0]!.status) ? runs[0]!.runId : undefined;
      },
      { timeoutMs: 60_000, what: `the run of job ${jobId} to end` },
    );
    return (await api.get(`/v1/runs/${runId}`)).body;
  }

  it(
    'after a SIGKILL mid-request, the next process fails the at-most-once run and re-sends the at-least-once one',
    async () => {
      const first = await startChime({ ...db.env, ...DYING_ENV });
      const tenant = await createTestTenant(first.url, 'crash');
      const once = await createJob(tenant.api, {
        callback: { url: `${receiver.url}/hang/at-most-once`, timeoutMs: HANG_TIMEOUT_MS },
        deliveryMode: 'at-most-once',
      });
      const again = await createJob(tenant.api, {
        callback: { url: `${receiver.url}/at-least-once`, timeoutMs: HANG_TIMEOUT_MS },
        deliveryMode: 'at-least-once',
      });
      await eventually(() => hits('/hang/at-most-once').length === 1 && hits('/at-least-once').length === 1, {
        timeoutMs: 30_000,
        what: 'both callbacks to reach the receiver and hang',
      });

      const killed = killProcessTree(first.child.pid!);
      expect(await first.stop()).toBeNull(); // ended by the signal, not by an exit code
      expect(first.child.signalCode).toBe('SIGKILL');
      await eventually(() => killed.every((pid) => !isRunning(pid)), { what: 'every process of the killed chime to be gone' });
      const crashedAt = Date.now();

      // A new process on the same database (the same data dir for PGlite: its lock file names a dead pid).
      chime = await startChime({ ...db.env, ...SURVIVOR_ENV });
      const api = apiClient(chime.url, tenant.apiKey);

      const resent = await finalRun(api, again);
      expect(resent).toMatchObject({ status: 'succeeded', attempts: 2 });
      // The history explains the re-send: attempt 1's lease was lost, attempt 2 was answered.
      expect(resent.attemptLog.map((a) => [a.attempt, a.errorClass, a.responseStatus])).toEqual([
        [1, 'lease_lost', null],
        [2, null, 200],
      ]);
      const alo = hits('/at-least-once');
      expect(alo).toHaveLength(2);
      expect(alo[0]!.headers['webhook-id']).toBe(resent.runId);
      expect(alo[1]!.headers['webhook-id']).toBe(resent.runId);
      expect(alo.map((h) => h.headers['chime-attempt'])).toEqual(['1', '2']);
      // Re-sent by the new process, after the kill (the lease_lost entry above: because the lease expired).
      expect(alo[1]!.at).toBeGreaterThanOrEqual(crashedAt);

      const lost = await finalRun(api, once);
      expect(lost).toMatchObject({ status: 'failed', attempts: 1 });
      expect(lost.error).toMatch(/^ambiguous outcome: .*not re-sent \(at-most-once\)$/);
      expect(lost.attemptLog.map((a) => [a.attempt, a.errorClass])).toEqual([[1, 'lease_lost']]);
      expect(hits('/hang/at-most-once')).toHaveLength(1);
      expect(hits('/hang/at-most-once')[0]!.headers['webhook-id']).toBe(lost.runId);
      // It is a dead letter, to be replayed by a person who knows whether the first request took effect.
      const dead: { runId: string }[] = (await api.get('/v1/dead-letters')).body.runs;
      expect(dead.map((r) => r.runId)).toContain(lost.runId);
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'without a crash, an at-most-once callback that times out is not retried; one refused before sending is',
    async () => {
      chime ??= await startChime({ ...db.env, ...SURVIVOR_ENV });
      const tenant = await createTestTenant(chime.url, 'no-crash');
      const timedOut = await createJob(tenant.api, {
        callback: { url: `${receiver.url}/hang/timeout`, timeoutMs: 1_000 },
        deliveryMode: 'at-most-once',
      });
      const closedPort = await freePort();
      const refused = await createJob(tenant.api, {
        callback: { url: `http://127.0.0.1:${closedPort}/nobody`, timeoutMs: 1_000 },
        deliveryMode: 'at-most-once',
      });

      const t = await finalRun(tenant.api, timedOut);
      expect(t).toMatchObject({ status: 'failed', attempts: 1 });
      expect(t.attemptLog).toHaveLength(1);
      expect(t.attemptLog[0]).toMatchObject({ attempt: 1, responseStatus: null, errorClass: 'timeout' });
      expect(t.error).toMatch(/not re-sent \(at-most-once\)/);
      expect(hits('/hang/timeout')).toHaveLength(1);

      // Connection refused: no byte can have left, so even at-most-once uses its retries.
      const r = await finalRun(tenant.api, refused);
      expect(r).toMatchObject({ status: 'failed', attempts: RETRY.maxAttempts });
      expect(r.attemptLog.map((a) => a.errorClass)).toEqual(Array(RETRY.maxAttempts).fill('connection_refused'));
    },
    E2E_TIMEOUT_MS,
  );
});
