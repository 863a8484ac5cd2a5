/**
 * Starts the real service as a user does (`npm start` runs `node dist/node/cli.mjs serve`, the build; here the same
 * command without npm in between, so signals reach the service itself) in a child process on a free port, waits
 * until it is ready, and stops it with a real signal.
 */
import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { spawnChime } from './build.ts';
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

/** Whether `port` can be listened on at 127.0.0.1 right now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/**
 * The first of `count` consecutive ports free at 127.0.0.1, below the kernel's ephemeral range, for a server a test
 * stops and starts again (PostgreSQL, a Citus node). Its port must not be one the kernel hands out for outgoing
 * connections: while the server is down, a connection attempt to its port from that very port connects to itself
 * (TCP simultaneous open), holds the port, and the restart fails with "Address already in use" (a test run saw a
 * 127.0.0.1:40278 → 127.0.0.1:40278 socket).
 * @throws when no such ports are found in 100 random tries
 */
export async function freePortsBelowEphemeral(count = 1): Promise<number> {
  const range = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '32768 60999');
  const ephemeralStart = Number(range.trim().split(/\s+/)[0]) || 32768;
  const low = 10_000;
  for (let i = 0; i < 100; i++) {
    const port = low + Math.floor(Math.random() * (ephemeralStart - low - count));
    const free = await Promise.all(Array.from({ length: count }, (_, k) => portFree(port + k)));
    if (free.every(Boolean)) return port;
  }
  throw new Error(`no ${count} consecutive free ports between ${low} and ${ephemeralStart}`);
}

/**
 * Starts `chime <args>` with `env` on top of the test defaults and resolves once it answers `/readyz`.
 * Without `env.PORT` the process binds port 0 and the port is read from its own "listening" log line: a port picked
 * free beforehand can be taken by another test's process in between, and then the readiness check would be answered
 * by that process while this one had died of EADDRINUSE. So `CHIME_LOG_LEVEL` is `info` unless given (the line is
 * logged at info). With `env.PORT` (a restart on the port a client points at) that port is used as it is. With `root`,
 * the build of another checkout runs (an earlier release: test/support/previous-release.ts).
 * @throws when the process exits or is not ready within 30 s (it is killed then), with its output
 */
export async function startChime(env: Record<string, string>, args: string[] = ['serve'], root?: string): Promise<ChimeProcess> {
  const child = spawnChime(
    args,
    {
      CHIME_ADMIN_TOKEN: ADMIN_TOKEN,
      CHIME_ALLOW_PRIVATE_DESTINATIONS: 'true',
      CHIME_LOG_LEVEL: 'info',
      PORT: '0',
      ...env,
    },
    root,
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  let port = Number(env.PORT ?? 0);
  // Every role serves /readyz (a dispatcher-only process: /healthz, /readyz and /metrics).
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`chime exited with ${child.exitCode}: ${out}`);
      if (port === 0) port = listeningPort(out) ?? 0;
      if (port === 0) return false;
      const r = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null);
      return r?.ok;
    },
    { timeoutMs: 30_000, what: `chime (${args.join(' ')}) to be ready` },
  ).catch((err) => {
    child.kill('SIGKILL');
    throw err;
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    child,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** The port of the service's `listening` log line (pino JSON, `{"port":N,...,"msg":"listening"}`), if written yet. */
function listeningPort(output: string): number | null {
  for (const line of output.split('\n')) {
    if (!line.includes('"msg":"listening"')) continue;
    const m = /"port":(\d+)/.exec(line);
    if (m) return Number(m[1]);
  }
  return null;
}

/**
 * Stops test processes for good (SIGKILL), after printing the output of each that had already exited on its own (a
 * crash the test did not cause), named as given.
 */
export async function killAll(procs: readonly (readonly [string, ChimeProcess])[]): Promise<void> {
  for (const [name, p] of procs) {
    if (p.child.exitCode !== null || p.child.signalCode !== null)
      console.error(`${name} exited (${p.child.exitCode ?? p.child.signalCode}):\n${p.output()}`);
  }
  for (const [, p] of procs) await p.stop('SIGKILL');
}
