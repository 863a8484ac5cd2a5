/**
 * Chime under the benchmark: the real service in child processes (`node dist/node/cli.mjs serve`, the build), an
 * `--role api` process for registration (the per-tenant rate limit lifted so that one tenant can load the runs) and a
 * `--role dispatcher` process with Chime's defaults, on a fresh PostgreSQL database.
 */

import { request } from 'undici';
import { freePort } from '../../support/chime-process.ts';
import { clientBackendPids, cloneRows, connectCounted, type Sql } from '../db.ts';
import { CHIME_CLI, type NodeProcess, spawnNode } from './process.ts';
import {
  BATCH_SIZE,
  type BenchContext,
  type BenchSystem,
  type EnqueueOptions,
  type EnqueueResult,
  FUTURE_CHUNK,
  FUTURE_OFFSET_MS,
  HORIZON_MS,
  type SystemSpec,
  type Tally,
} from './types.ts';

/** Base64 of 32 fixed bytes: the bench's CHIME_ENCRYPTION_KEY. */
export const BENCH_ENCRYPTION_KEY = Buffer.alloc(32, 9).toString('base64');
export const BENCH_ADMIN_TOKEN = 'bench-admin-token-0123456789';
/** Batch requests in flight at once while loading. */
const BATCH_CONCURRENCY = 2;
/**
 * Future jobs per tenant in the scale workload. The future rows are other tenants' long-lived schedules, each tenant
 * well under the default active-jobs quota (CHIME_MAX_ACTIVE_JOBS, 100,000): were they the bench tenant's, its own
 * registrations of the runs to drain would be refused (409 quota_exceeded) from 100,000 future rows on.
 */
const FUTURE_JOBS_PER_TENANT = 10_000;

/** A tenant made by `POST /v1/tenants`. */
export type ChimeTenant = { tenantId: string; apiKey: string };

/** Environment every Chime process of the bench gets. */
function baseEnv(dbUrl: string): Record<string, string> {
  return {
    DATABASE_URL: dbUrl,
    CHIME_ENCRYPTION_KEY: BENCH_ENCRYPTION_KEY,
    CHIME_MIGRATE: 'true',
    CHIME_ALLOW_PRIVATE_DESTINATIONS: 'true',
    CHIME_LOG_LEVEL: 'warn',
  };
}

/** A job body (API.md "Jobs") whose one run is due at `dueAtMs` (at once when that is not in the future). */
export function chimeJobBody(callbackUrl: string, dueAtMs: number, n: number): object {
  const schedule = dueAtMs > Date.now() ? { type: 'once', at: new Date(dueAtMs).toISOString() } : { type: 'delay', delayMs: 0 };
  return { schedule, callback: { url: callbackUrl }, payload: { n } };
}

export class ChimeSystem implements BenchSystem {
  private api: NodeProcess | null = null;
  private dispatcher: NodeProcess | null = null;
  private sql: Sql;
  /** Statements the harness sent to this system's database (`db-work.ts` leaves them out). */
  readonly harnessStatements: () => number;
  apiUrl = '';
  apiKey = '';
  /** The bench tenant's id (from its creation). */
  tenantId = '';

  private constructor(
    readonly spec: SystemSpec,
    private readonly ctx: BenchContext,
    readonly dbName: string,
    readonly dbUrl: string,
  ) {
    ({ sql: this.sql, statements: this.harnessStatements } = connectCounted(dbUrl));
  }

  /** Migrates the template database (`chime migrate`). */
  static async install(dbUrl: string): Promise<void> {
    const p = spawnNode(CHIME_CLI, ['migrate'], baseEnv(dbUrl));
    const code = await new Promise<number | null>((r) => p.child.once('exit', r));
    if (code !== 0) throw new Error(`chime migrate exited with ${code}: ${p.output()}`);
  }

  /** A fresh database, its API process ready and a tenant created (the dispatcher is not started). */
  static async create(spec: SystemSpec, ctx: BenchContext): Promise<ChimeSystem> {
    const db = await ctx.databases.create('chime', ctx.templates.chime);
    const s = new ChimeSystem(spec, ctx, db.name, db.url);
    try {
      await s.startApi();
    } catch (err) {
      await s.stop();
      throw err;
    }
    return s;
  }

