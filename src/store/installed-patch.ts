/**
 * What the start-up checks of Chime's dependency patches (postgres-patch.ts, pglite-sync.ts) share: finding an
 * installed package's folder and telling which of its patched files lack the patch's marker line. Node only (reads
 * node_modules).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** The package.json of `dir`, or undefined when there is none (or it does not parse). */
export function packageJsonOf(dir: string): { name?: string; version?: string } | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
  } catch {
    return undefined;
  }
}

/**
 * The folder of the installed package `name` that this module's code would load: walked up from its entry point to the
 * package.json that names it (neither patched package exports its ./package.json, and postgres.js's cjs/ folder has a
 * package.json of its own).
 * @throws Error when the package is not installed, or no package.json above its entry names it
 */
export function installedPackageDir(name: string): string {
  let dir = dirname(createRequire(import.meta.url).resolve(name));
  while (packageJsonOf(dir)?.name !== name) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`${name}: no package.json named ${name} above its entry point`);
    dir = up;
  }
  return dir;
}

/** The files of `files` (relative to `packageDir`) that are missing or do not hold `marker`. */
export function unpatchedFiles(packageDir: string, files: readonly string[], marker: string): string[] {
  return files.filter((file) => {
    const path = join(packageDir, file);
    return !existsSync(path) || !readFileSync(path, 'utf8').includes(marker);
  });
}
