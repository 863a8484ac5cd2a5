/**
 * pg-boss 12 under the benchmark: jobs are sent from the harness with `insert` (`startAfter` = the due time), and
 * worked by peers/pgboss-worker.ts in its own process, with pg-boss's defaults or its documented tuning, or, for
 * `pgboss-samework`, tuned and doing Chime's work per callback (BENCH_SAME_WORK=1: peers/same-work.ts).
 * A job is recorded done when its state is `completed` (kept 7 days by default, so it can be counted); a same-work
 * job, when it also has its successful attempt row in the history table (systems/history.ts).
 */
import { randomUUID } from 'node:crypto';
import { PgBoss } from 'pg-boss';
import { clientBackendPids, cloneRows, connectCounted, type Sql } from '../db.ts';
import { payload } from '../peers/post.ts';
import { installHistory, withHistory } from './history.ts';
import { builtPeer, type NodeProcess, spawnNode } from './process.ts';
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

/** The worker process's script (bundled before the run by `buildSystems`). */
export const PGBOSS_WORKER_SCRIPT = 'test/bench/peers/pgboss-worker.ts';

export const PGBOSS_QUEUE = 'bench';
/** Inserts in flight at once while loading (as for Chime's batches). */
const INSERT_CONCURRENCY = 2;
/**
 * Ids of the bench's due jobs start with this, so `remaining()` reads them by a range of the primary key
 * (name, id) instead of scanning millions of future rows (those get ids starting with 0).
 */
const DUE_ID_PREFIX = 'ffffffff';
const DUE_ID_MIN = 'ffffffff-0000-0000-0000-000000000000';

/** A pg-boss client for the harness: sends only; no maintenance, no cron, no migrations. */
export function harnessBoss(dbUrl: string): PgBoss {
  const boss = new PgBoss({ connectionString: dbUrl, supervise: false, schedule: false, migrate: false });
  boss.on('error', (err) => console.error('pg-boss (harness) error:', err));
  return boss;
}

export class PgBossSystem implements BenchSystem {
  private worker: NodeProcess | null = null;
  private readonly sql: Sql;
  /** Statements the harness sent to this system's database (`db-work.ts` leaves them out). */
  readonly harnessStatements: () => number;
  /** Started by `create`. */
  readonly boss: PgBoss;

  private constructor(
    readonly spec: SystemSpec,
    private readonly ctx: BenchContext,
    readonly dbName: string,
    readonly dbUrl: string,
  ) {
    ({ sql: this.sql, statements: this.harnessStatements } = connectCounted(dbUrl));
    this.boss = harnessBoss(dbUrl);
  }

  /** Installs pg-boss's schema, the bench queue and the same-work peer's history table in the template database. */
  static async install(dbUrl: string): Promise<void> {
    const boss = new PgBoss({ connectionString: dbUrl, supervise: false, schedule: false });
    boss.on('error', (err) => console.error('pg-boss (install) error:', err));
    await boss.start();
    await boss.createQueue(PGBOSS_QUEUE);
    await boss.stop({ graceful: false });
    await installHistory(dbUrl);
  }

  static async create(spec: SystemSpec, ctx: BenchContext): Promise<PgBossSystem> {
    const db = await ctx.databases.create(spec.id.replace('-', '_'), ctx.templates.pgboss);
    const s = new PgBossSystem(spec, ctx, db.name, db.url);
    try {
      await s.boss.start();
    } catch (err) {
      await s.stop();
      throw err;
    }
    return s;
  }

