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

/**
 * Runs `setting` (a `set_config(…, true)` for the rest of the transaction) and then `statement` in transaction `tx`,
 * sent together: the driver queues both on the transaction's connection in call order (postgres.js pipelines them,
 * PGlite runs them in turn), so the setting is in force when the statement is planned and the pair costs one round
 * trip instead of two.
 * @returns the statement's rows @throws the first error of either
 */
export async function queryWithSetting<T>(tx: Executor, setting: SQL, statement: SQL): Promise<T[]> {
  // Both through `query`, in this order: each reaches the driver after the same number of microtasks, so in call
  // order (an `execute` promise is lazy: handed to Promise.all as it is, it would start after the statement).
  const set = query(tx, setting);
  const rows = query<T>(tx, statement);
  return (await Promise.all([set, rows]))[1];
}

/**
 * Starts every statement of `statements` (each a function that starts one) in transaction `tx` at once and waits for
 * them all: postgres.js writes what is queued on a connection together, so they cost one round trip and one wake-up
 * of the server instead of one each (PGlite runs them in turn). Only for statements that depend neither on each
 * other's results nor on their order.
 * @returns their results, in the order given @throws the first error (the transaction is aborted then)
 */
export async function together<T extends readonly unknown[]>(...statements: { [K in keyof T]: () => PromiseLike<T[K]> }): Promise<T> {
  return (await Promise.all(statements.map((start) => start()))) as unknown as T;
}

/** `err` and its causes (`cause`, at most 5 deep), as the drivers and drizzle nest them. */
export function errorChain(err: unknown): { code?: unknown; message?: unknown }[] {
  const chain: { code?: unknown; message?: unknown; cause?: unknown }[] = [];
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) chain.push(e);
  return chain;
}

/** True for PostgreSQL's deadlock_detected (SQLSTATE 40P01) anywhere in `err`'s `cause` chain (drizzle wraps the driver's). */
export function isDeadlock(err: unknown): boolean {
  return errorChain(err).some((e) => e.code === '40P01');
}

/**
 * True for a PostgreSQL data exception (SQLSTATE class 22: a value the statement's types refuse, such as U+0000 in
 * `text` or `jsonb`, or a timestamp out of range) anywhere in `err`'s `cause` chain. Such an error is caused by the
 * statement's data, not by the database's state: sending the same values again fails again.
 */
export function isDataException(err: unknown): boolean {
  return errorChain(err).some((e) => typeof e.code === 'string' && e.code.startsWith('22'));
}

/**
 * Runs `fn` in a transaction of `db`, and runs it again, up to `tries` times in all, when PostgreSQL aborted it as a
 * deadlock's victim (everything it did was rolled back). For the API's job mutations, which lock a job and then its
 * runs, while a claim locks runs and then their jobs: the two orders cannot be one (a claim finds its runs first), so
 * the rare cycle is broken by PostgreSQL and the API's side retried, as PostgreSQL's manual advises (13.3.4).
 * @throws the last error, or at once any error that is not a deadlock
 */
export async function transactionRetryingDeadlocks<T>(db: Db, fn: (tx: Tx) => Promise<T>, tries = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(fn);
    } catch (err) {
      if (attempt >= tries || !isDeadlock(err)) throw err;
    }
  }
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
