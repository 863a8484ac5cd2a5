/**
 * What a workload costs PostgreSQL in writes and statements, from the server's own counters, which move far less with
 * the machine's load than CPU does:
 * - WAL bytes: `pg_wal_lsn_diff` of `pg_current_wal_lsn()` after and before. Cluster-wide: the bench's one system at a
 *   time is what writes (the harness only reads), autovacuum of its tables included, as it is part of the cost.
 * - statements: the sum of `calls` in `pg_stat_statements` for the system's database (its `dbid`), less the statements
 *   the harness itself sent there (`CountedSql`). Needs the extension preloaded
 *   (`shared_preload_libraries = 'pg_stat_statements'`, a server restart); without it the figure is null and a note
 *   says why. Every statement counts, `BEGIN` and `COMMIT` included (`pg_stat_statements.track_utility`, on by default).
 */
import type { DatabaseFactory, Sql } from './db.ts';

/** One reading: the WAL position and the statements executed so far in one database (null: not measurable here). */
export type DbWorkSample = { lsn: string; calls: number | null; harness: number };

/** Per delivered callback, from two samples. */
export type DbWork = { walBytesPerCallback: number | null; statementsPerCallback: number | null };

/** Why `calls` is null, for a result's notes. */
export const NO_STATEMENTS_NOTE =
  "statements per callback: pg_stat_statements is not preloaded on this server (shared_preload_libraries = 'pg_stat_statements')";

/** A postgres.js client that counts the statements it sends (its `debug` hook runs once per query). */
export type CountedSql = { sql: Sql; statements: () => number };

/**
 * Whether the server has pg_stat_statements loaded; when it does, the extension is created in the admin database (its
 * view reads the cluster-wide counters, for every database).
 */
export async function statementsAvailable(admin: Sql): Promise<boolean> {
  const [row] = await admin<{ on: boolean }[]>`
    select 'pg_stat_statements' = any(string_to_array(replace(current_setting('shared_preload_libraries'), ' ', ''), ',')) as on`;
  if (!row!.on) return false;
  await admin`create extension if not exists pg_stat_statements`;
  return true;
}

/**
 * Reads the WAL position and the statements executed in `dbName` so far.
 * @param harnessStatements what the harness has sent to that database so far (subtracted from the calls)
 */
export async function sampleDbWork(databases: DatabaseFactory, dbName: string, harnessStatements: number): Promise<DbWorkSample> {
  const admin = databases.adminSql;
  const [wal] = await admin<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`;
  let calls: number | null = null;
  if (await databases.statementsAvailable()) {
    const [row] = await admin<{ n: string }[]>`
      select coalesce(sum(s.calls), 0)::text as n from pg_stat_statements s join pg_database d on d.oid = s.dbid where d.datname = ${dbName}`;
    calls = Number(row!.n);
  }
  return { lsn: wal!.lsn, calls, harness: harnessStatements };
}

/** WAL bytes and statements per callback between two samples; null where not measurable or without callbacks. */
export async function dbWorkPer(admin: Sql, before: DbWorkSample, after: DbWorkSample, callbacks: number): Promise<DbWork> {
  if (callbacks === 0) return { walBytesPerCallback: null, statementsPerCallback: null };
  const [row] = await admin<{ bytes: string }[]>`select pg_wal_lsn_diff(${after.lsn}::pg_lsn, ${before.lsn}::pg_lsn)::text as bytes`;
  const statements = before.calls === null || after.calls === null ? null : after.calls - before.calls - (after.harness - before.harness);
  return {
    walBytesPerCallback: Number(row!.bytes) / callbacks,
    statementsPerCallback: statements === null ? null : statements / callbacks,
  };
}

/** The server's WAL position now (`pg_current_wal_lsn()`, as text), for `walBytesSince`. */
export async function walPosition(sql: Sql): Promise<string> {
  return (await sql<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`)[0]!.lsn;
}

/** WAL bytes the server wrote since position `lsn` (`pg_wal_lsn_diff`; cluster-wide). */
export async function walBytesSince(sql: Sql, lsn: string): Promise<number> {
  return Number((await sql<{ bytes: string }[]>`select pg_wal_lsn_diff(pg_current_wal_lsn(), ${lsn}::pg_lsn)::text as bytes`)[0]!.bytes);
}

/** Rows inserted, updated (of them HOT: no index entry written) and deleted, per table. */
export type TableWrites = Record<string, { ins: number; upd: number; hot: number; del: number }>;

/**
 * The row writes of `tables` in the database of `sql` so far (`pg_stat_user_tables`). A backend sends its counts at the
 * end of a transaction at most once a second, and when its connection ends: the caller waits for them.
 */
export async function tableWrites(sql: Sql, tables: readonly string[]): Promise<TableWrites> {
  const rows = await sql<{ relname: string; ins: string; upd: string; hot: string; del: string }[]>`
    select relname, n_tup_ins::text as ins, n_tup_upd::text as upd, n_tup_hot_upd::text as hot, n_tup_del::text as del
    from pg_stat_user_tables where relname in ${sql(tables)}`;
  return Object.fromEntries(
    rows.map((r) => [r.relname, { ins: Number(r.ins), upd: Number(r.upd), hot: Number(r.hot), del: Number(r.del) }]),
  );
}

/** The writes of each of `tables` between two readings, per run of `runs`; a table in neither reading is left out. */
export function writesPerRun(before: TableWrites, after: TableWrites, tables: readonly string[], runs: number): TableWrites {
  const per = (t: string, k: 'ins' | 'upd' | 'hot' | 'del') => ((after[t]?.[k] ?? 0) - (before[t]?.[k] ?? 0)) / runs;
  return Object.fromEntries(
    tables
      .filter((t) => after[t] || before[t])
      .map((t) => [t, { ins: per(t, 'ins'), upd: per(t, 'upd'), hot: per(t, 'hot'), del: per(t, 'del') }]),
  );
}

/** `runs +0.00 ~2.00 (HOT 0.00) -0.00, …`: inserted, updated (HOT), deleted, per table. */
export function formatWrites(writes: TableWrites): string {
  return Object.entries(writes)
    .map(([t, w]) => `${t} +${w.ins.toFixed(2)} ~${w.upd.toFixed(2)} (HOT ${w.hot.toFixed(2)}) -${w.del.toFixed(2)}`)
    .join(', ');
}
