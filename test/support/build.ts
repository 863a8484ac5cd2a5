/**
 * The service as `npm start` runs it: the bundle `npm run build` makes (esbuild, `dist/node/cli.mjs`), run by plain
 * `node`. Vitest's global setup builds it once before any test file starts, so the process tests exercise the
 * shipped build and its start-up, not the TypeScript sources through a loader.
 */
import { type ChildProcessByStdio, execFileSync, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';

const ROOT = new URL('../..', import.meta.url).pathname;

/** The built CLI, relative to the repository root (package.json `build`). */
export const CHIME_CLI = 'dist/node/cli.mjs';
/** The folder of the build: CHIME_CLI and the chunks its commands import when they run. */
export const CHIME_BUILD_DIR = 'dist/node';

/**
 * Builds CHIME_CLI with `npm run build` (package.json, esbuild), synchronously; esbuild's messages go to stderr.
 * @throws when the build fails
 */
export function buildChime(): void {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
}

/**
 * Spawns `node CHIME_CLI <args>` in the repository root (or in `root`, another checkout: an earlier release) with exactly
 * `env` plus PATH and HOME, no stdin, output piped. `node` itself, not a wrapper (npm, the tsx CLI) that would run the
 * service in a child process: a SIGKILL sent to the wrapper would leave the real service running as an orphan.
 */
export function spawnChime(args: string[], env: Record<string, string>, root = ROOT): ChildProcessByStdio<null, Readable, Readable> {
  return spawn(process.execPath, [CHIME_CLI, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Vitest global setup: `buildChime()` once before any test file. */
export function setup(): void {
  buildChime();
}
