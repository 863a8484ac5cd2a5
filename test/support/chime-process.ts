/**
 * Starts the real service as a user does (`npm start` runs `node dist/node/cli.mjs serve`, the build; here the same
 * command without npm in between, so signals reach the service itself) in a child process on a free port, waits
 * until it is ready, and stops it with a real signal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { CHIME_CLI } from './build.ts';
import { eventually } from './eventually.ts';

export type ChimeProcess = {
  url: string;
  port: number;
  child: ChildProcess;
  /** Everything the process wrote (stdout and stderr). */
  output(): string;
  /** Sends `signal` and waits for the exit; returns the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
};

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
const ROOT = new URL('../..', import.meta.url).pathname;

/** A TCP port free right now on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export async function startChime(env: Record<string, string>, args: string[] = ['serve']): Promise<ChimeProcess> {
  const port = Number(env.PORT ?? (await freePort()));
  // `node` itself, not a wrapper (npm, the tsx CLI) that would run the service in a child process: a SIGKILL sent to
  // the wrapper would leave the real service running as an orphan.
  const child = spawn(process.execPath, [CHIME_CLI, ...args], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      CHIME_ADMIN_TOKEN: ADMIN_TOKEN,
      CHIME_ALLOW_PRIVATE_DESTINATIONS: 'true',
      CHIME_LOG_LEVEL: 'warn',
      ...env,
      PORT: String(port),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = `http://127.0.0.1:${port}`;
  const p: ChimeProcess = {
    url,
    port,
    child,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
  // Every role serves /readyz (a dispatcher-only process: /healthz, /readyz and /metrics).
  {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`chime exited with ${child.exitCode}: ${out}`);
        const r = await fetch(`${url}/readyz`).catch(() => null);
        return r?.ok;
      },
      { timeoutMs: 30_000, what: `chime to be ready on ${url}` },
    ).catch((err) => {
      child.kill('SIGKILL');
      throw err;
    });
  }
  return p;
}
