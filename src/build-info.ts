/**
 * Which build of Chime a process runs, for `chime_build_info{version,commit}` in `/metrics`: the version from
 * package.json, and the commit from `CHIME_COMMIT` (the container image sets it from its build argument) or else from
 * the checkout's `.git` (HEAD, a loose ref or packed-refs); `unknown` when neither says.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pkg from '../package.json' with { type: 'json' };

export type BuildInfo = { version: string; commit: string };

/**
 * The build info of this installation (the folder of package.json above this module: `src/` runs from the sources,
 * `dist/node/` from the bundle), reading `env.CHIME_COMMIT` first.
 */
export function buildInfo(env: Record<string, string | undefined> = process.env): BuildInfo {
  let root = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(root, 'package.json')) && dirname(root) !== root) root = dirname(root);
  return { version: pkg.version, commit: env.CHIME_COMMIT?.trim() || gitCommit(join(root, '.git')) || 'unknown' };
}

/** The commit HEAD names in the git directory `gitDir`, or null (no checkout, a worktree's `.git` file, unreadable). */
function gitCommit(gitDir: string): string | null {
  const read = (file: string) => {
    try {
      return readFileSync(join(gitDir, file), 'utf8').trim();
    } catch {
      return null;
    }
  };
  const head = read('HEAD');
  if (!head) return null;
  if (/^[0-9a-f]{40}$/.test(head)) return head;
  const ref = /^ref: (\S+)$/.exec(head)?.[1];
  if (!ref) return null;
  const loose = read(ref);
  if (loose && /^[0-9a-f]{40}$/.test(loose)) return loose;
  const packed = read('packed-refs')
    ?.split('\n')
    .find((line) => line.endsWith(` ${ref}`));
  return packed?.slice(0, 40) ?? null;
}
