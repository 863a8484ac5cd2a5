/**
 * Start-up check that the installed postgres.js carries Chime's patch (src/store/patches/postgres+3.4.9.patch,
 * porsager/postgres#1154, #1208, #1192): unpatched, a transaction whose server dies mid-way crashes the process from
 * a deferred write and leaves the connection hung after the server is back, and a connection whose first, internal
 * query (fetch_types) fails crashes it with an unhandled rejection.
 *
 * `npm ci` applies the patch from package.json's `postinstall` (patch-package, a runtime dependency, so
 * `--omit=dev` keeps it). It is silently skipped when install scripts are (`--ignore-scripts`), and patch-package
 * exits 0 with "No patch files found" when src/store/patches is not there yet at install time (a Dockerfile that
 * copies package*.json and runs `npm ci` before copying the sources). Checking the installed code at start-up catches
 * every such way, whatever the installer. Node only (reads node_modules): the CLI runs it before opening a
 * PostgreSQL; the Worker's bundle is made from the same node_modules by wrangler.
 */
import { installedPackageDir, packageJsonOf, unpatchedFiles } from './installed-patch.ts';

/** A line every patched file holds (the newest fix's comment: a file patched by an earlier patch lacks it). */
export const POSTGRES_PATCH_MARKER = 'Chime patch (porsager/postgres#1192)';
/** The files the patch changes, relative to the package folder: the ESM build Node runs, the CommonJS and Workers builds. */
export const POSTGRES_PATCHED_FILES = ['src/connection.js', 'cjs/src/connection.js', 'cf/src/connection.js'] as const;
/** The command that applies the patch to an installed node_modules, from the project's root. */
export const APPLY_PATCH_COMMAND = 'npx patch-package --patch-dir src/store/patches';

/** The installed postgres.js lacks the patch. */
export class PostgresPatchError extends Error {
  override name = 'PostgresPatchError';
}

/**
 * The folder of the postgres package this module's code would load (node_modules/postgres).
 * @throws Error when postgres is not installed
 */
export function postgresPackageDir(): string {
  return installedPackageDir('postgres');
}

/**
 * Checks that every file of POSTGRES_PATCHED_FILES in `packageDir` carries POSTGRES_PATCH_MARKER.
 * @param packageDir the postgres package's folder (default: the one this process loads, `postgresPackageDir()`)
 * @throws PostgresPatchError naming the unpatched files, the installed version and how to apply the patch
 */
export function checkPostgresPatch(packageDir: string = postgresPackageDir()): void {
  const unpatched = unpatchedFiles(packageDir, POSTGRES_PATCHED_FILES, POSTGRES_PATCH_MARKER);
  if (unpatched.length === 0) return;
  const version = packageJsonOf(packageDir)?.version ?? 'unknown';
  throw new PostgresPatchError(
    `postgres.js ${version} in ${packageDir} lacks Chime's patch (${unpatched.join(', ')}), without which a database ` +
      `outage can crash or hang the process: run \`${APPLY_PATCH_COMMAND}\` in the installation (npm ci runs it as ` +
      `postinstall, unless scripts are skipped with --ignore-scripts or src/store/patches is not there yet when it runs)`,
  );
}
