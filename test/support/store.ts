/**
 * In-process store fixtures: a fresh, migrated database for one `DatabaseTarget` (PGlite in a new temp dir, or a new
 * PostgreSQL database on TEST_DATABASE_URL), a cipher under a fixed key, a clock, tenants, and a factory of valid
 * `JobSpec`s. For store and dispatcher tests that call the modules directly rather than through a process.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SQL, sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { type AttemptOutcome, ERROR_CLASS } from '../../src/domain/attempt-outcome.ts';
import { type Clock, ManualClock } from '../../src/domain/clock.ts';
import type { JobSpec } from '../../src/domain/job.ts';
import { type RetryPolicy, resolveRetryPolicy } from '../../src/domain/retry.ts';
import { normalizeSchedule, type Schedule } from '../../src/domain/schedule.ts';
import { shardOf } from '../../src/domain/shard.ts';
import { type Cipher, createCipher, fromBase64Url } from '../../src/store/cipher.ts';
import type { StoreContext } from '../../src/store/context.ts';
import { type Database, query } from '../../src/store/db.ts';
import { openEmbedded } from '../../src/store/embedded.ts';
import { createJob } from '../../src/store/jobs.ts';
import { migrateEmbedded, migratePostgresUrl } from '../../src/store/migrate.ts';
import { openPostgres } from '../../src/store/postgres.ts';
import { createTenant } from '../../src/store/tenants.ts';
import type { CitusCluster } from './citus.ts';
import { type DatabaseTarget, freshDatabase, TEST_ENCRYPTION_KEY } from './databases.ts';
import { pgliteTemplate } from './pglite-template.ts';

/** A fixed instant tests start from (epoch ms): 2030-01-01T00:00:00Z. */
export const T0 = Date.UTC(2030, 0, 1);

export type TestStore = {
  target: DatabaseTarget;
  /** The Citus cluster under `database` (a test can stop a worker); null on PGlite and PostgreSQL. */
  cluster: CitusCluster | null;
  database: Database;
  cipher: Cipher;
  clock: Clock;
  /** The store context over `database` with `clock`. */
  ctx: StoreContext;
  /**
   * Another connection pool on the same database (PostgreSQL: a new postgres.js pool, as a second process would
   * have); null on PGlite, which one process opens once. Closed by `close()`.
   */
  openAnother(): Database | null;
  /** Closes every handle and drops the database. */
  close(): Promise<void>;
};

/** The test cipher: AES-256-GCM under the fixed TEST_ENCRYPTION_KEY. */
export function testCipher(): Promise<Cipher> {
  return createCipher(fromBase64Url(TEST_ENCRYPTION_KEY));
}

/**
 * Opens a fresh migrated database for `target`; `clock` defaults to a ManualClock at T0.
 * @param opts.onStatement sees every statement the store's `db` runs, with its parameters
 */
