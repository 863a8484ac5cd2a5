/**
 * PostgreSQL from a Worker: postgres.js (its `workerd` build, over `cloudflare:sockets`) on the Hyperdrive
 * connection string, one small client per request or tick. Workers may not share I/O objects between requests,
 * and Hyperdrive keeps the real connection pool near the database, so a client per invocation is the pattern
 * Cloudflare documents (https://developers.cloudflare.com/hyperdrive/examples/connect-to-postgres/postgres-drivers-and-libraries/postgres-js/).
 * Migrations are not run from here: the operator runs `chime migrate` against the origin database.
 */

import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import type { Database, Db } from '../store/db.ts';
import * as schema from '../store/schema.ts';
import { WORKER_DB_CONNECTIONS } from './config.ts';

/** A database client for one invocation. `listen` is not offered: Hyperdrive does not carry LISTEN sessions. */
export type WorkerDatabase = Pick<Database, 'db' | 'close'>;

/** Opens a client of at most `max` connections (default WORKER_DB_CONNECTIONS), lazily: nothing connects yet. */
export function openWorkerDatabase(connectionString: string, max = WORKER_DB_CONNECTIONS): WorkerDatabase {
  const client = postgres(connectionString, {
    max,
    // Hyperdrive: skip the array-type lookup round trip on every new connection.
    fetch_types: false,
    onnotice: () => {},
  });
  const db = drizzle(client, { schema }) as unknown as Db;
  return { db, close: () => client.end({ timeout: 5 }) };
}
