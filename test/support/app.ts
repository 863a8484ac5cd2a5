/**
 * The API in process (`app.request`, no sockets) over a fresh database: an in-memory PGlite by default, or any
 * `DatabaseTarget` (PGlite in a temp dir, or a new PostgreSQL database on TEST_DATABASE_URL) for tests that must
 * pass on both. For fast HTTP-level tests of validation, problem details, isolation and limits.
 */
import { type ServerType, serve } from '@hono/node-server';
import { sql } from 'drizzle-orm';
import { createApp } from '../../src/api/app.ts';
import type { AppConfig, ResolveHost } from '../../src/api/env.ts';
import type { RequestRecord } from '../../src/api/requests.ts';
import { loadWebAssets } from '../../src/console/load-node.ts';
import { type Clock, systemClock } from '../../src/domain/clock.ts';
import { createCipher } from '../../src/store/cipher.ts';
import { type Database, query } from '../../src/store/db.ts';
import { openEmbedded } from '../../src/store/embedded.ts';
import { migrateEmbedded } from '../../src/store/migrate.ts';
import { OpenJobsEstimates } from '../../src/store/open-jobs.ts';
import { apiClient, createTestTenant, type TestTenant } from './api.ts';
import { ADMIN_TOKEN } from './chime-process.ts';
import type { DatabaseTarget } from './databases.ts';
import { pgliteTemplate } from './pglite-template.ts';
import { openTestStore } from './store.ts';

type Fetch = (input: string, init?: RequestInit) => Promise<Response>;

/** The base URL the in-process clients use (never resolved: requests go to `app.request`). */
export const TEST_APP_URL = 'http://chime.test';

export type TestApp = {
  fetch: Fetch;
  tenant(name?: string): Promise<TestTenant>;
  /** The app's routes as Hono registered them (`:param` form), middleware included (method ALL). */
  routes: { method: string; path: string }[];
  /** The database under the app, for SQL snapshots in tests. */
  database: Database;
  /**
   * A second app instance (a new `createApp`) over the same database, as a second API process would be: on
   * PostgreSQL with its own connection pool; on PGlite (one process opens it once) over the same handle.
   * `config` overrides this app's configuration. Closed by `close()`.
   */
  another(config?: Partial<AppConfig>): Promise<{ fetch: Fetch }>;
  /**
   * Serves this app over real HTTP on 127.0.0.1 through @hono/node-server, the adapter `chime serve` uses (its
   * lightweight requests and direct body reads are not what `app.request` exercises).
   * @returns the base URL (`http://127.0.0.1:<port>`); the server is closed by `close()`
   */
  listen(): Promise<string>;
  close(): Promise<void>;
};

export type TestAppOptions = {
  /** Where the data lives; default an in-memory PGlite (fastest). */
  target?: DatabaseTarget;
  clock?: Clock;
  onUnexpectedError?: (err: unknown, request: { requestId?: string }) => void;
  /** Called once per answered request (src/api/requests.ts). */
  onRequest?: (record: RequestRecord) => void;
  /** The host-name check of callback URLs (`chime serve` passes a DNS lookup; default none). */
  resolveHost?: ResolveHost;
};

/** The configuration tests run with unless they override it: admin token set, private destinations allowed, no limits. */
export const TEST_APP_CONFIG: AppConfig = {
  adminToken: ADMIN_TOKEN,
  signup: 'closed',
  allowPrivateDestinations: true,
  version: 'test',
  limits: { ratePerSecond: 0, burst: 0, maxActiveJobs: 0 },
};

/**
 * Starts the app over a fresh migrated database.
 * @param config overrides of TEST_APP_CONFIG
 * @param clockOrOptions a clock (the older form), or options with the target database
 */
