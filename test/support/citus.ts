/**
 * A throwaway Citus cluster for the tests that need one (`CHIME_TEST_CITUS=1`; CI sets it): a coordinator and two
 * workers started with `../shared/citus/start-cluster.sh` (which installs Citus into this machine's PostgreSQL 15 when
 * missing) in a temp dir on free ports, and stopped with `stop-cluster.sh`, which removes the dir.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { freePortsBelowEphemeral } from './chime-process.ts';
import { descendantsOf, isRunning, killProcessTree } from './chime-run.ts';

const run = promisify(execFile);

/** The folder of the Citus build and its scripts (`CHIME_CITUS_DIR`, default the workspace's `shared/citus`). */
export const CITUS_DIR = process.env.CHIME_CITUS_DIR ?? new URL('../../../shared/citus', import.meta.url).pathname;

/**
 * Whether the Citus tests run: `CHIME_TEST_CITUS=1` (CI) runs test/citus and the suites that take `WITH_CITUS`;
 * `CHIME_TEST_CITUS=all` runs every database test on Citus as well (a cluster per test file: slow, for a change to the
 * store).
 */
export const CITUS_TESTS = process.env.CHIME_TEST_CITUS === '1' || process.env.CHIME_TEST_CITUS === 'all';

/** `CHIME_TEST_CITUS=all`: `DATABASE_TARGETS` includes Citus. */
export const CITUS_EVERYWHERE = process.env.CHIME_TEST_CITUS === 'all';

export type CitusCluster = {
  /** postgres:// URL of the coordinator (database `postgres`). */
  url: string;
  /** The coordinator's port. */
  coordinatorPort: number;
  /** The workers' ports. */
  workerPorts: number[];
  /** The postmaster's pid of the server on `port` (its `postmaster.pid`), whose children are that node's backends. */
  postmasterPid(port: number): Promise<number>;
  /**
   * Stops the server on `port` at once, as a crash: SIGQUIT to its postmaster (what `pg_ctl -m immediate` sends: no
   * shutdown checkpoint), then SIGKILL to it and its backends if they outlive 30 s.
   * @throws when they outlive the SIGKILL by 30 s too
   */
  killNode(port: number): Promise<void>;
  /** Starts the server on `port` again (it recovers from its WAL) and resolves once it accepts connections. */
  startNode(port: number): Promise<void>;
  /** The port of the worker holding bucket `shard` (Citus's placement of its shard of `runs`), asked of the coordinator. */
  workerOf(shard: number): Promise<number>;
  /** Stops every node and removes the cluster's folder. */
  stop(): Promise<void>;
};

const PG_CTL = '/usr/lib/postgresql/15/bin/pg_ctl';

/** Runs pg_ctl as the servers' user (`postgres` when this process is root, as start-cluster.sh does). */
function pgCtl(args: string[]): Promise<unknown> {
  const asRoot = process.getuid?.() === 0;
  return run(asRoot ? 'runuser' : PG_CTL, asRoot ? ['-u', 'postgres', '--', PG_CTL, ...args] : args, { timeout: 60_000 });
}

/**
 * Starts a coordinator and `workers` workers on consecutive ports, all free when picked. Another process can take
 * one between the pick and the start: then the half-started cluster is removed and the start tried again on other
 * ports, three times in all.
 * @throws the script's error of the last try
 */
export async function startCitusCluster(workers = 2): Promise<CitusCluster> {
  for (let attempt = 1; ; attempt++) {
    // A new folder directly in the temp dir, made by the script (owned by the servers' user when run as root: a
    // folder from mkdtemp is private to its creator, and the servers run as postgres).
    const dir = join(tmpdir(), `chime-citus-${randomBytes(6).toString('hex')}`);
    const port = await freePortsBelowEphemeral(1 + workers);
    try {
      const { stdout } = await run(join(CITUS_DIR, 'start-cluster.sh'), [dir, String(port), String(workers)], { timeout: 120_000 });
      return clusterAt(dir, port, workers, stdout.trim().split('\n').pop()!);
    } catch (err) {
      await run(join(CITUS_DIR, 'stop-cluster.sh'), [dir], { timeout: 60_000 }).catch(() => {});
      if (attempt >= 3) throw err;
    }
  }
}

/** Resolves true once none of `pids` runs (zombies count as gone), false if some still do after `timeoutMs`. */
async function gone(pids: number[], timeoutMs: number): Promise<boolean> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    if (!pids.some(isRunning)) return true;
  }
  return !pids.some(isRunning);
}

function clusterAt(dir: string, port: number, workers: number, url: string): CitusCluster {
  const nodeDir = (p: number) => join(dir, `n${p}`);
  const readPostmasterPid = async (p: number) => Number((await readFile(join(nodeDir(p), 'postmaster.pid'), 'utf8')).split('\n')[0]);
  return {
    url,
    coordinatorPort: port,
    workerPorts: Array.from({ length: workers }, (_, i) => port + 1 + i),
    postmasterPid: (p) => readPostmasterPid(p),
    killNode: async (p) => {
      // SIGQUIT is what `pg_ctl -m immediate stop` sends; sent here so that a server slow to go (a CI run once saw
      // pg_ctl still waiting after 60 s, output empty) is described and then SIGKILLed, with its backends, as a crash.
      const pid = await readPostmasterPid(p);
      const backends = descendantsOf(pid);
      process.kill(pid, 'SIGQUIT');
      if (await gone([pid, ...backends], 30_000)) return;
      const left = [pid, ...backends].filter(isRunning);
      console.warn(`citus: the server on port ${p} (pid ${pid}) outlived SIGQUIT by 30 s; SIGKILL to ${left.join(', ')}`);
      for (const q of left) killProcessTree(q);
      if (!(await gone(left, 30_000))) throw new Error(`citus: pids ${left.filter(isRunning).join(', ')} outlived SIGKILL by 30 s`);
      // A SIGKILLed postmaster leaves its lock file, naming a pid that stays a zombie here (this sandbox's init does
      // not reap orphans), and PostgreSQL refuses to start beside a lock file whose pid exists: it is stale, remove it.
      await rm(join(nodeDir(p), 'postmaster.pid'), { force: true });
    },
    startNode: async (p) => {
      // A start right after a crash sometimes fails here (seen twice, the server's log gone with the cluster): it is
      // tried again a few times, and the last failure carries the log's end.
      const log = join(dir, `n${p}.log`);
      for (let attempt = 1; ; attempt++) {
        try {
          await pgCtl(['-D', nodeDir(p), '-l', log, '-w', 'start']);
          return;
        } catch (err) {
          const tail = (await readFile(log, 'utf8').catch(() => '')).split('\n').slice(-15).join('\n');
          if (attempt >= 3) throw new Error(`${(err as Error).message}\n--- ${log}, last lines:\n${tail}`);
          console.warn(`citus: starting the server on port ${p} failed (try ${attempt}); again in 2 s. Its log ends:\n${tail}`);
          await new Promise((r) => setTimeout(r, 2_000));
        }
      }
    },
    workerOf: async (shard) => {
      const sql = postgres(url, { max: 1, onnotice: () => {} });
      try {
        const [row] = await sql<{ port: number }[]>`
          select nodeport::int as port from citus_shards
          where table_name = 'runs'::regclass and shardid = get_shard_id_for_distribution_column('runs', ${shard}::smallint)`;
        return row!.port;
      } finally {
        await sql.end();
      }
    },
    stop: async () => {
      await run(join(CITUS_DIR, 'stop-cluster.sh'), [dir], { timeout: 60_000 });
    },
  };
}
