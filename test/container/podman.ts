/**
 * Real containers for the image tests: the `podman` CLI (Debian's; ../shared/containers/setup.sh installs it and
 * writes the containers.conf this sandbox needs), run as a child process with a deadline, never through a socket.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { eventually } from '../support/eventually.ts';

/** The image under test (`CHIME_TEST_IMAGE`, e.g. `chime:test`), or '' when none is given (the tests skip). */
export const IMAGE = process.env.CHIME_TEST_IMAGE ?? '';

/** setup.sh's configuration (runc, cgroupfs, no default ulimits): podman's defaults fail in this sandbox. */
const CONF = '/etc/containers/containers.conf';
const ENV = { ...process.env, ...(!process.env.CONTAINERS_CONF && existsSync(CONF) ? { CONTAINERS_CONF: CONF } : {}) };

export type Result = { code: number; stdout: string; stderr: string };

/**
 * Runs `podman <args>` and resolves with its exit code and output, whatever the code.
 * @throws when podman cannot be run or does not finish within `timeoutMs`
 */
export function podman(args: string[], timeoutMs = 60_000): Promise<Result> {
  return new Promise((resolve, reject) => {
    execFile('podman', args, { env: ENV, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (err as { code?: unknown }).code : 0;
      if (typeof code !== 'number') return reject(new Error(`podman ${args.join(' ')}: ${err?.message ?? 'failed'}\n${stderr}`));
      resolve({ code, stdout, stderr });
    });
  });
}

/** `podman <args>`, which must exit 0. @throws naming the command and its output otherwise @returns its stdout */
export async function podmanOk(args: string[], timeoutMs?: number): Promise<string> {
  const r = await podman(args, timeoutMs);
  if (r.code !== 0) throw new Error(`podman ${args.join(' ')} exited ${r.code}:\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** `-e NAME=value` for each variable. */
export function envArgs(env: Record<string, string>): string[] {
  return Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
}

/** A name for this run's containers and volumes: several runs on one machine (CI and a developer) never collide. */
export function uniqueName(what: string): string {
  return `chime-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}-${what}`;
}

/** What the container printed (its stdout and stderr: the service's pino lines and start-up messages). */
export async function logs(name: string): Promise<string> {
  const r = await podman(['logs', name]);
  return r.stdout + r.stderr;
}

/** The container's state: running or not, and its exit code once it stopped. */
export async function state(name: string): Promise<{ running: boolean; exitCode: number; health: string | undefined }> {
  const [info] = JSON.parse(await podmanOk(['inspect', '--type', 'container', name]));
  // podman 4 names it Healthcheck, Docker and later podman Health.
  const health = info.State.Health?.Status ?? info.State.Healthcheck?.Status;
  return { running: info.State.Running, exitCode: info.State.ExitCode, health: health || undefined };
}

/**
 * Waits until the container answers `GET <url>/readyz` with 200.
 * @throws when the container stops first (with its logs), or it is not ready within 60 s
 */
export async function waitReady(name: string, url: string): Promise<void> {
  await eventually(
    async () => {
      const r = await fetch(`${url}/readyz`).catch(() => null);
      if (r?.ok) return true;
      const s = await state(name);
      if (!s.running) throw new Error(`container ${name} exited with ${s.exitCode}:\n${await logs(name)}`);
      return false;
    },
    { timeoutMs: 60_000, intervalMs: 200, what: `container ${name} to answer /readyz at ${url}` },
  );
}

/**
 * Stops the container as `docker stop` does (SIGTERM, SIGKILL after 10 s) and returns its exit code and logs.
 */
export async function stop(name: string): Promise<{ exitCode: number; logs: string }> {
  await podmanOk(['stop', name], 30_000);
  return { exitCode: (await state(name)).exitCode, logs: await logs(name) };
}

/** Removes containers (with their anonymous volumes) and volumes, present or not: for afterAll, even after a failure. */
export async function removeAll(containers: string[], volumes: string[] = []): Promise<void> {
  if (containers.length) await podman(['rm', '--force', '--volumes', '--time', '0', ...containers]);
  if (volumes.length) await podman(['volume', 'rm', '--force', ...volumes]);
}
