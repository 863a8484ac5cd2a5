/**
 * Citus (distributed PostgreSQL): when the database has the `citus` extension, every tenant-owned table becomes a
 * distributed table by its shard key `shard` (docs/design.md section 4), all colocated with `tenants`, so that a
 * statement naming one `shard` value is routed to the one node holding it and joins on `(shard, id)` stay on it;
 * the service's own tables (no tenant, small, read everywhere) become reference tables, copied to every node.
 * Without Citus this does nothing, so one migration path serves both.
 */

import { sql as drizzleSql, type SQL } from 'drizzle-orm';
import type postgres from 'postgres';
import { SHARD_COUNT } from '../domain/shard.ts';
import { type Db, query } from './db.ts';

/** Citus shards of each distributed table; the 64 buckets of `shard` spread over them (a bucket never splits). */
export const CITUS_SHARD_COUNT = 32;

/** Tables distributed by `shard`, colocated with the first (`tenants`). */
export const DISTRIBUTED_TABLES = [
  'tenants',
  'api_keys',
  'signing_secrets',
  'jobs',
  'runs',
  'attempts',
  'idempotency_keys',
  'notification_endpoints',
  'audit_log',
  'tenant_callbacks',
  'flow_controls',
  'calendars',
  'open_jobs',
] as const;

/** Tables without a tenant: copied to every node. drizzle's journal (`drizzle.__drizzle_migrations`) stays local. */
export const REFERENCE_TABLES = ['jwt_keys', 'api_processes'] as const;

/** Whether the database `sql` is connected to has the `citus` extension installed. */
export async function hasCitus(sql: postgres.Sql): Promise<boolean> {
  const rows = await sql`select 1 from pg_extension where extname = 'citus'`;
  return rows.length > 0;
}

/**
 * Distributes the tenant tables by `shard` and makes the global tables reference tables, when the database has
 * Citus; tables Citus already knows are left as they are, so running it again does nothing.
 * Call it after the migrations, on a connection outside a transaction (each Citus call commits on its own).
 * @returns whether Citus was found
 */
export async function distributeOnCitus(sql: postgres.Sql): Promise<boolean> {
  if (!(await hasCitus(sql))) return false;
  const known = new Set(
    (await sql<{ name: string }[]>`select logicalrelid::regclass::text as name from pg_dist_partition`).map((r) => r.name),
  );
  for (const table of DISTRIBUTED_TABLES) {
    if (known.has(table)) continue;
    if (table === 'tenants') {
      await sql`select create_distributed_table(${table}, 'shard', shard_count => ${CITUS_SHARD_COUNT}::int)`;
    } else {
      await sql`select create_distributed_table(${table}, 'shard', colocate_with => 'tenants')`;
    }
    await dropLocalCopy(sql, table);
  }
  for (const table of REFERENCE_TABLES) {
    if (known.has(table)) continue;
    await sql`select create_reference_table(${table})`;
    await dropLocalCopy(sql, table);
  }
  return true;
}

/**
 * Rows a table held before it was distributed are copied to its shards and stay behind, unseen, in the
 * coordinator's local table; this empties that copy (nothing to do for a new database).
 */
async function dropLocalCopy(sql: postgres.Sql, table: string): Promise<void> {
  await sql`select truncate_local_data_after_distributing_table(${table})`;
}

/** Whether each open database is a Citus coordinator, asked once per database handle (`isCitus`). */
const citusOf = new WeakMap<object, Promise<boolean>>();

/**
 * Whether `db` is a Citus coordinator (has the `citus` extension), asked once per handle and remembered; false on
 * plain PostgreSQL and PGlite. A failed check is not remembered.
 */
export function isCitus(db: Db): Promise<boolean> {
  let known = citusOf.get(db);
  if (!known) {
    known = query<{ citus: boolean }>(db, drizzleSql`select exists (select 1 from pg_extension where extname = 'citus') as citus`).then(
      ([row]) => row?.citus === true,
    );
    known.catch(() => citusOf.delete(db));
    citusOf.set(db, known);
  }
  return known;
}

/**
 * The buckets a read across buckets probes, as a FROM item `b(shard)`, each probed by a subquery correlated on
 * `b.shard` (one index probe of a shard-led index per bucket). On PostgreSQL and PGlite every bucket,
 * `generate_series(0, SHARD_COUNT - 1)`: SHARD_COUNT probes whatever the tables hold. Citus refuses a correlated
 * subquery beside a set-returning function ("correlated subqueries are not supported when the FROM clause contains a
 * set returning function"), so there the buckets are those of the tenants (`tenants` grouped by `shard`): Citus
 * pushes the whole statement down to every shard in parallel, where each probe is local (the subquery names the
 * distribution column of the outer row). A bucket without tenants holds no runs, so the answer is the same.
 */
export async function bucketsToProbe(db: Db): Promise<SQL> {
  return (await isCitus(db))
    ? drizzleSql`(select shard from tenants group by shard) as b(shard)`
    : drizzleSql`generate_series(0, ${SHARD_COUNT - 1}::int) as b(shard)`;
}

/**
 * Runs a read across buckets: `statement` over the FROM item `b(shard)` of `bucketsToProbe`. On Citus, when that
 * fails (a worker is down: the read needs every one), it runs again for each bucket alone, which Citus routes to the
 * one worker holding it, and leaves out the buckets that fail: a worker that is down holds up only its own tenants.
 * @returns the rows of every bucket that answered
 * @throws the error of the read across buckets on PostgreSQL and PGlite (one server: nothing to isolate), and on
 *   Citus when no bucket answers
 */
export async function acrossBuckets<T>(db: Db, statement: (buckets: SQL) => SQL): Promise<T[]> {
  try {
    return await query<T>(db, statement(await bucketsToProbe(db)));
  } catch (err) {
    if (!(await isCitus(db).catch(() => false))) throw err;
    const rows: T[] = [];
    let answered = 0;
    for (let shard = 0; shard < SHARD_COUNT; shard++) {
      try {
        rows.push(...(await query<T>(db, statement(drizzleSql`(values (${shard}::smallint)) as b(shard)`))));
        answered++;
      } catch {
        // This bucket's worker is down; the others go on.
      }
    }
    if (answered === 0) throw err;
    return rows;
  }
}
