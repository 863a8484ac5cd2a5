/**
 * A PostgreSQL server of the test's own (initdb into a temp dir, on a free port), so a test can stop and restart it
 * without disturbing the shared server other tests use. Needs the PostgreSQL server binaries (Debian:
 * /usr/lib/postgresql/<version>/bin); as root, the server runs as the `postgres` user.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePortsBelowEphemeral } from './chime-process.ts';

const run = promisify(execFile);

/** The directory holding initdb and pg_ctl, or null when this machine has no PostgreSQL server binaries. */
export function postgresBinDir(): string | null {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return null;
  const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(join(base, v, 'bin', 'initdb'))) return join(base, v, 'bin');
  return null;
}

export type PrivatePostgres = {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  port: number;
  /** Stops the server (`immediate`: as a crash, no checkpoint; `fast`: disconnects clients, clean shutdown). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and deletes its data. */
  destroy(): Promise<void>;
};

/** initdb + start on a free port. @throws when the binaries are missing or the server does not start */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  const dir = await mkdtemp(join(tmpdir(), 'chime-pg-'));
  const asRoot = userInfo().uid === 0;
  const as = async (cmd: string, args: string[]) => {
    if (asRoot) return run('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]);
    return run(join(bin, cmd), args);
  };
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const data = join(dir, 'data');
  await as('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const port = await freePortsBelowEphemeral();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const start = async () => {
    await as('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'server.log'), '-w', '-t', '60', 'start']);
  };
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    async stop(mode = 'fast') {
      await as('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
    },
    async destroy() {
      await as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}
