/**
 * PostgreSQL through postgres.js (Node; the Workers open theirs in src/worker/database.ts).
 *
 * Connections are made by Chime's own socket factory (postgres.js's `socket` option), which does what postgres.js
 * 3.4.9 does not (docs/design.md "Database connections"):
 * - **Which server.** With several hosts in DATABASE_URL and `target_session_attrs=read-write` (or `primary`) it
 *   connects only to a server that accepts writes, checked by a probe (`pg_is_in_recovery()`, `transaction_read_only`).
 *   postgres.js takes a hot standby for `read-write` (on PostgreSQL 14 and later it reads `default_transaction_read_only`,
 *   which is off on a standby, and not `in_hot_standby`), so after a primary died every statement failed with "cannot
 *   execute … in a read-only transaction"; and while no host answered it tried them in turn without a pause, the
 *   statement waiting (a busy loop). Here an attempt tries each host once and otherwise fails: the API answers 503,
 *   and the driver's backoff paces the next attempt.
 * - **A dead connection is noticed.** Every connection is watched: one that has a statement outstanding and receives
 *   nothing for `statement_timeout` + ANSWER_GRACE_MS is destroyed (its statements fail, the pool reconnects). A
 *   server that runs the statement answers within `statement_timeout` (with the error if nothing else), so only a dead
 *   path (a black hole, a middlebox that lost the connection, a frozen server) stays silent that long. TCP keepalives
 *   cannot see every such path: they probe only an idle connection, and a proxy in between answers them itself.
 * - **Nothing is left waiting on a closed connection** (see `Watched`).
 * - **TLS** is negotiated here (the same modes as postgres.js's `ssl`), so that the watch reads the protocol's bytes.
 * The connector is pg-connector.ts, the watch pg-watch.ts.
 */
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import type { Database, Db } from './db.ts';
import { ANSWER_GRACE_MS, CONNECTION_SETTINGS, Connector, durationMs, type ParsedOptions } from './pg-connector.ts';
import * as schema from './schema.ts';

/** Pool size of one process unless configured. */
export const DEFAULT_POOL_SIZE = 10;

export { ANSWER_GRACE_MS, CONNECTION_SETTINGS } from './pg-connector.ts';

export type PostgresOptions = {
  /** Connections in the pool (default DEFAULT_POOL_SIZE). */
  max?: number;
  /** Called when the connection pool reports a notice or error worth logging. */
  onNotice?: (message: string) => void;
  /** Called with every statement and its parameters (drizzle's query logger); for tests that inspect statements. */
  onStatement?: (query: string, params: readonly unknown[]) => void;
  /**
   * `statement_timeout` of the connections, ms (default CONNECTION_SETTINGS'; 0: none, and no dead-connection watch,
   * for migrations, whose statements may run long). A `statement_timeout` in the URL wins, as for every setting.
   */
  statementTimeoutMs?: number;
};

/**
 * Opens a postgres.js pool on `url` (`postgres://user:pass@host:port/db`, or several hosts:
 * `postgres://user@h1:5432,h2:5432/db?target_session_attrs=read-write`). Connections are made lazily, so this never
 * throws for an unreachable server; the first query does.
 * @throws Error for a `target_session_attrs` that asks for a server Chime cannot write to
 */
export function openPostgres(url: string, opts: PostgresOptions = {}): Database & { sql: postgres.Sql } {
  // The URL as postgres.js reads it (hosts, TLS mode, credentials, target_session_attrs); nothing connects.
  const parsed = postgres(url, { max: 1 }).options as unknown as ParsedOptions;
  const wanted = parsed.target_session_attrs ?? null;
  if (wanted !== null && wanted !== 'read-write' && wanted !== 'primary') {
    throw new Error(`DATABASE_URL asks for target_session_attrs=${wanted}, but Chime writes: use read-write (or leave it out)`);
  }
  const s = CONNECTION_SETTINGS;
  const connector = new Connector(parsed, wanted !== null);
  const inUrl = new URLSearchParams(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '');
  const options = {
    max: opts.max ?? DEFAULT_POOL_SIZE,
    onnotice: (n: postgres.Notice) => opts.onNotice?.(String(n.message)),
    // An option would win over the URL's query string in postgres.js: set only what the URL does not.
    ...(inUrl.has('connect_timeout') ? {} : { connect_timeout: s.connectTimeoutS }),
    ...(inUrl.has('keep_alive') ? {} : { keep_alive: s.keepAliveS }),
    backoff: (failures: number) => (0.5 + Math.random() / 2) * Math.min(3 ** failures / 100, s.reconnectBackoffMaxS),
    // One host for postgres.js: the connector chooses among the URL's. (With several, postgres.js passes over a failed
    // connection attempt without failing its statement, and retries at once.) TLS is the connector's too.
    host: parsed.host[0],
    port: parsed.port[0],
    ssl: false,
    socket: () => connector.connect(),
    // Times travel as timestamptz; parse them to Date (postgres.js default) and keep bigint as string.
    // Statements are prepared (see `preparing`), but planned for each execution's parameters: a generic plan chosen
    // while a table was still small or unanalyzed (a fresh database, a burst of new runs) turned the claim into a
    // sequential scan in the drain benchmark. Parsing once is the saving; re-planning is cheap.
    // The session settings of CONNECTION_SETTINGS follow; the URL's query string wins over them (postgres.js merges it last).
    connection: {
      application_name: 'chime',
      plan_cache_mode: 'force_custom_plan',
      statement_timeout: String(opts.statementTimeoutMs ?? s.statementTimeoutMs),
      idle_in_transaction_session_timeout: String(s.idleInTransactionSessionTimeoutMs),
      tcp_keepalives_idle: String(s.serverKeepalivesIdleS),
      tcp_keepalives_interval: String(s.serverKeepalivesIntervalS),
      tcp_keepalives_count: String(s.serverKeepalivesCount),
    },
  };
  // `socket` is a postgres.js option its type declarations leave out.
  const client = postgres(url, options as unknown as postgres.Options<Record<string, never>>);
  // The URL's settings win over the ones above: the connector follows what postgres.js made of them.
  const effective = client.options as unknown as ParsedOptions & { connect_timeout?: number | false; keep_alive?: number | false };
  const statementTimeoutMs = durationMs(String(effective.connection.statement_timeout ?? ''));
  connector.connectTimeoutMs = (Number(effective.connect_timeout) || s.connectTimeoutS) * 1000;
  connector.keepAliveS = Number(effective.keep_alive) || 0;
  connector.answerTimeoutMs = statementTimeoutMs === 0 ? 0 : (statementTimeoutMs ?? s.statementTimeoutMs) + ANSWER_GRACE_MS;
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
    close: async () => {
      await client.end({ timeout: 5 });
      connector.close();
    },
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
