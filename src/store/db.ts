/**
 * The database handle shared by every store module: a drizzle `PgDatabase` over postgres.js or PGlite.
 * Both speak the same SQL; the one difference (the shape `execute` returns) is hidden by `query`.
 * This module is runtime-portable: drivers are opened in `postgres.ts` (also on Workers) and `embedded.ts` (Node).
 */
import { type ExtractTablesWithRelations, type SQL, sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import type * as schema from './schema.ts';

/** A drizzle database over either driver. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
/** A transaction of `Db`. */
export type Tx = PgTransaction<PgQueryResultHKT, typeof schema, ExtractTablesWithRelations<typeof schema>>;
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

/**
 * Runs raw SQL and returns its rows, whichever driver is underneath. The statement is handed to the driver before this
 * returns (not one promise job later, as an `await` would), so `pipelined` keeps the order of its statements.
 */
export function query<T>(db: Executor, statement: SQL): Promise<T[]> {
  return db.execute(statement).then((result: unknown) => (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[]);
}

/** A timestamp column's value as epoch ms (UTC): a Date from postgres.js's parsers, an ISO text from a raw row. */
export function epochMs(d: Date | string): number {
  return d instanceof Date ? d.getTime() : Date.parse(d);
}

/**
 * Ids as one PostgreSQL array literal (`{a,b}`), for `= any($1::uuid[])`: one parameter however many ids, where
 * `inArray` binds one each (10,000 in a bulk action). The ids must be UUIDs (they come from rows or validated input).
 */
export function uuidArray(ids: readonly string[]): string {
  return `{${ids.join(',')}}`;
}

/**
 * A WHERE condition joining a batch's rows of one bucket (the updated table, as `alias`) to `v`, the batch as
 * `jsonb_to_recordset` rows with an `id` column, by primary key; the ids are named again as an array, so that statistics
 * older than the bucket's rows cannot make PostgreSQL read the bucket once per row of the batch (a nested loop under
 * the hot path's planner settings): it reads the batch's rows, or the bucket once at worst (test/store/queue-cost.test.ts).
 * @param alias the updated table's alias in the statement (a fixed identifier, never input)
 * @param shard the batch's bucket (every row of the batch is in it)
 * @param ids the batch's ids, as in `v` (UUIDs)
 */
export function batchByPrimaryKey(alias: 'r' | 'j', shard: number, ids: readonly string[]): SQL {
  const a = sql.raw(alias);
  return sql`${a}.shard = ${shard} and ${a}.id = v.id and ${a}.id = any(${uuidArray(ids)}::uuid[])`;
}

/**
 * Planner method settings for a group of statements: PostgreSQL's `enable_*` parameters (manual 20.7.1, "Planner Method
 * Configuration") and the value each must have while the group is planned.
 */
export type PlannerSettings = Readonly<Record<`enable_${string}`, 'on' | 'off'>>;

/**
 * Runs `statements` (each a function that starts one) in transaction `tx`, in the order given, with `plan`'s planner
 * settings in force for exactly these statements: the settings are sent before the first (each previous value saved in
 * a transaction-local `chime.saved_<name>`) and put back after the last. This and `planTransaction` (for a whole
 * transaction) are the only ways Chime sends a `set_config`, so a statement added later to a transaction never inherits
 * a setting unknowingly.
 *
 * The statements reach the driver in the order given: each function must hand its statement to the driver before it
 * returns, by returning a drizzle query not yet started (this loop starts it, by calling its `then`), or by calling
 * `query` (which starts it at once); an async function that awaits, or returns a query, starts it a promise job late.
 * postgres.js writes what is queued on the transaction's connection together (one round trip and one wake-up of the
 * server for the group), PGlite runs them in turn. Only for statements that do not need each other's results.
 * @param plan the settings, or null for none
 * @returns the statements' results, in the order given @throws the error of the first statement (in the order given)
 *   that failed: the transaction is aborted then
 */
export async function pipelined<T extends readonly unknown[]>(
  tx: Executor,
  plan: PlannerSettings | null,
  ...statements: { [K in keyof T]: () => PromiseLike<T[K]> }
): Promise<T> {
  const names = plan ? settingNames(plan) : [];
  const steps: (() => PromiseLike<unknown>)[] = [...statements];
  if (plan && names.length > 0) {
    const set = names.map(
      (n) =>
        `set_config('chime.saved_${n}', current_setting('${n}'), true), set_config('${n}', '${plan[n as keyof PlannerSettings]}', true)`,
    );
    const reset = names.map((n) => `set_config('${n}', current_setting('chime.saved_${n}'), true)`);
    steps.unshift(() => tx.execute(sql.raw(`select ${set.join(', ')}`)));
    steps.push(() => tx.execute(sql.raw(`select ${reset.join(', ')}`)));
  }
  const started = steps.map((start) => {
    const step = start();
    // A drizzle query starts when its `then` is called: call it now, in this loop's order.
    return step instanceof Promise ? step : new Promise<unknown>((resolve, reject) => step.then(resolve, reject));
  });
  const settled = await Promise.allSettled(started);
  // The first failure in statement order: the later ones fail only because the transaction was aborted by it.
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  const results = settled.map((r) => (r as PromiseFulfilledResult<unknown>).value);
  return (plan && names.length > 0 ? results.slice(1, -1) : results) as unknown as T;
}

/** The names of `plan`'s settings. @throws TypeError for a name that is not a planner method setting */
function settingNames(plan: PlannerSettings): (keyof PlannerSettings)[] {
  const names = Object.keys(plan) as (keyof PlannerSettings)[];
  for (const name of names) if (!/^enable_[a-z_]+$/.test(name)) throw new TypeError(`not a planner method setting: ${name}`);
  return names;
}

/**
 * Puts `plan`'s planner settings in force for the rest of transaction `tx` (`set_config(…, true)`: they end with it),
 * for a transaction every statement of which is meant to be planned under them (the claim's): one statement, where
 * each `pipelined` group under the plan sends two (the settings with each previous value saved, then their reset). A
 * `pipelined` group with a plan of its own later in the transaction puts these back after it. Started before it
 * returns, so the transaction's next statement follows it in the same round trip (postgres.js).
 * @throws TypeError for a name that is not a planner method setting (nothing sent)
 */
export function planTransaction(tx: Executor, plan: PlannerSettings): Promise<void> {
  const names = settingNames(plan);
  if (names.length === 0) return Promise.resolve();
  const set = names.map((n) => `set_config('${n}', '${plan[n]}', true)`).join(', ');
  return query(tx, sql.raw(`select ${set}`)).then(() => undefined);
}

/** One query under `plan` (`pipelined` with a single statement): its rows. */
export async function queryPlanned<T>(tx: Executor, plan: PlannerSettings, statement: SQL): Promise<T[]> {
  const [rows] = await pipelined<[T[]]>(tx, plan, () => query<T>(tx, statement));
  return rows;
}

/** `err` and its causes (`cause`, at most 5 deep), as the drivers and drizzle nest them. */
export function errorChain(err: unknown): { code?: unknown; message?: unknown }[] {
  const chain: { code?: unknown; message?: unknown; cause?: unknown }[] = [];
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) chain.push(e);
  return chain;
}

/** True for PostgreSQL's unique_violation (SQLSTATE 23505), from either driver, and for Citus's report of one. */
export function isUniqueViolation(err: unknown): boolean {
  return (
    errorChain(err).some((e) => e.code === '23505') ||
    // Citus reports a shard's unique violation in an INSERT … SELECT through the coordinator as XX000, with PostgreSQL's text.
    errorChain(err).some((e) => e.code === 'XX000' && /^duplicate key value violates unique constraint/.test(String(e.message)))
  );
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
export function announceRun(ex: Executor, dueAtMs: number | null, nowMs: number): Promise<void> {
  const payload = announcement(dueAtMs, nowMs);
  // Started before it returns (not an async function), so `pipelined` keeps its place in the order.
  return payload === null ? Promise.resolve() : query(ex, sql`select pg_notify(${RUNS_CHANNEL}, ${payload})`).then(() => undefined);
}
