/**
 * The database handle shared by every store module: a drizzle `PgDatabase` over postgres.js or PGlite.
 * Both speak the same SQL; the one difference (the shape `execute` returns) is hidden by `query`.
 * This module is runtime-portable: drivers are opened in `postgres.ts` (also on Workers) and `embedded.ts` (Node).
 */
import { sql, type SQL } from 'drizzle-orm';
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

/**
 * Runs due more than this many ms after their creation are not announced on RUNS_CHANNEL. A dispatcher reads the
 * earliest due time at least every poll (DISPATCHER_DEFAULTS.pollMs, 2 s) and sleeps no longer than until then, so it
 * finds such runs in time without a wake-up; and a transaction that has called NOTIFY takes a database-wide lock
 * when it commits (PostgreSQL src/backend/commands/async.c, PreCommit_Notify), which serializes the commits of all
 * such transactions, their WAL flushes included: registering future jobs should not pay it.
 */
export const NOTIFY_HORIZON_MS = 30_000;

/**
 * The NOTIFY payload for a run due at `dueAtMs` (epoch ms): the due time as text, or null when it needs no
 * announcement (due past NOTIFY_HORIZON_MS after `nowMs`, or no run: `dueAtMs` null or not finite).
 */
export function announcement(dueAtMs: number | null, nowMs: number): string | null {
  return dueAtMs === null || !Number.isFinite(dueAtMs) || dueAtMs > nowMs + NOTIFY_HORIZON_MS ? null : String(dueAtMs);
}

/**
 * Announces a run due at `dueAtMs` (epoch ms) on RUNS_CHANNEL through `ex` (in the caller's transaction: the NOTIFY
 * is delivered when it commits), unless `announcement` says it needs none.
 */
export async function announceRun(ex: Executor, dueAtMs: number | null, nowMs: number): Promise<void> {
  const payload = announcement(dueAtMs, nowMs);
  if (payload !== null) await ex.execute(sql`select pg_notify(${RUNS_CHANNEL}, ${payload})`);
}
