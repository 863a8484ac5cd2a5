/**
 * Child processes of the benchmark: `node <script>` spawned directly (not through npm or the tsx CLI, which would
 * put a second process between us and the one doing the work), so the child's pid is the process whose CPU and
 * memory are measured. Every system runs as plain JavaScript, as it would in production: Chime's CLI as
 * `npm run build` makes it (what `npm start` runs), the peers' worker scripts bundled by esbuild the same way; no
 * TypeScript loader (its thread, ~40 MB and start-up CPU) sits in any measured process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { basename } from 'node:path';
import { build } from 'esbuild';
import { buildChime, CHIME_CLI } from '../../support/build.ts';

export { CHIME_CLI };

export const ROOT = new URL('../../..', import.meta.url).pathname;

/** Most output kept per process (the tail), in characters. */
const OUTPUT_KEEP = 64 * 1024;
/** How long `stop()` waits after SIGTERM before SIGKILL, in ms. */
const STOP_GRACE_MS = 15_000;

/** Every process spawned and not yet exited, so an interrupted bench can end them (`killAll`). */
const live = new Set<ChildProcess>();

/** Sends SIGKILL to every process this module spawned that is still running. */
export function killAll(): void {
  for (const child of live) child.kill('SIGKILL');
}

export type NodeProcess = {
  child: ChildProcess;
  pid: number;
  /** The tail of stdout + stderr. */
  output(): string;
  /** Resolves when a stdout line satisfies `match`; rejects if the process exits first or after `timeoutMs`. */
  waitForLine(match: (line: string) => boolean, timeoutMs: number, what: string): Promise<void>;
  exited(): boolean;
  /** SIGTERM, then SIGKILL after 15 s; resolves with the exit code (null if killed by a signal). */
  stop(): Promise<number | null>;
};

/** Where the peers' worker scripts are bundled (under the git-ignored test/bench/out). */
const PEER_BUILD_DIR = 'test/bench/out/build';

/**
 * Builds what the systems run: `npm run build` for Chime, and each of `peerScripts` (TypeScript, relative to the
 * repository root) bundled by esbuild with the options of that build (ESM for Node 20, packages left to node_modules).
 * @throws when a build fails
 */
export async function buildSystems(peerScripts: readonly string[]): Promise<void> {
  buildChime();
  for (const script of peerScripts) {
    await build({
      entryPoints: [`${ROOT}${script}`],
      outfile: `${ROOT}${builtPeer(script)}`,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      packages: 'external',
      logLevel: 'warning',
    });
  }
}

/** The bundle `buildSystems` makes of a peer's worker script, relative to the repository root. */
export function builtPeer(script: string): string {
  return `${PEER_BUILD_DIR}/${basename(script, '.ts')}.mjs`;
}

/** Spawns `node [$BENCH_NODE_ARGS] <script> ...args` (JavaScript) in the repository root with exactly `env` (plus PATH and HOME). */
export function spawnNode(script: string, args: string[], env: Record<string, string>): NodeProcess {
  // BENCH_NODE_ARGS: extra node flags for the systems' processes, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, script, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  let out = '';
  const lineListeners = new Set<(line: string) => void>();
  let partial = '';
  const keep = (d: Buffer) => {
    out += d.toString();
    if (out.length > OUTPUT_KEEP) out = out.slice(-OUTPUT_KEEP);
  };
  child.stdout!.on('data', (d: Buffer) => {
    keep(d);
    partial += d.toString();
    const lines = partial.split('\n');
    partial = lines.pop()!;
    for (const line of lines) for (const l of lineListeners) l(line);
  });
  child.stderr!.on('data', keep);
  const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  return {
    child,
    pid: child.pid!,
    output: () => out,
    exited,
    waitForLine(match, timeoutMs, what) {
      return new Promise<void>((resolve, reject) => {
        const done = (err?: Error) => {
          clearTimeout(timer);
          lineListeners.delete(onLine);
          if (err) reject(err);
          else resolve();
        };
        const onLine = (line: string) => match(line) && done();
        const timer = setTimeout(() => done(new Error(`timed out after ${timeoutMs} ms waiting for ${what}:\n${out}`)), timeoutMs);
        lineListeners.add(onLine);
        void exit.then((code) => done(new Error(`process exited with ${code} while waiting for ${what}:\n${out}`)));
      });
    },
    async stop() {
      if (exited()) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      const code = await exit;
      clearTimeout(timer);
      return code;
    },
  };
}
