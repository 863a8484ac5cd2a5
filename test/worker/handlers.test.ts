/**
 * The Worker's handlers (src/worker.ts → src/worker/handlers.ts) run under Node with the inputs workerd gives them
 * (a Request, the `env` of vars, secrets and the Hyperdrive binding, an ExecutionContext; a ScheduledController),
 * on both databases: PostgreSQL through the Worker's own postgres.js client on the "Hyperdrive" connection string,
 * and PGlite injected as the invocation's database. Callbacks go to a real receiver on 127.0.0.1.
 * test/worker/workerd.test.ts runs the same handlers under workerd itself.
 */

import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.ts';
import type { TickReport } from '../../src/dispatch/drivers/workers-tick.ts';
import { type Clock, systemClock } from '../../src/domain/clock.ts';
import type { Database } from '../../src/store/db.ts';
import { migratePostgresUrl } from '../../src/store/migrate.ts';
import { openPostgres } from '../../src/store/postgres.ts';
import { claimRuns } from '../../src/store/queue/claim-runs.ts';
import { openWorkerDatabase, type WorkerDatabase } from '../../src/worker/database.ts';
import { createWorkerHandlers, type WorkerHandlers, type WorkerServices } from '../../src/worker/handlers.ts';
import type { ExecutionContext, WorkerEnv } from '../../src/worker/types.ts';
import worker from '../../src/worker.ts';
import { apiClient, createTestTenant, type TestTenant } from '../support/api.ts';
import { ADMIN_TOKEN } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type DatabaseTarget, type FreshDatabase, freshDatabase, TEST_ENCRYPTION_KEY } from '../support/databases.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { attemptsOf, openTestStore, runById, type TestStore } from '../support/store.ts';

const BASE = 'http://chime.workers.test';

/** An ExecutionContext that keeps what was passed to waitUntil, so a test can wait for it. */
function executionContext(): ExecutionContext & { settle(): Promise<void> } {
  const pending: Promise<unknown>[] = [];
  return {
    waitUntil: (p) => void pending.push(p),
    passThroughOnException: () => {},
    async settle() {
      while (pending.length > 0) await Promise.all(pending.splice(0));
    },
  };
}

/** The database of one target as the Worker sees it, plus a handle for the test's own queries. */
type WorkerDb = {
  /** Vars and bindings that point the Worker at the database. */
  dbEnv: WorkerEnv;
  openDatabase: (url: string) => WorkerDatabase;
  /** Database clients the handlers opened, and closed. */
  counts: { opened: number; closed: number };
  inspect: Database;
  close(): Promise<void>;
};

async function workerDb(target: DatabaseTarget): Promise<WorkerDb> {
  const counts = { opened: 0, closed: 0 };
  if (target.kind === 'pglite') {
    const store: TestStore = await openTestStore(target, systemClock);
    return {
      // PGlite is not reachable by URL: the configuration still needs one, the injected client ignores it.
      dbEnv: { DATABASE_URL: 'postgres://unused@127.0.0.1:9/unused' },
      openDatabase: () => {
        counts.opened++;
        return { db: store.database.db, close: async () => void counts.closed++ };
      },
      counts,
      inspect: store.database,
      close: () => store.close(),
    };
  }
  const fresh: FreshDatabase = await freshDatabase(target);
  await migratePostgresUrl(fresh.url!);
  const inspect = openPostgres(fresh.url!, { max: 2 });
  return {
    dbEnv: { HYPERDRIVE: { connectionString: fresh.url! } },
    openDatabase: (url) => {
      counts.opened++;
      const d = openWorkerDatabase(url);
      return {
        db: d.db,
        close: async () => {
          counts.closed++;
          return d.close();
        },
      };
    },
    counts,
    inspect,
    async close() {
      await inspect.close();
      await fresh.drop();
    },
  };
}

const baseVars = (over: Record<string, string> = {}): Record<string, string> => ({
  CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
  CHIME_ADMIN_TOKEN: ADMIN_TOKEN,
  CHIME_ALLOW_PRIVATE_DESTINATIONS: 'true',
  CHIME_LOG_LEVEL: 'silent',
  ...over,
});