export async function openTestStore(
  target: DatabaseTarget,
  clock: Clock = new ManualClock(T0),
  opts: { onStatement?: (query: string, params: readonly unknown[]) => void } = {},
): Promise<TestStore> {
  const cipher = await testCipher();
  if (target.kind === 'pglite') {
    const dataDir = await mkdtemp(join(tmpdir(), 'chime-store-test-'));
    const database = await openEmbedded(dataDir, { ...opts, loadDataDir: await pgliteTemplate() });
    await migrateEmbedded(database.pg);
    return {
      target,
      cluster: null,
      database,
      cipher,
      clock,
      ctx: { db: database.db, cipher, clock },
      openAnother: () => null,
      async close() {
        await database.close();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  }
  const fresh = await freshDatabase(target);
  const url = fresh.url!;
  await migratePostgresUrl(url);
  const database = openPostgres(url, opts);
  const others: Database[] = [];
  return {
    target,
    cluster: fresh.cluster,
    database,
    cipher,
    clock,
    ctx: { db: database.db, cipher, clock },
    openAnother() {
      const other = openPostgres(url);
      others.push(other);
      return other;
    },
    async close() {
      for (const o of others) await o.close().catch(() => {});
      await database.close().catch(() => {});
      await fresh.drop();
    },
  };
}

/** Creates a tenant (with its API key and signing secret) and returns its id. */
export async function createTestTenantIn(ctx: StoreContext, name = 'tenant'): Promise<string> {
  const { tenant } = await createTenant(ctx, name);
  return tenant.tenantId;
}

export type JobSpecInput = Partial<Omit<JobSpec, 'retry' | 'callback'>> & {
  retry?: Partial<RetryPolicy>;
  callback?: Partial<JobSpec['callback']>;
};

/**
 * A valid JobSpec registered at `nowMs`: by default a `once` job due at `nowMs`, POST to an unreachable loopback URL
 * with a 1 s timeout, default retry policy, at-least-once, overlap allow, catch-up one, no window, no jitter.
 * `schedule` is normalized against `nowMs` as the API would.
 */
export function testJobSpec(nowMs: number, o: JobSpecInput = {}): JobSpec {
  const schedule: Schedule = o.schedule ?? { type: 'once', at: new Date(nowMs).toISOString() };
  return {
    name: o.name ?? null,
    key: o.key ?? null,
    schedule: normalizeSchedule(schedule, nowMs),
    callback: {
      url: 'http://127.0.0.1:9/unused',
      method: 'POST',
      headers: {},
      successStatusCodes: ['2xx'],
      timeoutMs: 1000,
      ...o.callback,
    },
    authToken: o.authToken ?? null,
    payload: o.payload ?? { hello: 'world' },
    retry: resolveRetryPolicy({ jitter: false, ...o.retry }),
    relevancyWindowMs: o.relevancyWindowMs ?? null,
    deliveryMode: o.deliveryMode ?? 'at-least-once',
    overlapPolicy: o.overlapPolicy ?? 'allow',
    catchUp: o.catchUp ?? 'one',
    jitterMs: o.jitterMs ?? 0,
    metadata: o.metadata ?? {},
    calendar: o.calendar ?? null,
    maxRuns: o.maxRuns ?? null,
    jitterMode: o.jitterMode ?? 'stable',
    then: o.then ?? null,
  };
}

/** A run row as tests look at it (times as epoch ms). */
export type RunView = {
  id: string;
  jobId: string;
  scheduledForMs: number;
  trigger: string;
  status: string;
  attempts: number;
  nextAttemptAtMs: number | null;
  leaseOwner: string | null;
  leaseExpiresAtMs: number | null;
  finishedAtMs: number | null;
  error: string | null;
};

const msOrNull = (v: Date | string | null): number | null => (v === null ? null : v instanceof Date ? v.getTime() : Date.parse(v));

/** Every run of `jobId` (every run when null), in scheduled order. */
export function runsOf(database: Database, jobId: string | null): Promise<RunView[]> {
  return selectRuns(database, jobId === null ? sql`true` : sql`job_id = ${jobId}`);
}

/** One run by id. */
export async function runById(database: Database, runId: string): Promise<RunView> {
  const [r] = await selectRuns(database, sql`id = ${runId}`);
  if (!r) throw new Error(`no run ${runId}`);
  return r;
}

async function selectRuns(database: Database, where: SQL): Promise<RunView[]> {
  const rows = await query<Record<string, any>>(
    database.db,
    sql`select id, job_id, scheduled_for, trigger, status, attempts, next_attempt_at, lease_owner, lease_expires_at,
               finished_at, error
        from runs where ${where} order by scheduled_for, id`,
  );
  return rows.map((r) => ({
    id: r.id,
    jobId: r.job_id,
    scheduledForMs: msOrNull(r.scheduled_for)!,
    trigger: r.trigger,
    status: r.status,
    attempts: Number(r.attempts),
    nextAttemptAtMs: msOrNull(r.next_attempt_at),
    leaseOwner: r.lease_owner,
    leaseExpiresAtMs: msOrNull(r.lease_expires_at),
    finishedAtMs: msOrNull(r.finished_at),
    error: r.error,
  }));
}

/** The attempt log of a run, in order. */
export async function attemptsOf(
  database: Database,
  runId: string,
): Promise<{ attempt: number; responseStatus: number | null; errorClass: string | null; error: string | null }[]> {
  const rows = await query<Record<string, any>>(
    database.db,
    sql`select attempt, response_status, error_class, error from attempts where run_id = ${runId} order by attempt`,
  );
  return rows.map((r) => ({
    attempt: Number(r.attempt),
    responseStatus: r.response_status === null ? null : Number(r.response_status),
    errorClass: r.error_class,
    error: r.error,
  }));
}

/**
 * The hooks of a store test file's `describe` on `target`: before all tests a fresh store (clock: a ManualClock at T0
 * unless given) with one tenant, handed to `use`; before each test the attempts, runs and jobs deleted (nothing
 * cascades: schema.ts);
 * after all the store closed.
 */
export function useTestStore(target: DatabaseTarget, use: (store: TestStore, tenantId: string) => void, clock?: Clock): void {
  let store: TestStore | undefined;
  beforeAll(async () => {
    store = await openTestStore(target, clock);
    use(store, await createTestTenantIn(store.ctx));
  });
  afterAll(async () => {
    await store?.close();
  });
  beforeEach(async () => {
    await deleteAllJobs(store!.database);
  });
}

/** Deletes every job with its runs, their attempts and its `open_jobs` row (nothing cascades: schema.ts). */
export async function deleteAllJobs(database: Database): Promise<void> {
  for (const table of ['attempts', 'runs', 'open_jobs', 'jobs']) await database.db.execute(sql`delete from ${sql.identifier(table)}`);
}

/** Tenants `a` and `b`, made until they are in different buckets, each with two jobs whose first runs are due at T0. */
export async function tenantsInTwoBuckets(ctx: StoreContext): Promise<{ a: string; b: string }> {
  const a = await createTestTenantIn(ctx, 'a');
  let b = await createTestTenantIn(ctx, 'b');
  while (shardOf(b) === shardOf(a)) b = await createTestTenantIn(ctx, 'b');
  for (const tenant of [a, b]) for (let i = 0; i < 2; i++) await createJob(ctx, tenant, testJobSpec(T0), T0);
  return { a, b };
}

/**
 * Makes every update of a run in bucket `shard` (null: in any bucket) that matches `when` (a SQL condition on `new`)
 * fail, as a statement sent to a downed Citus worker would: a trigger on `runs` that raises. Called again, it replaces
 * the rule.
 */
export async function refuseRunUpdatesInBucket(database: Database, shard: number | null, when = 'true'): Promise<void> {
  await database.db.execute(
    sql.raw(`create or replace function test_refuse_update() returns trigger language plpgsql as $$
      begin
        if ${shard === null ? 'true' : `new.shard = ${shard}`} and (${when}) then raise exception 'test: bucket down'; end if;
        return new;
      end $$`),
  );
  await database.db.execute(
    sql`create or replace trigger test_refuse_update before update on runs for each row execute function test_refuse_update()`,
  );
}

/**
 * The outcome of attempt `run.attempt` of `run`, started at T0 and 5 ms long: a 200 success unless `o` says otherwise
 * (`FAILED_500` for a failed one).
 */
export function testOutcome(
  run: Pick<AttemptOutcome, 'shard' | 'runId' | 'jobId' | 'attempt'>,
  o: Partial<AttemptOutcome> = {},
): AttemptOutcome {
  return {
    shard: run.shard,
    runId: run.runId,
    jobId: run.jobId,
    attempt: run.attempt,
    startedAtMs: T0,
    finishedAtMs: T0 + 5,
    responseStatus: 200,
    responseBodyExcerpt: null,
    errorClass: null,
    error: null,
    runStatus: 'succeeded',
    nextAttemptAtMs: null,
    pauseReason: null,
    ...o,
  };
}

/** `testOutcome`'s fields for an attempt answered 500 that ends its run failed. */
export const FAILED_500 = {
  responseStatus: 500,
  errorClass: ERROR_CLASS.badStatus,
  error: 'status 500',
  runStatus: 'failed',
} as const satisfies Partial<AttemptOutcome>;