  async enqueue(dueAtMs: readonly number[], o: EnqueueOptions = {}): Promise<EnqueueResult> {
    const started = Date.now();
    const urls = o.callbackUrls?.length ? o.callbackUrls : null;
    let next = 0;
    const worker = async () => {
      while (next < dueAtMs.length) {
        const from = next;
        next = Math.min(next + BATCH_SIZE, dueAtMs.length);
        const jobs = [];
        for (let i = from; i < next; i++) {
          const due = dueAtMs[i]!;
          jobs.push({
            id: DUE_ID_PREFIX + randomUUID().slice(8),
            data: payload(i, due, urls),
            startAfter: new Date(due),
          });
        }
        await this.boss.insert(PGBOSS_QUEUE, jobs);
      }
    };
    await Promise.all(Array.from({ length: INSERT_CONCURRENCY }, worker));
    const ms = Date.now() - started;
    return { count: dueAtMs.length, ms, jobsPerSecond: dueAtMs.length / (ms / 1000) };
  }

  async startWorker(onSpawned?: (pid: number) => Promise<void>): Promise<void> {
    this.worker = spawnNode(builtPeer(PGBOSS_WORKER_SCRIPT), [], {
      BENCH_DATABASE_URL: this.dbUrl,
      BENCH_CALLBACK_URL: this.ctx.callbackUrl,
      BENCH_QUEUE: PGBOSS_QUEUE,
      BENCH_TUNED: this.spec.tuned ? '1' : '0',
      BENCH_SAME_WORK: this.spec.sameWork ? '1' : '0',
    });
    await onSpawned?.(this.worker.pid);
    await this.worker.waitForLine((l) => l.trim() === 'ready', 60_000, 'the pg-boss worker to be ready');
  }

  workerPid(): number | null {
    return this.worker?.pid ?? null;
  }

  async remaining(): Promise<number> {
    const horizon = new Date(Date.now() + HORIZON_MS);
    const [row] = await this.sql<{ n: number }[]>`
      select count(*)::int as n from pgboss.job
      where name = ${PGBOSS_QUEUE} and id >= ${DUE_ID_MIN}::uuid and start_after < ${horizon}
        and state in ('created', 'retry', 'active')`;
    return row!.n;
  }

  async tally(): Promise<Tally> {
    const horizon = new Date(Date.now() + HORIZON_MS);
    const [row] = await this.sql<{ completed: number; failed: number; retries: number }[]>`
      select count(*) filter (where state = 'completed')::int as completed,
             count(*) filter (where state = 'failed')::int as failed,
             coalesce(sum(retry_count), 0)::int as retries
      from pgboss.job where name = ${PGBOSS_QUEUE} and id >= ${DUE_ID_MIN}::uuid and start_after < ${horizon}`;
    const queue: Tally = { completed: row!.completed, failed: row!.failed, retries: row!.retries };
    return this.spec.sameWork ? withHistory(this.sql, queue) : queue;
  }

  async addFutureRows(count: number): Promise<void> {
    if (count <= 0) return;
    const base = Date.now() + FUTURE_OFFSET_MS;
    const tplId = await this.boss.send(PGBOSS_QUEUE, { n: -1, scheduledFor: new Date(base).toISOString() }, { startAfter: new Date(base) });
    const at = `(to_timestamp(${base / 1000}) + g * interval '1 second')`;
    for (let from = 1; from <= count; from += FUTURE_CHUNK) {
      const to = Math.min(count, from + FUTURE_CHUNK - 1);
      await cloneRows(
        this.sql,
        { schema: 'pgboss', name: 'job' },
        `t.name = '${PGBOSS_QUEUE}' and t.id = '${tplId}'`,
        {
          id: `('0' || substr(md5('p' || g), 2))::uuid`,
          start_after: at,
          created_on: 'now()',
        },
        from,
        to,
      );
      this.ctx.log(`  ${this.spec.id}: ${to.toLocaleString('en')} future jobs`);
    }
    await this.sql.unsafe('vacuum analyze pgboss.job');
  }

  backendPids(): Promise<number[]> {
    return clientBackendPids(this.sql);
  }

  async stop(): Promise<void> {
    await this.worker?.stop();
    await this.boss.stop({ graceful: false }).catch(() => {});
    await this.sql.end({ timeout: 5 }).catch(() => {});
    await this.ctx.databases.drop(this.dbName);
  }
}
