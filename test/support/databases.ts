/**
 * The databases every store, dispatcher and end-to-end test runs against: the embedded PGlite always, and the real
 * PostgreSQL of `TEST_DATABASE_URL` when it is set (CI sets it). Each test file gets a fresh database of its own.
 * The suites that must also hold on a Citus cluster (the main flow, the lifecycle, the cross-tenant suite, the crash
 * test, the hot path's routing) take `WITH_CITUS`: there a fresh database is a new coordinator with two workers
 * (`CHIME_TEST_CITUS=1`).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { CITUS_EVERYWHERE, CITUS_TESTS, type CitusCluster, startCitusCluster } from './citus.ts';

export type DatabaseTarget = { kind: 'pglite' | 'postgres' | 'citus' };

const CITUS: DatabaseTarget[] = [{ kind: 'citus' }];

/** The targets for `describe.each` (Citus too with `CHIME_TEST_CITUS=all`). */
export const DATABASE_TARGETS: DatabaseTarget[] = [
  { kind: 'pglite' },
  ...(process.env.TEST_DATABASE_URL ? [{ kind: 'postgres' as const }] : []),
  ...(CITUS_EVERYWHERE ? CITUS : []),
];

/** `DATABASE_TARGETS` and, with `CHIME_TEST_CITUS=1`, a Citus cluster of its own per test file (coordinator + 2 workers). */
export const WITH_CITUS: DatabaseTarget[] = CITUS_TESTS && !CITUS_EVERYWHERE ? [...DATABASE_TARGETS, ...CITUS] : DATABASE_TARGETS;

/** A fresh, empty database: a new PostgreSQL database, or a new PGlite data dir. */
export type FreshDatabase = {
  /** Environment for a chime process using it. */
  env: Record<string, string>;
  url: string | null;
  dataDir: string | null;
  /** The cluster, on Citus (a test can stop a worker); null elsewhere. */
  cluster: CitusCluster | null;
  drop(): Promise<void>;
};

/** Base64 of 32 fixed bytes: a test encryption key. */
export const TEST_ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64');

/** Creates a fresh database for `target` (for `citus`, starts a cluster, which `drop` stops and removes). */
export async function freshDatabase(target: DatabaseTarget): Promise<FreshDatabase> {
  if (target.kind === 'pglite') {
    const dataDir = await mkdtemp(join(tmpdir(), 'chime-test-'));
    return {
      env: { CHIME_DATA_DIR: dataDir },
      url: null,
      dataDir,
      cluster: null,
      drop: () => rm(dataDir, { recursive: true, force: true }),
    };
  }
  if (target.kind === 'citus') {
    const cluster = await startCitusCluster(2);
    return {
      env: { DATABASE_URL: cluster.url, CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, CHIME_MIGRATE: 'true' },
      url: cluster.url,
      dataDir: null,
      cluster,
      drop: () => cluster.stop(),
    };
  }
  const adminUrl = process.env.TEST_DATABASE_URL!;
  const name = `chime_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  return {
    env: { DATABASE_URL: url, CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, CHIME_MIGRATE: 'true' },
    url,
    dataDir: null,
    cluster: null,
    async drop() {
      const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}
