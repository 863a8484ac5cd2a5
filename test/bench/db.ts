/**
 * PostgreSQL administration for the benchmark: one template database per system family (schema installed once),
 * a fresh database per measured run cloned from it (`CREATE DATABASE bench_<system>_<pid>_<n> TEMPLATE …`, the
 * same per-run isolation as test/support/databases.ts, without re-running migrations each time), dropped at the
 * end; and `cloneRows` to fill a table with millions of rows in SQL (`INSERT … SELECT … generate_series`).
 */
import postgres from 'postgres';
import { type CountedSql, statementsAvailable } from './db-work.ts';

export type Sql = postgres.Sql;

/** Longest wait for a database's clients to disconnect before it is dropped, in ms. */
const DROP_WAIT_MS = 5_000;

/** What every harness client is opened with: notices dropped, idle connections closed after 30 s. */
const CLIENT_OPTIONS = { onnotice: () => {}, idle_timeout: 30 };

/**
 * The PostgreSQL where a benchmark may create and drop databases: DATABASE_URL, else TEST_DATABASE_URL.
 * @throws Error naming both when neither is set
 */
export function benchAdminUrl(): string {
  const url = process.env.DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('set DATABASE_URL (or TEST_DATABASE_URL) to a PostgreSQL where databases may be created');
  return url;
}

/** Opens a postgres.js client on `url` (one connection unless told). */
export function connect(url: string, max = 1): Sql {
  return postgres(url, { ...CLIENT_OPTIONS, max });
}

/** A one-connection client on `url` that counts the statements it sends (the harness's own, for `db-work.ts`). */
export function connectCounted(url: string): CountedSql {
  let n = 0;
  const sql = postgres(url, { ...CLIENT_OPTIONS, max: 1, debug: () => void n++ });
  return { sql, statements: () => n };
}

/** `url` with its database name replaced by `name`. */
export function urlFor(adminUrl: string, name: string): string {
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * Creates databases on the server of `adminUrl` and drops them again. Names embed this process's pid, so that
 * `dropStale()` can remove what a crashed earlier run left behind without touching a run still going.
 */
export class DatabaseFactory {
  private readonly admin: Sql;
  private readonly created = new Set<string>();
  private n = 0;
  private statements: Promise<boolean> | null = null;

  constructor(readonly adminUrl: string) {
    this.admin = connect(adminUrl);
  }

  /** The connection to the admin database (server-wide readings: db-work.ts). */
  get adminSql(): Sql {
    return this.admin;
  }

  /** Whether pg_stat_statements is loaded on the server (read once; db-work.ts). */
  statementsAvailable(): Promise<boolean> {
    this.statements ??= statementsAvailable(this.admin);
    return this.statements;
  }

  /**
   * Creates an empty database (`template` null) or a copy of `template`.
   * @param label lower-case identifier part, e.g. `chime`, `pgboss_tuned`, `tpl_chime`
   * @returns the new database's name and URL
   */
  async create(label: string, template: string | null = null): Promise<{ name: string; url: string }> {
    const name = `bench_${label}_${process.pid}_${++this.n}`;
    await this.admin.unsafe(`create database ${name}${template ? ` template ${template}` : ''}`);
    this.created.add(name);
    return { name, url: urlFor(this.adminUrl, name) };
  }

  /**
   * Drops `name`. Waits up to 5 s for clients still closing (graphile-worker's `release()` ends its pool without
   * awaiting it, and a pool connection terminated under it crashes the process), then terminates the rest.
   */
  async drop(name: string): Promise<void> {
    const deadline = Date.now() + DROP_WAIT_MS;
    for (;;) {
      const [row] = await this.admin<{ n: number }[]>`select count(*)::int as n from pg_stat_activity where datname = ${name}`;
      if (row!.n === 0 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await this.admin.unsafe(`drop database if exists ${name} with (force)`);
    this.created.delete(name);
  }

  /** Drops `bench_*` databases whose creating process no longer runs. Returns their names. */
  async dropStale(): Promise<string[]> {
    const rows = await this.admin<{ datname: string }[]>`select datname from pg_database where datname like 'bench\\_%'`;
    const dropped: string[] = [];
    for (const { datname } of rows) {
      const pid = Number(/_(\d+)_\d+$/.exec(datname)?.[1]);
      if (!pid || pid === process.pid || isAlive(pid)) continue;
      await this.drop(datname);
      dropped.push(datname);
    }
    return dropped;
  }

  /** The server's version string (`server_version`). */
  async serverVersion(): Promise<string> {
    const [row] = await this.admin<{ v: string }[]>`select current_setting('server_version') as v`;
    return row!.v;
  }

  /** Drops every database this factory created, then closes its connection. */
  async close(): Promise<void> {
    for (const name of [...this.created]) await this.drop(name).catch(() => {});
    await this.admin.end();
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Inserts copies of one template row of `table`, one per `g` in `[from, to]`, in a single `INSERT … SELECT`
 * over `generate_series`. Columns are read from the catalog, so the copy follows the real schema; identity
 * (`GENERATED ALWAYS`) and generated columns are left to their defaults.
 * @param overrides column → SQL expression (may use `g`, the series value, and `t.` for the template row)
 * @param templateWhere SQL condition selecting exactly one row as `t`
 * @returns rows inserted
 */
export async function cloneRows(
  sql: Sql,
  table: { schema: string; name: string },
  templateWhere: string,
  overrides: Record<string, string>,
  from: number,
  to: number,
): Promise<number> {
  const cols = await sql<{ column_name: string }[]>`
    select column_name from information_schema.columns
    where table_schema = ${table.schema} and table_name = ${table.name}
      and is_generated = 'NEVER' and coalesce(identity_generation, '') <> 'ALWAYS'
    order by ordinal_position`;
  const names = cols.map((c) => c.column_name);
  for (const k of Object.keys(overrides)) if (!names.includes(k)) throw new Error(`${table.schema}.${table.name} has no column ${k}`);
  const q = (c: string) => `"${c}"`;
  const list = names.map(q).join(', ');
  const exprs = names.map((c) => overrides[c] ?? `t.${q(c)}`).join(', ');
  const target = `${q(table.schema)}.${q(table.name)}`;
  const r = await sql.unsafe(
    `insert into ${target} (${list}) select ${exprs} from ${target} t, generate_series(${from}::bigint, ${to}::bigint) g where ${templateWhere}`,
  );
  return r.count;
}

/** Pids of the client backends connected to `sql`'s database, except the one running this query. */
export async function clientBackendPids(sql: Sql): Promise<number[]> {
  const rows = await sql<{ pid: number }[]>`
    select pid from pg_stat_activity
    where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()`;
  return rows.map((r) => r.pid);
}
