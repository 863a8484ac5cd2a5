/**
 * The schema's migrations: the committed drizzle-kit migrations (`drizzle/`), applied by `chime migrate` (or `serve
 * --migrate`), and the check `serve` makes otherwise. Several processes may migrate at once against one PostgreSQL: a
 * session-level advisory lock makes them take turns, and drizzle's journal makes the second a no-op.
 *
 * Migrations follow expand / contract (docs/design.md "Upgrades"): a migration a release ships only adds (tables,
 * nullable or defaulted columns, indexes) so the previous release keeps working on the new schema, and what a release
 * stops using is dropped by a later release's contract migration. So a process accepts a database that has migrations
 * it does not know (a later release applied them) and refuses one that lacks migrations it needs.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import { distributeOnCitus } from './citus.ts';
import { type Executor, isDeadlock, query } from './db.ts';
import { openPostgres } from './postgres.ts';

/** The folder of committed migrations. */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../drizzle', import.meta.url));
/** Advisory lock key that serializes migrations ("chime" in ASCII). */
const MIGRATION_LOCK = 0x6368696d65;

/** One committed migration: its tag (the file name without `.sql`) and its journal time, in ms since the epoch. */
export type Migration = { tag: string; whenMs: number };

/**
 * Where a database stands against this version's migrations. drizzle records each applied migration by its journal
 * time, and applies every committed migration later than the latest one recorded (drizzle-orm's pg-core dialect
 * `migrate`); `pending` follows the same rule, so it is exactly what `chime migrate` would apply.
 */
export type SchemaStatus = {
  applied: Migration[];
  pending: Migration[];
  /** Migrations recorded in the database that this version does not have: a later release applied them. */
  newer: number;
};

/** The schema lacks migrations this version needs; `serve` refuses to start on it without `--migrate`. */
export class SchemaBehindError extends Error {
  override name = 'SchemaBehindError';
  constructor(readonly pending: Migration[]) {
    const n = pending.length;
    super(
      `the database schema is ${n} migration${n === 1 ? '' : 's'} behind this version of Chime (pending: ${pending.map((m) => m.tag).join(', ')}); ` +
        'run `chime migrate` as the role that owns the schema, or start with --migrate',
    );
  }
}

/** The committed migrations, in order (drizzle/meta/_journal.json). */
export function committedMigrations(): Migration[] {
  const journal = JSON.parse(readFileSync(`${MIGRATIONS_FOLDER}/meta/_journal.json`, 'utf8')) as {
    entries: { tag: string; when: number }[];
  };
  return journal.entries.map((e) => ({ tag: e.tag, whenMs: e.when }));
}

/**
 * Reads which committed migrations the database has. Needs only SELECT on drizzle's journal table (none on a
 * database never migrated: then every migration is pending).
 * @throws the driver's error (42501 when the role may not read the journal table)
 */
export async function schemaStatus(db: Executor): Promise<SchemaStatus> {
  const [journal] = await query<{ present: boolean }>(db, sql`select to_regclass('drizzle.__drizzle_migrations') is not null as present`);
  const recorded = journal!.present
    ? (await query<{ created_at: string | number }>(db, sql`select created_at from drizzle.__drizzle_migrations`)).map((r) =>
        Number(r.created_at),
      )
    : [];
  const latest = Math.max(Number.NEGATIVE_INFINITY, ...recorded);
  const committed = committedMigrations();
  const lastCommitted = committed.at(-1)?.whenMs ?? Number.NEGATIVE_INFINITY;
  return {
    applied: committed.filter((m) => m.whenMs <= latest),
    pending: committed.filter((m) => m.whenMs > latest),
    newer: recorded.filter((when) => when > lastCommitted).length,
  };
}

/**
 * Checks that the database has every migration this version needs.
 * @returns the status (its `newer` is not an error: expand / contract keeps this version working on it)
 * @throws SchemaBehindError when migrations are pending; the driver's error as `schemaStatus`
 */
export async function checkSchemaCurrent(db: Executor): Promise<SchemaStatus> {
  const status = await schemaStatus(db);
  if (status.pending.length > 0) throw new SchemaBehindError(status.pending);
  return status;
}

/** How many times a run of pending migrations is tried when PostgreSQL ends it as a deadlock's victim (40P01). */
const MIGRATE_DEADLOCK_TRIES = 5;

/**
 * Migrates the PostgreSQL at `url` on one connection of Chime's connector (with several hosts, the writable one)
 * holding the migration lock, with no statement_timeout (a migration may rewrite a large table); on a Citus
 * coordinator, then distributes the tables by the shard key (citus.ts). A run that loses a deadlock with the running
 * processes is tried again, up to MIGRATE_DEADLOCK_TRIES times, after 100–200 ms per try so far.
 * @throws the driver's error when the server is unreachable or a migration fails (nothing half-applied: each
 *   run of pending migrations is one transaction), a deadlock included once the tries are spent
 */
export async function migratePostgresUrl(url: string): Promise<void> {
  const database = openPostgres(url, { max: 1, statementTimeoutMs: 0 });
  const client = database.sql;
  try {
    await client`select pg_advisory_lock(${MIGRATION_LOCK})`;
    // Under load (a rolling upgrade), the migration's ALTERs take tables in another order than the running processes'
    // transactions do, and PostgreSQL may pick the migration as a deadlock's victim: its transaction rolled back whole,
    // so it is tried again.
    for (let attempt = 1; ; attempt++) {
      try {
        await migratePostgres(drizzlePostgres(client), { migrationsFolder: MIGRATIONS_FOLDER });
        break;
      } catch (err) {
        if (attempt >= MIGRATE_DEADLOCK_TRIES || !isDeadlock(err)) throw err;
        await new Promise((r) => setTimeout(r, 100 * attempt + Math.random() * 100));
      }
    }
    await distributeOnCitus(client);
    await client`select pg_advisory_unlock(${MIGRATION_LOCK})`;
  } finally {
    await database.close();
  }
}

/** Migrates an embedded PGlite database (single process: no lock needed). */
export async function migrateEmbedded(pg: import('@electric-sql/pglite').PGlite): Promise<void> {
  const { drizzle } = await import('drizzle-orm/pglite');
  const { migrate } = await import('drizzle-orm/pglite/migrator');
  await migrate(drizzle(pg), { migrationsFolder: MIGRATIONS_FOLDER });
}