  /** Pid of the API process. */
  apiPid(): number | null {
    return this.api?.pid ?? null;
  }

  private async startApi(): Promise<void> {
    const port = await freePort();
    this.api = spawnNode(CHIME_CLI, ['serve', '--role', 'api'], {
      ...baseEnv(this.dbUrl),
      PORT: String(port),
      CHIME_ADMIN_TOKEN: BENCH_ADMIN_TOKEN,
      // The per-tenant rate limit is a policy (100 requests/s by default), not a speed setting: lifted so that one
      // tenant can load the runs. Everything else, the active-jobs quota included, is the default.
      CHIME_RATE_LIMIT_PER_SECOND: '0',
    });
    this.apiUrl = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (this.api.exited()) throw new Error(`chime api exited: ${this.api.output()}`);
      const ok = await fetch(`${this.apiUrl}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`chime api not ready within 60 s: ${this.api.output()}`);
      await sleep(100);
    }
    const bench = await this.createTenant('bench');
    this.apiKey = bench.apiKey;
    this.tenantId = bench.tenantId;
  }

  /** Creates a tenant (`POST /v1/tenants` with the admin token), with the defaults every tenant gets. */
  async createTenant(name: string): Promise<ChimeTenant> {
    const res = await fetch(`${this.apiUrl}/v1/tenants`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_ADMIN_TOKEN}` },
      body: JSON.stringify({ name }),
    });
    const body = (await res.json()) as { apiKey: string; tenant: { tenantId: string } };
    if (res.status !== 201) throw new Error(`tenant creation failed: ${res.status} ${JSON.stringify(body)}`);
    return { tenantId: body.tenant.tenantId, apiKey: body.apiKey };
  }

  /**
   * `POST` to the API with `apiKey` (default: the bench tenant's); returns status and parsed body. Through undici's
   * `request`, as the peers' harness calls their libraries directly: `fetch` costs this process (and so the cores the
   * measured processes share) several times the CPU per request here.
   */
  async post(path: string, body: unknown, apiKey = this.apiKey): Promise<{ status: number; body: any }> {
    const res = await request(`${this.apiUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify(body),
    });
    const text = await res.body.text();
    return { status: res.statusCode, body: text ? JSON.parse(text) : null };
  }

  async enqueue(dueAtMs: readonly number[], o: EnqueueOptions = {}): Promise<EnqueueResult> {
    const started = Date.now();
    const urls = o.callbackUrls?.length ? o.callbackUrls : [this.ctx.callbackUrl];
    const batches: number[][] = [];
    for (let i = 0; i < dueAtMs.length; i += BATCH_SIZE) batches.push(range(i, Math.min(i + BATCH_SIZE, dueAtMs.length)));
    let next = 0;
    const worker = async () => {
      while (next < batches.length) {
        const idx = batches[next++]!;
        const jobs = idx.map((i) => chimeJobBody(urls[i % urls.length]!, dueAtMs[i]!, i));
        const r = await this.post('/v1/jobs/batch', { jobs }, o.apiKey);
        if (r.status !== 200) throw new Error(`POST /v1/jobs/batch answered ${r.status}: ${JSON.stringify(r.body).slice(0, 500)}`);
        const bad = (r.body.results as { status: number; problem?: unknown }[]).find((x) => x.status !== 201);
        if (bad) throw new Error(`POST /v1/jobs/batch refused a job: ${JSON.stringify(bad).slice(0, 500)}`);
      }
    };
    await Promise.all(Array.from({ length: BATCH_CONCURRENCY }, worker));
    const ms = Date.now() - started;
    return { count: dueAtMs.length, ms, jobsPerSecond: dueAtMs.length / (ms / 1000) };
  }

  async startWorker(onSpawned?: (pid: number) => Promise<void>): Promise<void> {
    this.dispatcher = spawnNode(CHIME_CLI, ['serve', '--role', 'dispatcher'], baseEnv(this.dbUrl));
    await onSpawned?.(this.dispatcher.pid);
    // The dispatcher has no HTTP port; it is ready once it LISTENs for due-run notifications (dispatcher.start()).
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (this.dispatcher.exited()) throw new Error(`chime dispatcher exited: ${this.dispatcher.output()}`);
      const [row] = await this.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and query ilike 'listen%chime_runs%'`;
      if (row!.n > 0) return;
      if (Date.now() > deadline) throw new Error(`chime dispatcher not listening within 60 s: ${this.dispatcher.output()}`);
      await sleep(50);
    }
  }

  workerPid(): number | null {
    return this.dispatcher?.pid ?? null;
  }

  async remaining(): Promise<number> {
    const horizon = new Date(Date.now() + HORIZON_MS);
    // The due index holds the waiting runs and the leased ones (their attempt's due time), whatever the size of the table.
    const [row] = await this.sql<{ n: number }[]>`select count(*)::int as n from runs where next_attempt_at < ${horizon}`;
    return row!.n;
  }

  async tally(): Promise<Tally> {
    const horizon = new Date(Date.now() + HORIZON_MS);
    const [row] = await this.sql<{ completed: number; failed: number; attempts: number; finished: number }[]>`
      select count(*) filter (where status = 'succeeded')::int as completed,
             count(*) filter (where status = 'failed')::int as failed,
             count(*) filter (where status in ('succeeded', 'failed'))::int as finished,
             (select count(*) from attempts)::int as attempts
      from runs where scheduled_for < ${horizon}`;
    return { completed: row!.completed, failed: row!.failed, retries: Math.max(0, row!.attempts - row!.finished) };
  }

  async addFutureRows(count: number): Promise<void> {
    if (count <= 0) return;
    const base = Date.now() + FUTURE_OFFSET_MS;
    const tpl = await this.post('/v1/jobs', chimeJobBody(this.ctx.callbackUrl, base, -1));
    if (tpl.status !== 201) throw new Error(`template job refused: ${tpl.status} ${JSON.stringify(tpl.body)}`);
    const jobId = tpl.body.jobId as string;
    const at = `(to_timestamp(${base / 1000}) + g * interval '1 second')`;
    // Tenants 1..N, copies of the bench tenant; future job g belongs to tenant 1 + (g - 1) / FUTURE_JOBS_PER_TENANT.
    const tenants = Math.ceil(count / FUTURE_JOBS_PER_TENANT);
    const cloned = await cloneRows(
      this.sql,
      { schema: 'public', name: 'tenants' },
      `t.id = '${this.tenantId}'`,
      {
        shard: `chime_shard_of(md5('t' || g)::uuid)`,
        id: `md5('t' || g)::uuid`,
        name: `'future-' || g`,
      },
      1,
      tenants,
    );
    if (cloned !== tenants) throw new Error(`copied the bench tenant ${cloned} times, not ${tenants}: no tenant ${this.tenantId}`);
    const tenantOf = `md5('t' || (1 + (g - 1) / ${FUTURE_JOBS_PER_TENANT}))::uuid`;
    for (let from = 1; from <= count; from += FUTURE_CHUNK) {
      const to = Math.min(count, from + FUTURE_CHUNK - 1);
      await cloneRows(
        this.sql,
        { schema: 'public', name: 'jobs' },
        `t.id = '${jobId}'`,
        {
          shard: `chime_shard_of(${tenantOf})`,
          id: `md5('j' || g)::uuid`,
          tenant_id: tenantOf,
          next_run_at: at,
          created_at: 'now()',
          updated_at: 'now()',
        },
        from,
        to,
      );
      await cloneRows(
        this.sql,
        { schema: 'public', name: 'runs' },
        `t.job_id = '${jobId}'`,
        {
          shard: `chime_shard_of(${tenantOf})`,
          id: `md5('r' || g)::uuid`,
          tenant_id: tenantOf,
          job_id: `md5('j' || g)::uuid`,
          scheduled_for: at,
          next_attempt_at: at,
          created_at: 'now()',
        },
        from,
        to,
      );
      this.ctx.log(`  chime: ${to.toLocaleString('en')} future runs`);
    }
    await this.sql.unsafe('vacuum analyze jobs, runs');
  }

  backendPids(): Promise<number[]> {
    return clientBackendPids(this.sql);
  }

  async stop(): Promise<void> {
    await Promise.all([this.dispatcher?.stop(), this.api?.stop()]);
    await this.sql.end({ timeout: 5 }).catch(() => {});
    await this.ctx.databases.drop(this.dbName);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
