/**
 * PostgreSQL through postgres.js (production, and Cloudflare Workers through Hyperdrive).
 */

import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import type { Database, Db } from './db.ts';
import * as schema from './schema.ts';

/** Pool size of one process unless configured. */
export const DEFAULT_POOL_SIZE = 10;

export type PostgresOptions = {
  /** Connections in the pool (default DEFAULT_POOL_SIZE). */
  max?: number;
  /** Called when the connection pool reports a notice or error worth logging. */
  onNotice?: (message: string) => void;
  /** Called with every statement and its parameters (drizzle's query logger); for tests that inspect statements. */
  onStatement?: (query: string, params: readonly unknown[]) => void;
};

/**
 * Opens a postgres.js pool on `url` (`postgres://user:pass@host:port/db`). Connections are made lazily,
 * so this never throws for an unreachable server; the first query does.
 */
export function openPostgres(url: string, opts: PostgresOptions = {}): Database & { sql: postgres.Sql } {
  const client = postgres(url, {
    max: opts.max ?? DEFAULT_POOL_SIZE,
    onnotice: (n) => opts.onNotice?.(String(n.message)),
    // Times travel as timestamptz; parse them to Date (postgres.js default) and keep bigint as string.
    // Statements are prepared (see `preparing`), but planned for each execution's parameters: a generic plan chosen
    // while a table was still small or unanalyzed (a fresh database, a burst of new runs) turned the claim into a
    // sequential scan in the drain benchmark. Parsing once is the saving; re-planning is cheap.
    connection: { application_name: 'chime', plan_cache_mode: 'force_custom_plan' },
  });
  const logger = opts.onStatement ? { logQuery: opts.onStatement } : undefined;
  const db = drizzle(preparing(client), { schema, logger }) as unknown as Db;
  return {
    db,
    sql: client,
    kind: 'postgres',
    async listen(channel, onPayload) {
      const sub = await client.listen(channel, onPayload);
      return () => sub.unlisten();
    },
    close: () => client.end({ timeout: 5 }),
  };
}

/**
 * The client as drizzle sees it, with every query sent as a named prepared statement. drizzle-orm's postgres-js
 * driver passes `prepare: false` unless a query was given a name, so each query would be parsed, described and
 * planned again on every execution; postgres.js keys prepared statements by text and parameter types per
 * connection, so the hot path's fixed statements are parsed once per connection. Transactions' clients are wrapped
 * the same way.
 */
function preparing<T extends postgres.Sql | postgres.TransactionSql>(client: T): T {
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop === 'unsafe') {
        return (query: string, params?: unknown[], options?: { prepare?: boolean }) =>
          target.unsafe(query, params as never, { ...options, prepare: true });
      }
      if (prop === 'begin' || prop === 'savepoint') {
        return (...args: unknown[]) => {
          const last = args.length - 1;
          const body = args[last] as (tx: postgres.TransactionSql) => unknown;
          args[last] = (tx: postgres.TransactionSql) => body(preparing(tx));
          return (Reflect.get(target, prop) as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