/** A Worker under test: its handlers, env, and a fetch that goes through its `fetch` handler. */
type TestWorker = {
  handlers: WorkerHandlers;
  env: WorkerEnv;
  fetch: (input: string, init?: RequestInit) => Promise<Response>;
  /** Fires `scheduled` as a Cron Trigger would and returns the tick's report. */
  tick(): Promise<TickReport>;
};

function testWorker(db: WorkerDb, vars: Record<string, string>, services: WorkerServices = {}): TestWorker {
  const reports: TickReport[] = [];
  const handlers = createWorkerHandlers({ openDatabase: db.openDatabase, onTick: (r) => reports.push(r), ...services });
  const env: WorkerEnv = { ...db.dbEnv, ...vars };
  return {
    handlers,
    env,
    async fetch(input, init) {
      const ctx = executionContext();
      const res = await handlers.fetch(new Request(input, init), env, ctx);
      await ctx.settle();
      return res;
    },
    async tick() {
      const ctx = executionContext();
      await handlers.scheduled({ cron: '* * * * *', scheduledTime: Date.now(), noRetry: () => {} }, env, ctx);
      await ctx.settle();
      return reports.at(-1)!;
    },
  };
}

/** A job body due now, calling `url` with a fast timeout and no retries unless told. */
const jobBody = (url: string, over: Record<string, unknown> = {}) => ({
  schedule: { type: 'delay', delayMs: 0 },
  callback: { url, timeoutMs: 2000 },
  retry: { strategy: 'none' },
  payload: { from: 'worker' },
  ...over,
});

/** A clock `offsetMs` ahead of the wall clock; `offsetMs` may be moved. */
function shiftedClock(): Clock & { offsetMs: number } {
  const c = { ...systemClock, offsetMs: 0, now: () => Date.now() + c.offsetMs };
  return c;
}

it('src/worker.ts exports the module-syntax handlers: fetch and scheduled', () => {
  expect(typeof worker.fetch).toBe('function');
  expect(typeof worker.scheduled).toBe('function');
});

describe('configuration errors', () => {
  const handlers = createWorkerHandlers({ logSink: { log: () => {}, warn: () => {}, error: () => {} } });
  const call = (env: WorkerEnv) => handlers.fetch(new Request(`${BASE}/healthz`), env, executionContext());
  const detailOf = async (res: Response) => ((await res.json()) as { detail: string }).detail;

  it('fetch answers 503 problem+json naming the variable: no Hyperdrive binding', async () => {
    const res = await call({ CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY });
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await detailOf(res)).toMatch(/^the service is misconfigured: HYPERDRIVE: /);
  });

  it('fetch answers 503 naming CHIME_ENCRYPTION_KEY when it is missing or not 32 bytes', async () => {
    const hyperdrive = { HYPERDRIVE: { connectionString: 'postgres://u:p@127.0.0.1:9/db' } };
    const missing = await call(hyperdrive);
    expect(missing.status).toBe(503);
    expect(await detailOf(missing)).toContain('CHIME_ENCRYPTION_KEY: required');
    const short = await call({ ...hyperdrive, CHIME_ENCRYPTION_KEY: 'AAAA' });
    expect(await detailOf(short)).toContain('CHIME_ENCRYPTION_KEY: must decode to 32 bytes, got 3');
  });

  it('fetch names every bad Worker var (CHIME_WORKER_CONCURRENCY above the 6 connections of an invocation); scheduled throws the ConfigError', async () => {
    const env = {
      HYPERDRIVE: { connectionString: 'postgres://u:p@127.0.0.1:9/db' },
      CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      CHIME_WORKER_MAX_CALLBACKS_PER_TICK: '0',
      CHIME_WORKER_CONCURRENCY: '7',
    };
    const detail = await detailOf(await call(env));
    expect(detail).toContain('CHIME_WORKER_MAX_CALLBACKS_PER_TICK: ');
    expect(detail).toContain('CHIME_WORKER_CONCURRENCY: at most 6');
    await expect(handlers.scheduled({ cron: '* * * * *', scheduledTime: 0, noRetry: () => {} }, env, executionContext())).rejects.toThrow(
      ConfigError,
    );
  });
});