export async function startTestApp(config: Partial<AppConfig> = {}, clockOrOptions: Clock | TestAppOptions = {}): Promise<TestApp> {
  const opts: TestAppOptions = 'now' in clockOrOptions ? { clock: clockOrOptions as Clock } : clockOrOptions;
  const clock = opts.clock ?? systemClock;
  const cipher = await createCipher(new Uint8Array(32).fill(3));
  let database: Database;
  let openAnother: () => Database;
  let closeAll: () => Promise<void>;
  if (!opts.target) {
    const embedded = await openEmbedded('memory://', { loadDataDir: await pgliteTemplate() });
    await migrateEmbedded(embedded.pg);
    database = embedded;
    openAnother = () => embedded;
    closeAll = () => embedded.close();
  } else {
    const store = await openTestStore(opts.target, clock);
    database = store.database;
    openAnother = () => store.openAnother() ?? store.database;
    closeAll = () => store.close();
  }
  // Built by the global setup (npm run build): the console and /docs are served as in production.
  const assets = await loadWebAssets();
  const build = (db: Database, overrides: Partial<AppConfig>) => {
    const app = createApp({
      assets,
      store: { db: db.db, cipher, clock, openJobs: new OpenJobsEstimates(clock) },
      database: db,
      config: { ...TEST_APP_CONFIG, ...config, ...overrides },
      onUnexpectedError: opts.onUnexpectedError,
      onRequest: opts.onRequest,
      resolveHost: opts.resolveHost,
    });
    return { app, fetch: ((input, init) => Promise.resolve(app.request(input, init))) as Fetch };
  };
  const { app, fetch: fetchFn } = build(database, {});
  const servers: ServerType[] = [];
  return {
    fetch: fetchFn,
    routes: app.routes.map((r) => ({ method: r.method, path: r.path })),
    database,
    tenant: (name = 'tenant') => createTestTenant(TEST_APP_URL, name, fetchFn),
    another: async (overrides = {}) => ({ fetch: build(openAnother(), overrides).fetch }),
    listen: () =>
      new Promise((resolve) => {
        const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve(`http://127.0.0.1:${info.port}`));
        servers.push(server);
      }),
    async close() {
      await Promise.all(
        servers.map((s) => {
          const closed = new Promise((r) => s.close(r));
          // Keep-alive connections of the clients would hold close() open until they time out.
          if ('closeAllConnections' in s) s.closeAllConnections();
          return closed;
        }),
      );
      await closeAll();
    },
  };
}

export { apiClient };

/**
 * Every stored row of one tenant, as one JSON text to compare before and after: the tenant, its API keys (without
 * `last_used_at`, which authentication writes), signing secrets, jobs, runs, attempts and idempotency keys, plus
 * the number of tenants. Read with SQL, not through the API under test.
 */
export async function tenantSnapshot(database: Database, tenantId: string): Promise<string> {
  const [row] = await query<{ s: unknown }>(
    database.db,
    sql`select json_build_object(
      'tenants', (select count(*) from tenants),
      'tenant', (select row_to_json(x) from tenants x where id = ${tenantId}),
      'apiKeys', (select json_agg(x order by id) from (select id, name, prefix, key_hash, created_at, expires_at, revoked_at
                  from api_keys where tenant_id = ${tenantId}) x),
      'secrets', (select json_agg(x order by id) from signing_secrets x where tenant_id = ${tenantId}),
      'jobs', (select json_agg(x order by id) from jobs x where tenant_id = ${tenantId}),
      'runs', (select json_agg(x order by id) from runs x where tenant_id = ${tenantId}),
      'attempts', (select json_agg(a order by a.run_id, a.attempt) from attempts a join runs r on r.shard = a.shard and r.id = a.run_id where r.tenant_id = ${tenantId}),
      'idempotency', (select json_agg(x order by key) from idempotency_keys x where tenant_id = ${tenantId}),
      'notificationEndpoints', (select json_agg(x order by id) from notification_endpoints x where tenant_id = ${tenantId})
    ) as s`,
  );
  return JSON.stringify(row!.s);
}
