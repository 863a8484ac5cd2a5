/**
 * graphile-worker 0.18 under the benchmark: jobs are added from the harness with `addJobs` (`runAt` = the due
 * time) and run by peers/graphile-worker.ts in its own process, with graphile-worker's defaults or its documented
 * tuning, or, for `graphile-samework`, tuned and doing Chime's work per callback (BENCH_SAME_WORK=1:
 * peers/same-work.ts). A job is recorded done when graphile-worker deletes it (its behaviour on success); a same-work
 * job, when it also has its successful attempt row in the history table (systems/history.ts).
 */
import { makeWorkerUtils, runMigrations, type WorkerUtils } from 'graphile-worker';
import { clientBackendPids, cloneRows, connectCounted, type Sql } from '../db.ts';
import { payload } from '../peers/post.ts';
import { GRAPHILE_PUNCTUAL_POLL_MS } from '../peers/tuning.ts';
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
export const GRAPHILE_WORKER_SCRIPT = 'test/bench/peers/graphile-worker.ts';

/** The task identifier of every bench job (peers/graphile-worker.ts). */
export const GRAPHILE_TASK = 'bench_post';
const ADD_CONCURRENCY = 2;

export class GraphileSystem implements BenchSystem {
  private worker: NodeProcess | null = null;
  private readonly sql: Sql;
  /** Statements the harness sent to this system's database (`db-work.ts` leaves them out). */
  readonly harnessStatements: () => number;
  private utils: WorkerUtils | null = null;
  /** Ids above this are the workload's jobs (below: the scale workload's future rows), read by primary key. */
  private boundaryId = '0';
  /** Jobs added that fall due within the horizon. */
  private dueAdded = 0;

  private constructor(
    readonly spec: SystemSpec,
    private readonly ctx: BenchContext,
    readonly dbName: string,
    readonly dbUrl: string,
  ) {
    ({ sql: this.sql, statements: this.harnessStatements } = connectCounted(dbUrl));
  }

  /** Applies graphile-worker's migrations to the template database and creates the same-work peer's history table. */
  static async install(dbUrl: string): Promise<void> {
    await runMigrations({ connectionString: dbUrl });
    await installHistory(dbUrl);
  }

  static async create(spec: SystemSpec, ctx: BenchContext): Promise<GraphileSystem> {
    const db = await ctx.databases.create(spec.id.replace('-', '_'), ctx.templates.graphile);
    const s = new GraphileSystem(spec, ctx, db.name, db.url);
    try {
      s.utils = await makeWorkerUtils({ connectionString: db.url });
    } catch (err) {
      await s.stop();
      throw err;
    }
    return s;
  }

  /** The harness's worker utils (addJob/addJobs). */
  get workerUtils(): WorkerUtils {
    return this.utils!;
  }

  async enqueue(dueAtMs: readonly number[], o: EnqueueOptions = {}): Promise<EnqueueResult> {
    const started = Date.now();
    const urls = o.callbackUrls?.length ? o.callbackUrls : null;
    const horizon = started + HORIZON_MS;
    let next = 0;
    const worker = async () => {
      while (next < dueAtMs.length) {
        const from = next;
        next = Math.min(next + BATCH_SIZE, dueAtMs.length);
        const specs = [];
        for (let i = from; i < next; i++) {
          const due = dueAtMs[i]!;
          specs.push({ identifier: GRAPHILE_TASK, payload: payload(i, due, urls), runAt: new Date(due) });
        }
        await this.workerUtils.addJobs(specs);
      }
    };
    await Promise.all(Array.from({ length: ADD_CONCURRENCY }, worker));
    this.dueAdded += dueAtMs.filter((t) => t < horizon).length;
    const ms = Date.now() - started;
    return { count: dueAtMs.length, ms, jobsPerSecond: dueAtMs.length / (ms / 1000) };
  }

  async startWorker(onSpawned?: (pid: number) => Promise<void>): Promise<void> {
    this.worker = spawnNode(builtPeer(GRAPHILE_WORKER_SCRIPT), [], {
      BENCH_DATABASE_URL: this.dbUrl,
      BENCH_CALLBACK_URL: this.ctx.callbackUrl,
      BENCH_TUNED: this.spec.tuned ? '1' : '0',
      BENCH_SAME_WORK: this.spec.sameWork ? '1' : '0',
      BENCH_POLL_INTERVAL_MS: this.spec.punctual ? String(GRAPHILE_PUNCTUAL_POLL_MS) : '',
    });
    await onSpawned?.(this.worker.pid);
    await this.worker.waitForLine((l) => l.trim() === 'ready', 60_000, 'the graphile worker to be ready');
  }

  workerPid(): number | null {
    return this.worker?.pid ?? null;
  }

  async remaining(): Promise<number> {
    const horizon = new Date(Date.now() + HORIZON_MS);
    const [row] = await this.sql<{ n: number }[]>`
      select count(*)::int as n from graphile_worker._private_jobs where id > ${this.boundaryId}::bigint and run_at < ${horizon}`;
    return row!.n;
  }

  async tally(): Promise<Tally> {
    const horizon = new Date(Date.now() + HORIZON_MS);
    const [row] = await this.sql<{ left: number; failed: number }[]>`
      select count(*)::int as left, count(*) filter (where attempts >= max_attempts)::int as failed
      from graphile_worker._private_jobs where id > ${this.boundaryId}::bigint and run_at < ${horizon}`;
    // Completed jobs are deleted, so their attempts are not kept.
    const queue: Tally = { completed: this.dueAdded - row!.left, failed: row!.failed, retries: null };
    return this.spec.sameWork ? withHistory(this.sql, queue) : queue;
  }

  async addFutureRows(count: number): Promise<void> {
    if (count <= 0) return;
    const base = Date.now() + FUTURE_OFFSET_MS;
    const tpl = await this.workerUtils.addJob(
      GRAPHILE_TASK,
      { n: -1, scheduledFor: new Date(base).toISOString() },
      { runAt: new Date(base) },
    );
    const at = `(to_timestamp(${base / 1000}) + g * interval '1 second')`;
    for (let from = 1; from <= count; from += FUTURE_CHUNK) {
      const to = Math.min(count, from + FUTURE_CHUNK - 1);
      await cloneRows(
        this.sql,
        { schema: 'graphile_worker', name: '_private_jobs' },
        `t.id = ${tpl.id}`,
        {
          run_at: at,
          created_at: 'now()',
          updated_at: 'now()',
        },
        from,
        to,
      );
      this.ctx.log(`  ${this.spec.id}: ${to.toLocaleString('en')} future jobs`);
    }
    await this.sql.unsafe('vacuum analyze graphile_worker._private_jobs');
    const [row] = await this.sql<{ max: string }[]>`select coalesce(max(id), 0)::text as max from graphile_worker._private_jobs`;
    this.boundaryId = row!.max;
  }

  backendPids(): Promise<number[]> {
    return clientBackendPids(this.sql);
  }

  async stop(): Promise<void> {
    await this.worker?.stop();
    await Promise.resolve(this.utils?.release()).catch(() => {});
    await this.sql.end({ timeout: 5 }).catch(() => {});
    await this.ctx.databases.drop(this.dbName);
  }
}