describe.each(DATABASE_TARGETS)('the Worker handlers on $kind', (target) => {
  let db: WorkerDb;
  let receiver: Receiver;
  let w: TestWorker;
  let tenant: TestTenant;

  beforeAll(async () => {
    db = await workerDb(target);
    receiver = await startReceiver();
    w = testWorker(db, baseVars());
    tenant = await createTestTenant(BASE, 'worker-tenant', w.fetch);
  });

  afterAll(async () => {
    await receiver?.close();
    await db?.close();
  });

  it('fetch serves the same API as Node, with a database client per request that is closed after it', async () => {
    const before = { ...db.counts };
    expect((await w.fetch(`${BASE}/readyz`)).status).toBe(200);
    const created = await tenant.api.post(
      '/v1/jobs',
      jobBody(`${receiver.url}/api`, { schedule: { type: 'cron', expression: '0 0 1 1 *' } }),
    );
    expect(created.status).toBe(201);
    const got = await tenant.api.get(`/v1/jobs/${created.body.jobId}`);
    expect(got.body).toMatchObject({ jobId: created.body.jobId, status: 'active', callback: { url: `${receiver.url}/api` } });
    const bad = await tenant.api.post('/v1/jobs', { schedule: { type: 'cron', expression: 'not cron' }, callback: { url: 'ftp://x' } });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toBe('application/problem+json');
    expect(bad.body.errors.map((e: { path: string }) => e.path)).toEqual(expect.arrayContaining(['schedule.expression', 'callback.url']));
    // No metrics registry on Workers: the route answers a problem, not a crash.
    expect((await w.fetch(`${BASE}/metrics`)).status).toBe(404);
    expect(db.counts.opened - before.opened).toBe(5);
    expect(db.counts.closed - before.closed).toBe(5);
  });

  it('registration checks the callback URL on its face (no DNS on Workers): a loopback address is refused', async () => {
    const strict = testWorker(db, baseVars({ CHIME_ALLOW_PRIVATE_DESTINATIONS: 'false' }));
    const res = await apiClient(BASE, tenant.apiKey, strict.fetch).post('/v1/jobs', jobBody('http://127.0.0.1:9/x'));
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ path: 'callback.url', message: expect.stringContaining('loopback') })]);
  });

  it('scheduled delivers a due run to the receiver, signed, and records it', async () => {
    receiver.received.length = 0;
    const job = await tenant.api.post('/v1/jobs', jobBody(`${receiver.url}/due`));
    const report = await w.tick();
    expect(report).toMatchObject({ attempts: 1, recorded: 1, stoppedBy: 'idle' });
    const [cb] = await receiver.waitFor(1);
    expect(cb!.path).toBe('/due');
    expect(cb!.headers['user-agent']).toMatch(/^chime\//);
    expect(cb!.headers['chime-job-id']).toBe(job.body.jobId);
    const verified = new Webhook(tenant.signingSecret).verify(cb!.body, {
      'webhook-id': String(cb!.headers['webhook-id']),
      'webhook-timestamp': String(cb!.headers['webhook-timestamp']),
      'webhook-signature': String(cb!.headers['webhook-signature']),
    });
    expect(verified).toEqual({ from: 'worker' });
    const run = await tenant.api.get(`/v1/runs/${cb!.headers['webhook-id']}`);
    expect(run.body).toMatchObject({ status: 'succeeded', attempts: 1, responseStatus: 200 });
    expect(run.body.attemptLog).toEqual([expect.objectContaining({ attempt: 1, responseStatus: 200, responseBodyExcerpt: 'ok' })]);
    // Nothing else is due: the next tick sends nothing.
    expect(await w.tick()).toMatchObject({ attempts: 0, stoppedBy: 'idle' });
  });

  it('scheduled sends at most CHIME_WORKER_MAX_CALLBACKS_PER_TICK callbacks; the rest go on the next ticks', async () => {
    receiver.received.length = 0;
    const capped = testWorker(db, baseVars({ CHIME_WORKER_MAX_CALLBACKS_PER_TICK: '2', CHIME_WORKER_CONCURRENCY: '5' }));
    for (let i = 0; i < 5; i++) await tenant.api.post('/v1/jobs', jobBody(`${receiver.url}/cap/${i}`));
    expect(await capped.tick()).toMatchObject({ attempts: 2, recorded: 2, stoppedBy: 'callback-cap' });
    expect(await capped.tick()).toMatchObject({ attempts: 2, recorded: 2, stoppedBy: 'callback-cap' });
    expect(await capped.tick()).toMatchObject({ attempts: 1, recorded: 1, stoppedBy: 'idle' });
    expect(receiver.received.map((r) => r.path).sort()).toEqual([0, 1, 2, 3, 4].map((i) => `/cap/${i}`));
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).toBe(5);
  });

  it('scheduled keeps at most CHIME_WORKER_CONCURRENCY callbacks in flight', async () => {
    receiver.received.length = 0;
    receiver.respond = () => ({ status: 200, delayMs: 300 });
    try {
      const pairs = testWorker(db, baseVars({ CHIME_WORKER_CONCURRENCY: '2' }));
      for (let i = 0; i < 4; i++) await tenant.api.post('/v1/jobs', jobBody(`${receiver.url}/conc/${i}`));
      expect(await pairs.tick()).toMatchObject({ attempts: 4, recorded: 4, stoppedBy: 'idle' });
      const at = receiver.received.map((r) => r.at).sort((a, b) => a - b);
      // The third request is claimed only after both of the first pair were answered (each after 300 ms).
      expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(250);
    } finally {
      receiver.respond = () => ({ status: 200 });
    }
  });

  it('scheduled stops claiming once CHIME_WORKER_TICK_BUDGET_MS of wall time is spent', async () => {
    receiver.received.length = 0;
    const clock = shiftedClock();
    const budgeted = testWorker(db, baseVars({ CHIME_WORKER_TICK_BUDGET_MS: '10000', CHIME_WORKER_CONCURRENCY: '1' }), { clock });
    receiver.respond = () => {
      clock.offsetMs += 20_000; // each callback "takes" longer than the budget
      return { status: 200 };
    };
    try {
      for (let i = 0; i < 3; i++) await tenant.api.post('/v1/jobs', jobBody(`${receiver.url}/budget/${i}`));
      expect(await budgeted.tick()).toMatchObject({ attempts: 1, stoppedBy: 'budget' });
      expect(await budgeted.tick()).toMatchObject({ attempts: 1, stoppedBy: 'budget' });
      expect(await budgeted.tick()).toMatchObject({ attempts: 1, stoppedBy: 'budget' });
      expect(receiver.received).toHaveLength(3);
    } finally {
      receiver.respond = () => ({ status: 200 });
    }
  });

  it('a tick killed mid-delivery loses nothing: the next tick reaps its expired lease and sends the run again', async () => {
    receiver.received.length = 0;
    const job = await tenant.api.post(
      '/v1/jobs',
      jobBody(`${receiver.url}/killed`, { retry: { strategy: 'fixed', maxAttempts: 3, initialDelayMs: 1000 } }),
    );
    // The killed tick: it claimed the run (lease = 2 s timeout + 0 margin) and never recorded anything.
    const [claimed] = await claimRuns(db.inspect.db, { owner: 'killed-tick', limit: 10, nowMs: Date.now(), leaseMarginMs: 0 });
    expect(claimed?.jobId).toBe(job.body.jobId);
    const clock = shiftedClock();
    clock.offsetMs = 5_000; // past the lease
    const next = testWorker(db, baseVars(), { clock });
    expect(await next.tick()).toMatchObject({ reaped: 1, attempts: 1, recorded: 1 });
    const [cb] = await receiver.waitFor(1);
    expect(cb!.headers['webhook-id']).toBe(claimed!.runId);
    expect(cb!.headers['chime-attempt']).toBe('2');
    expect((await runById(db.inspect, claimed!.runId)).status).toBe('succeeded');
  });

  it('with private destinations not allowed, a callback to a loopback address is refused before any request', async () => {
    receiver.received.length = 0;
    const job = await tenant.api.post('/v1/jobs', jobBody(`${receiver.url}/private`));
    const strict = testWorker(db, baseVars({ CHIME_ALLOW_PRIVATE_DESTINATIONS: 'false' }));
    expect(await strict.tick()).toMatchObject({ attempts: 1, recorded: 1 });
    const runs = await tenant.api.get(`/v1/jobs/${job.body.jobId}/runs`);
    const run = runs.body.runs.find((r: { status: string }) => r.status === 'failed');
    expect(run).toBeDefined();
    expect(await attemptsOf(db.inspect, run.runId)).toEqual([
      expect.objectContaining({
        attempt: 1,
        errorClass: 'refused_destination',
        error: expect.stringContaining('is not public (loopback)'),
      }),
    ]);
    expect(receiver.received).toHaveLength(0);
  });
});
