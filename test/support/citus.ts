/**
 * A throwaway Citus cluster for the tests that need one (`CHIME_TEST_CITUS=1`; CI sets it): a coordinator and two
 * workers started with `../shared/citus/start-cluster.sh` (which installs Citus into this machine's PostgreSQL 15 when
 * missing) in a temp dir on free ports, and stopped with `stop-cluster.sh`, which removes the dir.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './chime-process.ts';

const run = promisify(execFile);

/** The folder of the Citus build and its scripts (`CHIME_CITUS_DIR`, default the workspace's `shared/citus`). */
export const CITUS_DIR = process.env.CHIME_CITUS_DIR ?? new URL('../../../shared/citus', import.meta.url).pathname;

/** Whether the Citus tests run: `CHIME_TEST_CITUS=1`. */
export const CITUS_TESTS = process.env.CHIME_TEST_CITUS === '1';

export type CitusCluster = {
  /** postgres:// URL of the coordinator (database `postgres`). */
  url: string;
  /** Stops every node and removes the cluster's folder. */
  stop(): Promise<void>;
};

/** Starts a coordinator and `workers` workers on consecutive ports from a free one. */
export async function startCitusCluster(workers = 2): Promise<CitusCluster> {
  // A new folder directly in the temp dir, made by the script (owned by the servers' user when run as root: a folder
  // from mkdtemp is private to its creator, and the servers run as postgres).
  const dir = join(tmpdir(), `chime-citus-${randomBytes(6).toString('hex')}`);
  // Consecutive ports from a free one: the next few are free as well almost always; a clash fails the start loudly.
  const port = await freePort();
  const { stdout } = await run(join(CITUS_DIR, 'start-cluster.sh'), [dir, String(port), String(workers)], { timeout: 120_000 });
  const url = stdout.trim().split('\n').pop()!;
  return {
    url,
    stop: async () => {
      await run(join(CITUS_DIR, 'stop-cluster.sh'), [dir], { timeout: 60_000 });
    },
  };
}
