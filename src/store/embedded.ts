/**
 * The embedded database: PGlite (PostgreSQL compiled to WASM) in a folder, for a laptop or a single box.
 * One process may open a folder at a time. Node only: never imported by the Workers entry.
 */
import { mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { drizzle } from 'drizzle-orm/pglite';
import * as schema from './schema.ts';
import type { Database, Db } from './db.ts';

/**
 * Opens (creating if needed) the PGlite database in `dataDir`, or an in-memory one for `memory://`.
 * @param opts.onStatement called with every statement and its parameters (drizzle's query logger), for tests
 * @throws when the folder cannot be created or holds a database of an incompatible version
 */
export async function openEmbedded(
  dataDir: string,
  opts: { onStatement?: (query: string, params: readonly unknown[]) => void } = {},
): Promise<Database & { pg: PGlite }> {
  const memory = dataDir === 'memory://';
  let unlock = async () => {};
  if (!memory) {
    await mkdir(dataDir, { recursive: true });
    unlock = await lockDataDir(dataDir);
  }
  // The extensions migration 0009 creates for the job-search indexes: PGlite bundles contrib modules separately, and
  // CREATE EXTENSION finds only those loaded here (on every open, not only the first: the indexes need them).
  const pg = await PGlite.create(memory ? undefined : dataDir, { extensions: { pg_trgm, btree_gin } });
  const logger = opts.onStatement ? { logQuery: opts.onStatement } : undefined;
  const db = drizzle(pg, { schema, logger }) as unknown as Db;
  return {
    db,
    pg,
    kind: 'pglite',
    async listen(channel, onPayload) {
      return pg.listen(channel, onPayload);
    },
    async close() {
      await pg.close();
      await unlock();
    },
  };
}

/** The lock file that keeps a second process from opening the same embedded database. */
export const LOCK_FILE = 'chime.lock';

/** Thrown when another live process holds the data dir. */
export class DataDirLockedError extends Error {
  override name = 'DataDirLockedError';
}

/**
 * Takes the data dir's lock file (holding our pid); a lock left by a dead process is taken over.
 * @throws DataDirLockedError when a live process holds it
 */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const file = join(dataDir, LOCK_FILE);
  for (let i = 0; i < 2; i++) {
    try {
      await writeFile(file, String(process.pid), { flag: 'wx' });
      return () => unlink(file).catch(() => {});
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number((await readFile(file, 'utf8').catch(() => '')).trim());
      if (pid > 0 && pid !== process.pid && isAlive(pid)) {
        throw new DataDirLockedError(
          `the embedded database in ${dataDir} is in use by process ${pid}; stop it first, or use the running service's API (POST /v1/tenants with CHIME_ADMIN_TOKEN)`,
        );
      }
      await unlink(file).catch(() => {});
    }
  }
  throw new DataDirLockedError(`could not lock ${file}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
