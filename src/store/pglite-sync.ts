/**
 * Durability of the embedded database (docs/design.md invariant 1 on PGlite). PGlite starts PostgreSQL with `-F`
 * (fsync off), and its Node file system (Emscripten's NODEFS) answers fsync() and fdatasync() without syncing
 * (electric-sql/pglite#1107): a process crash loses nothing, but an OS crash or power loss can lose acknowledged writes
 * and leave the data folder corrupt. Chime's patch (src/store/patches/@electric-sql+pglite+0.5.16.patch) gives that
 * file system fsync and fdatasync operations that call Node's fs.fsyncSync and fs.fdatasyncSync, and openEmbedded
 * starts PostgreSQL without `-F`: each commit then returns only after fdatasync() of its WAL.
 *
 * The patch is applied like the postgres.js one (postgres-patch.ts: package.json's `postinstall`, skipped by
 * `--ignore-scripts`), so it is checked the same way before the database opens, and again once it is open (the hooks
 * installed), unless CHIME_EMBEDDED_SYNC=off gives durability up. Node only (reads node_modules).
 */
import { type FileHandle, open, readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { ConfigError } from '../config.ts';
import { installedPackageDir, packageJsonOf, unpatchedFiles } from './installed-patch.ts';
import { APPLY_PATCH_COMMAND } from './postgres-patch.ts';

/** A line every patched file holds (the patch's first comment). */
export const PGLITE_PATCH_MARKER = 'Chime patch (electric-sql/pglite#1107)';
/** The files the patch changes, relative to the package folder: the NodeFS of the ESM build, which Chime loads. */
export const PGLITE_PATCHED_FILES = ['dist/fs/nodefs.js'] as const;
/** The PostgreSQL start flag that turns fsync off (PGlite's `defaultStartParams` carry it). */
export const FSYNC_OFF_FLAG = '-F';

/** The installed PGlite lacks the patch: the embedded database would not survive an OS crash. */
export class PGliteSyncPatchError extends ConfigError {
  override name = 'PGliteSyncPatchError';
}

/**
 * The folder of the @electric-sql/pglite package this module's code would load.
 * @throws Error when PGlite is not installed
 */
export function pglitePackageDir(): string {
  return installedPackageDir('@electric-sql/pglite');
}

/**
 * Checks that every file of PGLITE_PATCHED_FILES in `packageDir` carries PGLITE_PATCH_MARKER.
 * @param packageDir the PGlite package's folder (default: the one this process loads, `pglitePackageDir()`)
 * @throws PGliteSyncPatchError naming the unpatched files, the installed version and the two ways out
 */
export function checkPGliteSyncPatch(packageDir: string = pglitePackageDir()): void {
  const unpatched = unpatchedFiles(packageDir, PGLITE_PATCHED_FILES, PGLITE_PATCH_MARKER);
  if (unpatched.length === 0) return;
  throw patchError(`${packageJsonOf(packageDir)?.version ?? 'unknown'} in ${packageDir} lacks Chime's patch (${unpatched.join(', ')})`);
}

/**
 * Checks that an open PGlite's file system has the patch's sync operations (a build other than the patched one may
 * have been loaded, or the patch may no longer fit).
 * @throws PGliteSyncPatchError when they are missing
 */
export function checkSyncHooks(module: { NODEFS: unknown }): void {
  const ops = (module.NODEFS as { stream_ops?: Record<string, unknown> } | undefined)?.stream_ops;
  if (typeof ops?.fsync === 'function' && typeof ops.fdatasync === 'function') return;
  throw patchError("opened a file system without the fsync/fdatasync operations of Chime's patch");
}

function patchError(what: string): PGliteSyncPatchError {
  return new PGliteSyncPatchError(
    `PGlite ${what}, without which the embedded database never syncs to disk (an OS crash or power loss can lose ` +
      `acknowledged jobs, electric-sql/pglite#1107): run \`${APPLY_PATCH_COMMAND}\` in the installation (npm ci runs ` +
      `it as postinstall, unless scripts are skipped with --ignore-scripts or src/store/patches is not there yet when it ` +
      `runs), or set CHIME_EMBEDDED_SYNC=off to run without crash safety`,
  );
}

/**
 * Syncs every file and folder under `dir`, and `dir`'s entry in its parent: for a data folder just created, whose
 * files PGlite copied in from its initdb image without syncing them (PostgreSQL syncs only what it writes itself).
 * Symbolic links are left alone; a file removed meanwhile needs no sync.
 */
export async function syncTree(dir: string): Promise<void> {
  await syncFolder(dir);
  await syncPath(dirname(resolve(dir)));
}

async function syncFolder(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await syncFolder(path);
    else if (entry.isFile()) await syncPath(path);
  }
  await syncPath(dir);
}

async function syncPath(path: string): Promise<void> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
