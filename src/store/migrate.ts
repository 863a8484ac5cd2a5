/**
 * Applies the committed drizzle-kit migrations (`drizzle/`). Several processes may start at once against one
 * PostgreSQL: a session-level advisory lock makes them take turns, and drizzle's journal makes the second a no-op.
 */
import { fileURLToPath } from 'node:url';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { distributeOnCitus } from './citus.ts';

/** The folder of committed migrations. */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../drizzle', import.meta.url));
/** Advisory lock key that serializes migrations ("chime" in ASCII). */
const MIGRATION_LOCK = 0x6368696d65;

/**
 * Migrates the PostgreSQL at `url` on a dedicated connection holding the migration lock; on a Citus coordinator,
 * then distributes the tables by the shard key (citus.ts).
 * @throws the driver's error when the server is unreachable or a migration fails (nothing half-applied: each
 *   run of pending migrations is one transaction)
 */
export async function migratePostgresUrl(url: string): Promise<void> {
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await client`select pg_advisory_lock(${MIGRATION_LOCK})`;
    await migratePostgres(drizzlePostgres(client), { migrationsFolder: MIGRATIONS_FOLDER });
    await distributeOnCitus(client);
    await client`select pg_advisory_unlock(${MIGRATION_LOCK})`;
  } finally {
    await client.end({ timeout: 5 });
  }
}

/** Migrates an embedded PGlite database (single process: no lock needed). */
export async function migrateEmbedded(pg: import('@electric-sql/pglite').PGlite): Promise<void> {
  const { drizzle } = await import('drizzle-orm/pglite');
  const { migrate } = await import('drizzle-orm/pglite/migrator');
  await migrate(drizzle(pg), { migrationsFolder: MIGRATIONS_FOLDER });
}
