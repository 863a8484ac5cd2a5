/**
 * The database handle shared by every store module: a drizzle `PgDatabase` over postgres.js or PGlite.
 * Both speak the same SQL; the one difference (the shape `execute` returns) is hidden by `query`.
 * This module is runtime-portable: drivers are opened in `postgres.ts` (also on Workers) and `embedded.ts` (Node).
 */
import type { SQL } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import type * as schema from './schema.ts';

/** A drizzle database over either driver. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
/** A transaction of `Db`. */
export type Tx = PgTransaction<PgQueryResultHKT, typeof schema, any>;
/** Anything a store function can run SQL on. */
export type Executor = Db | Tx;

/** An open database: the drizzle handle plus what differs per driver. */
export interface Database {
  readonly db: Db;
  readonly kind: 'postgres' | 'pglite';
  /**
   * Subscribes to a PostgreSQL `NOTIFY` channel; resolves once listening.
   * @returns a function that stops listening
   */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  /** Closes every connection. */
  close(): Promise<void>;
}

/** Runs raw SQL and returns its rows, whichever driver is underneath. */
export async function query<T>(db: Executor, statement: SQL): Promise<T[]> {
  const result = (await db.execute(statement)) as unknown;
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[];
}

/** The `NOTIFY` channel on which the API announces runs due soon; the payload is the due time in epoch ms. */
export const RUNS_CHANNEL = 'chime_runs';
