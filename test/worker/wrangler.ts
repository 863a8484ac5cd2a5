/**
 * Runs wrangler (the devDependency, `node_modules/wrangler/bin/wrangler.js`) as a child process for the Workers
 * tests, offline: no metrics (WRANGLER_SEND_METRICS=false, and `send_metrics = false` in wrangler.toml), logs and
 * config in a temporary folder, no Cloudflare credentials passed on.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/eventually.ts';

export const ROOT = new URL('../..', import.meta.url).pathname;
const WRANGLER = join(ROOT, 'node_modules/wrangler/bin/wrangler.js');

/** The environment of a wrangler child: PATH only from ours, state under `home`. */
function wranglerEnv(home: string, extra: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    WRANGLER_LOG_PATH: join(home, 'logs'),
    WRANGLER_SEND_METRICS: 'false',
    NO_COLOR: '1',
    ...extra,
  };
}

/** Output and exit code of a finished wrangler command. */
export type WranglerResult = { code: number | null; output: string };

/** Runs `wrangler <args>` to completion (or kills it after `timeoutMs`). */
export async function runWrangler(
  args: string[],
  opts: { timeoutMs?: number; env?: Record<string, string> } = {},
): Promise<WranglerResult> {
  const home = await mkdtemp(join(tmpdir(), 'chime-wrangler-'));
  try {
    const child = spawn(process.execPath, [WRANGLER, ...args], {
      cwd: ROOT,
      env: wranglerEnv(home, opts.env ?? {}),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    clearTimeout(timer);
    return { code, output };
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

/** A running `wrangler dev` (workerd, local mode). */
export type WranglerDev = {
  url: string;
  child: ChildProcess;
  output(): string;
  /** Fires the `scheduled` handler (`--test-scheduled`) as the Cron Trigger would. */
  fireScheduled(cron?: string): Promise<Response>;
  /** Stops wrangler and its workerd processes (the whole process group). */
  stop(): Promise<void>;
};

/**
 * Starts `wrangler dev --ip 127.0.0.1 --port <port> --test-scheduled` in its own process group and waits until
 * `GET /healthz` gets an HTTP answer (any status: a misconfigured Worker answers 503).
 * @param opts.env environment of wrangler: secrets (required secrets are read from it) and the Hyperdrive override
 *   `CLOUDFLARE_HYPERDRIVE_LOCAL_CONNECTION_STRING_HYPERDRIVE`
 * @param opts.vars `--var NAME:VALUE` overrides of wrangler.toml [vars]
 * @param opts.cwd the folder whose wrangler.toml to run (default: this repository's)
 */
export async function startWranglerDev(opts: {
  port: number;
  inspectorPort: number;
  env: Record<string, string>;
  vars: Record<string, string>;
  cwd?: string;
}): Promise<WranglerDev> {
  const home = await mkdtemp(join(tmpdir(), 'chime-wrangler-dev-'));
  // Secrets come from `opts.env` only, never from a developer's .dev.vars or .env in the repository.
  const envFile = join(home, 'empty.env');
  await writeFile(envFile, '');
  const args = [
    WRANGLER,
    'dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(opts.port),
    '--inspector-port',
    String(opts.inspectorPort),
    '--test-scheduled',
    '--persist-to',
    join(home, 'state'),
    '--show-interactive-dev-session=false',
    '--env-file',
    envFile,
    ...Object.entries(opts.vars).flatMap(([k, v]) => ['--var', `${k}:${v}`]),
  ];
  const child = spawn(process.execPath, args, {
    cwd: opts.cwd ?? ROOT,
    env: wranglerEnv(home, opts.env),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const url = `http://127.0.0.1:${opts.port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
      const killer = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }, 10_000);
      await exited;
      clearTimeout(killer);
    }
    await rm(home, { recursive: true, force: true });
  };
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}`);
        const r = await fetch(`${url}/healthz`).catch(() => null);
        return r !== null;
      },
      { timeoutMs: 90_000, intervalMs: 250, what: `wrangler dev on ${url}` },
    );
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n--- wrangler output ---\n${out}`);
  }
  return {
    url,
    child,
    output: () => out,
    fireScheduled: (cron = '* * * * *') => fetch(`${url}/__scheduled?cron=${encodeURIComponent(cron)}`),
    stop,
  };
}
