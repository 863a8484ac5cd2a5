/**
 * What every system under test (Chime, pg-boss, graphile-worker) offers the workloads. One `BenchSystem` is one
 * configuration on one fresh database; the workloads create it, load it, start its worker process, watch it
 * finish, and stop it (which drops the database).
 */
import type { DatabaseFactory } from '../db.ts';

/**
 * The configurations measured: Chime with its defaults; each peer with its defaults, with its documented tuning, and
 * tuned with the same work per callback as Chime (`-samework`: signatures and an attempt row, peers/same-work.ts).
 */
export type SystemId =
  | 'chime'
  | 'pgboss'
  | 'pgboss-tuned'
  | 'pgboss-samework'
  | 'graphile'
  | 'graphile-tuned'
  | 'graphile-samework'
  | 'graphile-punctual';
export type Family = 'chime' | 'pgboss' | 'graphile';

export type SystemSpec = {
  id: SystemId;
  family: Family;
  /** Runs with the peer's documented tuning (false: out-of-the-box defaults). */
  tuned: boolean;
  /**
   * A same-work peer: tuned, and its handler does per callback what Chime does by default (a Standard Webhooks
   * signature, an Ed25519 JWT, an attempt row in a history table: peers/same-work.ts). False: a raw peer, whose
   * handler only POSTs.
   */
  sameWork: boolean;
  /**
   * Tuned, and polling as often as it takes to fire due runs as promptly as Chime does (graphile-worker's
   * `pollInterval`: peers/tuning.ts GRAPHILE_PUNCTUAL_POLL_MS): what a peer pays for Chime's punctuality. It runs the
   * steady workload only, and ratios compare Chime with it apart (`against: punctual`).
   */
  punctual?: boolean;
  label: string;
};

/** Runs per registration call while loading: Chime's `POST /v1/jobs/batch` maximum, used for the peers too. */
export const BATCH_SIZE = 1000;
/** Runs due before now + this count as the workload's; future rows of the scale workload (and calibration runs) are later. */
export const HORIZON_MS = 86_400_000;
/** Future rows (scale workload) and calibration runs are due from now + this (~10 years). */
export const FUTURE_OFFSET_MS = 10 * 365 * 86_400_000;
/** Rows per INSERT … SELECT when adding future rows. */
export const FUTURE_CHUNK = 1_000_000;

export const SYSTEMS: readonly SystemSpec[] = Object.freeze([
  { id: 'chime', family: 'chime', tuned: false, sameWork: false, label: 'Chime (defaults)' },
  { id: 'pgboss', family: 'pgboss', tuned: false, sameWork: false, label: 'pg-boss (defaults)' },
  { id: 'pgboss-tuned', family: 'pgboss', tuned: true, sameWork: false, label: 'pg-boss (tuned)' },
  { id: 'pgboss-samework', family: 'pgboss', tuned: true, sameWork: true, label: 'pg-boss (tuned, same work)' },
  { id: 'graphile', family: 'graphile', tuned: false, sameWork: false, label: 'graphile-worker (defaults)' },
  { id: 'graphile-tuned', family: 'graphile', tuned: true, sameWork: false, label: 'graphile-worker (tuned)' },
  { id: 'graphile-samework', family: 'graphile', tuned: true, sameWork: true, label: 'graphile-worker (tuned, same work)' },
  { id: 'graphile-punctual', family: 'graphile', tuned: true, sameWork: false, punctual: true, label: 'graphile-worker (tuned, punctual)' },
]);

/** Shared by every system of a bench run. */
export type BenchContext = {
  databases: DatabaseFactory;
  /** Template database per family, with its schema installed. */
  templates: Record<Family, string>;
  /** Where callbacks go (the bench receiver's `/hook`). */
  callbackUrl: string;
  /** Progress lines (stderr). */
  log: (line: string) => void;
};

/** Counts from the system's own records of the due runs, read after a workload. */
export type Tally = {
  /**
   * Recorded as done: Chime runs `succeeded`, pg-boss jobs `completed`, graphile jobs deleted; for the same-work
   * peers, only those jobs that also have an attempt row in the history table.
   */
  completed: number;
  /** Recorded as failed for good. */
  failed: number;
  /** Attempts beyond the first (retries), where the system keeps them. */
  retries: number | null;
  /** Something the figures do not show (e.g. jobs done without an attempt row), for the result's notes. */
  notes?: string[];
};

export type EnqueueResult = { count: number; ms: number; jobsPerSecond: number };

export type EnqueueOptions = {
  /** Callback URL of run i: `callbackUrls[i % length]` (default: every run to the context's `callbackUrl`). */
  callbackUrls?: readonly string[];
  /** Chime: the API key of the tenant that registers (default: the bench tenant's). The peers have no tenants. */
  apiKey?: string;
};

export interface BenchSystem {
  readonly spec: SystemSpec;
  readonly dbName: string;
  readonly dbUrl: string;
  /**
   * Registers one run per element of `dueAtMs` (epoch ms; at or before now means due at once), in order, through
   * the system's registration path: Chime's `POST /v1/jobs/batch`, pg-boss `insert`, graphile-worker `addJobs`.
   * The peers carry a run's callback URL in its payload (`url`) when `o.callbackUrls` is given.
   * @throws Error when any item is refused
   */
  enqueue(dueAtMs: readonly number[], o?: EnqueueOptions): Promise<EnqueueResult>;
  /**
   * Spawns the worker process (Chime: `serve --role dispatcher`), awaits `onSpawned(pid)` at once (before the
   * process can have done any work: it still has to load), and resolves once the worker is ready to work.
   */
  startWorker(onSpawned?: (pid: number) => Promise<void>): Promise<void>;
  /** Pid of the worker process (null before `startWorker`). */
  workerPid(): number | null;
  /** Due runs not yet recorded as finished (cheap: index-only, safe to poll every 100 ms). */
  remaining(): Promise<number>;
  tally(): Promise<Tally>;
  /** Adds `count` runs due ~10 years from now straight in SQL (`generate_series`), then VACUUM ANALYZE. */
  addFutureRows(count: number): Promise<void>;
  /** Statements the harness has sent to this system's database so far (left out of its statements per callback). */
  harnessStatements(): number;
  /** Pids of this database's PostgreSQL client backends except the harness's own. */
  backendPids(): Promise<number[]>;
  /** Stops every process it started and drops its database. */
  stop(): Promise<void>;
}
