/**
 * The service as `npm start` runs it: the bundle `npm run build` makes (esbuild, `dist/node/cli.mjs`), run by plain
 * `node`. Vitest's global setup builds it once before any test file starts, so the process tests exercise the
 * shipped build and its start-up, not the TypeScript sources through a loader.
 */
import { execFileSync } from 'node:child_process';

const ROOT = new URL('../..', import.meta.url).pathname;

/** The built CLI, relative to the repository root (package.json `build`). */
export const CHIME_CLI = 'dist/node/cli.mjs';

/**
 * Builds CHIME_CLI with `npm run build` (package.json, esbuild), synchronously; esbuild's messages go to stderr.
 * @throws when the build fails
 */
export function buildChime(): void {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
}

/** Vitest global setup: `buildChime()` once before any test file. */
export function setup(): void {
  buildChime();
}
