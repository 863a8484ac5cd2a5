/**
 * A primary and a synchronous streaming standby of the test's own (issue #30): two clusters of this machine's
 * PostgreSQL under one temp dir, on two ports below the kernel's ephemeral range (freePortsBelowEphemeral: a server a
 * test stops must not have its port taken by an outgoing connection meanwhile). The standby is a `pg_basebackup -R` of
 * the primary, named `standby` (`cluster_name`, which its WAL receiver reports as application_name), and the primary
 * waits for it on every commit (`synchronous_standby_names = 'standby'`, `synchronous_commit = on`): a commit the
 * primary acknowledged is on the standby, so a failover loses nothing acknowledged. Like private-postgres.ts, as root
 * the servers run as the `postgres` user.
 */
import { execFile } from 'node:child_process';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { freePortsBelowEphemeral } from './chime-process.ts';
import { eventually } from './eventually.ts';
import { postgresBinDir } from './private-postgres.ts';

const run = promisify(execFile);

export type ReplicatedPostgres = {
  primaryPort: number;
  standbyPort: number;
  /**
   * Both servers in one URL, as an operator writes it: `postgres://postgres@127.0.0.1:<primary>,127.0.0.1:<standby>/postgres
   * ?target_session_attrs=read-write`.
   */
  url: string;
  /** One server's URL (for the test's own checks). */
  urlOf(port: number): string;
  /** Kills the primary as a crash would (`pg_ctl -m immediate stop`: no checkpoint, every connection dropped). */
  killPrimary(): Promise<void>;
  /** Promotes the standby (`pg_ctl promote -w`: returns once it accepts writes). */
  promoteStandby(): Promise<void>;
  /** Stops both servers and deletes their data. */
  destroy(): Promise<void>;
};

/**
 * initdb + start the primary, base-backup + start the standby, and wait until the standby streams synchronously.
 * @throws when the binaries are missing or a server does not start or replicate within a minute
 */
export async function startReplicatedPostgres(): Promise<ReplicatedPostgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  const dir = await mkdtemp(join(tmpdir(), 'chime-pg-replicated-'));
  const asRoot = userInfo().uid === 0;
  const as = (cmd: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]) : run(join(bin, cmd), args);
  if (asRoot) {
    const { stdout: uid } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(uid.trim()), Number(gid.trim()));
  }
  const primaryData = join(dir, 'primary');
  const standbyData = join(dir, 'standby');
  const primaryPort = await freePortsBelowEphemeral(2);
  const standbyPort = primaryPort + 1;
  // fsync off: the test kills a server's processes, never the machine, so the OS keeps what was written; a standby's
  // acknowledgement still means the WAL reached it (synchronous_commit = on waits for its flush report).
  const common = `-k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 -c wal_level=replica -c max_wal_senders=5 -c hot_standby=on`;
  const primaryOptions = `-p ${primaryPort} ${common} -c synchronous_standby_names=standby -c synchronous_commit=on`;
  const standbyOptions = `-p ${standbyPort} ${common} -c cluster_name=standby`;
  const pgCtl = (data: string, options: string, log: string, ...args: string[]) =>
    as('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, log), '-w', '-t', '60', ...args]);

  // initdb -A trust also trusts local replication connections (its pg_hba.conf template).
  await as('initdb', ['-D', primaryData, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  await pgCtl(primaryData, primaryOptions, 'primary.log', 'start');
  await as('pg_basebackup', [
    '-h',
    '127.0.0.1',
    '-p',
    String(primaryPort),
    '-U',
    'postgres',
    '-D',
    standbyData,
    '-R',
    '-X',
    'stream',
    '--no-sync',
  ]);
  await pgCtl(standbyData, standbyOptions, 'standby.log', 'start');

  const urlOf = (port: number) => `postgres://postgres@127.0.0.1:${port}/postgres`;
  const primary = postgres(urlOf(primaryPort), { max: 1, onnotice: () => {} });
  try {
    await eventually(
      async () => {
        const rows = await primary<{ sync_state: string }[]>`select sync_state from pg_stat_replication where application_name = 'standby'`;
        return rows[0]?.sync_state === 'sync';
      },
      { timeoutMs: 60_000, what: 'the standby to stream synchronously' },
    );
  } finally {
    await primary.end({ timeout: 1 });
  }

  return {
    primaryPort,
    standbyPort,
    url: `postgres://postgres@127.0.0.1:${primaryPort},127.0.0.1:${standbyPort}/postgres?target_session_attrs=read-write`,
    urlOf,
    async killPrimary() {
      await as('pg_ctl', ['-D', primaryData, '-m', 'immediate', '-w', '-t', '60', 'stop']);
    },
    async promoteStandby() {
      await as('pg_ctl', ['-D', standbyData, '-w', '-t', '60', 'promote']);
    },
    async destroy() {
      for (const data of [primaryData, standbyData]) await as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}
