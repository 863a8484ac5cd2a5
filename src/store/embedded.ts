/**
 * The embedded database: PGlite (PostgreSQL compiled to WASM) in a folder, for a laptop or a single box.
 * One process may open a folder at a time. Node only: never imported by the Workers entry.
 *
 * The folder holds the whole database (API key hashes, sealed secrets), the encryption key and the first tenant's
 * credentials, so it is the owner's alone: mode 0700, every file in it 0600. PGlite's file system makes its files
 * 0666 whatever the umask, so the modes are set after it opens, and set again on every open (an existing folder made
 * before, or files PGlite created since; those stay unreachable meanwhile, behind the 0700 folder).
 *
 * A folder is crash-safe by default: PostgreSQL runs with fsync on, so a commit returns only once its WAL is synced
 * (invariant 1), through the file-system hooks of Chime's PGlite patch (pglite-sync.ts, checked before opening).
 * CHIME_EMBEDDED_SYNC=off starts it with PGlite's own `-F` instead: faster, survives a process crash, not an OS crash.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { drizzle } from 'drizzle-orm/pglite';
import type { Database, Db } from './db.ts';
import { checkPGliteSyncPatch, checkSyncHooks, FSYNC_OFF_FLAG, syncTree } from './pglite-sync.ts';
import * as schema from './schema.ts';

/**
 * Opens (creating if needed) the PGlite database in `dataDir`, or an in-memory one for `memory://`.
 * @param opts.onStatement called with every statement and its parameters (drizzle's query logger), for tests
 * @param opts.sync whether commits sync to disk (default: CHIME_EMBEDDED_SYNC of the environment, on unless `off`);
 *   `memory://` has no disk and never syncs
 * @param opts.loadDataDir a new database starts as this tarball of a data folder (PGlite's `dumpDataDir`) instead of
 *   an empty cluster (the tests start from one migrated database); ignored when the folder holds a database
 * @throws PGliteSyncPatchError when `sync` and the installed PGlite lacks Chime's patch; otherwise when the folder
 *   cannot be created or holds a database of an incompatible version
 */
export async function openEmbedded(
  dataDir: string,
  opts: { onStatement?: (query: string, params: readonly unknown[]) => void; sync?: boolean; loadDataDir?: Blob } = {},
): Promise<Database & { pg: PGlite }> {
  const memory = dataDir === 'memory://';
  const sync = !memory && (opts.sync ?? process.env.CHIME_EMBEDDED_SYNC !== 'off');
  if (sync) checkPGliteSyncPatch();
  let unlock = async () => {};
  let created = memory;
  if (!memory) {
    await mkdir(dataDir, { recursive: true, mode: DATA_DIR_MODE });
    // Before PGlite writes anything: nobody else may enter the folder while its files are still 0666.
    await chmod(dataDir, DATA_DIR_MODE);
    unlock = await lockDataDir(dataDir);
    created = !existsSync(join(dataDir, 'PG_VERSION'));
  }
  // The extensions migration 0009 creates for the job-search indexes: PGlite bundles contrib modules separately, and
  // CREATE EXTENSION finds only those loaded here (on every open, not only the first: the indexes need them).
  const startParams = sync ? PGlite.defaultStartParams.filter((p) => p !== FSYNC_OFF_FLAG) : PGlite.defaultStartParams;
  const pg = await PGlite.create(memory ? undefined : dataDir, {
    extensions: { pg_trgm, btree_gin },
    startParams,
    ...(created && opts.loadDataDir ? { loadDataDir: opts.loadDataDir } : {}),
  });
  if (sync) {
    try {
      checkSyncHooks(pg.Module);
      // PGlite copies a new folder in from its initdb image without syncing; PostgreSQL syncs only what it writes.
      if (created) await syncTree(dataDir);
    } catch (err) {
      await pg.close().catch(() => {});
      await unlock();
      throw err;
    }
  }
  if (!memory) await restrictModes(dataDir);
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

/** Mode of the data folder and every folder in it: the owner's only. */
export const DATA_DIR_MODE = 0o700;
/** Mode of every file in the data folder. */
export const DATA_FILE_MODE = 0o600;

/**
 * Sets DATA_DIR_MODE on `dir` and every folder under it and DATA_FILE_MODE on every file; symbolic links are left
 * alone (chmod would follow them out of the folder).
 */
async function restrictModes(dir: string): Promise<void> {
  await chmod(dir, DATA_DIR_MODE);
  const entries = await readdir(dir, { withFileTypes: true });
  await Promise.all(
    entries.map((entry) => {
      const path = join(dir, entry.name);
      const done = entry.isDirectory() ? restrictModes(path) : entry.isFile() ? chmod(path, DATA_FILE_MODE) : Promise.resolve();
      // A file PGlite removed in the meantime (a temporary one) needs no mode.
      return done.catch((err: unknown) => {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      });
    }),
  );
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
      await writeFile(file, String(process.pid), { flag: 'wx', mode: DATA_FILE_MODE });
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
