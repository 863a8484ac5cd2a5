/**
 * The previous release of Chime, built, for the rolling-upgrade test: a fixed earlier commit checked out with `git
 * worktree` in the system's temporary folder, installed with `npm ci` (its own lockfile, its own dependency patches)
 * and built with its own `npm run build`, as an operator's running fleet would have it.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CHIME_CLI } from './build.ts';

const run = promisify(execFile);
const ROOT = new URL('../..', import.meta.url).pathname;

/**
 * The release a running fleet is upgraded from: the last commit whose CI passed before the migrations came under the
 * operator's control (#31). Move it forward when a release is cut, so that the test upgrades from the release before.
 */
export const PREVIOUS_RELEASE = 'b9fa0b46991bcc70b9e0a71e0a5443e57d46ca75';

/** A checkout of PREVIOUS_RELEASE, built; `remove` takes the worktree away again. */
export type Release = { root: string; commit: string; remove(): Promise<void> };

/**
 * Checks PREVIOUS_RELEASE out into a worktree, runs `npm ci` (from npm's cache where it can) and `npm run build` there.
 * @throws when the commit is not in this clone (a shallow clone: fetch its history) or the install or build fails
 */
export async function buildPreviousRelease(): Promise<Release> {
  const root = join(tmpdir(), `chime-release-${PREVIOUS_RELEASE.slice(0, 12)}-${process.pid}`);
  const git = (...args: string[]) => run('git', args, { cwd: ROOT, maxBuffer: 16 << 20 });
  await git('cat-file', '-e', `${PREVIOUS_RELEASE}^{commit}`).catch(() => {
    throw new Error(`the previous release ${PREVIOUS_RELEASE} is not in this clone (shallow?): git fetch --unshallow`);
  });
  await git('worktree', 'add', '--detach', '--force', root, PREVIOUS_RELEASE);
  const remove = async () => {
    await git('worktree', 'remove', '--force', root).catch(() => {});
    await rm(root, { recursive: true, force: true });
    await git('worktree', 'prune').catch(() => {});
  };
  try {
    const npm = (...args: string[]) => run('npm', args, { cwd: root, maxBuffer: 64 << 20, env: { ...process.env, CI: '1' } });
    await npm('ci', '--prefer-offline', '--no-audit', '--no-fund');
    await npm('run', '--silent', 'build');
    if (!existsSync(join(root, CHIME_CLI))) throw new Error(`the previous release's build made no ${CHIME_CLI}`);
  } catch (err) {
    await remove();
    throw err;
  }
  return { root, commit: PREVIOUS_RELEASE, remove };
}
