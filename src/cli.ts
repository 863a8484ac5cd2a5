/**
 * The `chime` command and the process composition root (API.md "Start-up and configuration"):
 *   chime serve [--role api|dispatcher|all]   chime migrate   chime tenant create --name N   chime listen   chime node
 * SIGTERM (or SIGINT) drains: the API stops accepting, the dispatcher stops claiming and lets in-flight callbacks
 * finish within CHIME_SHUTDOWN_GRACE_MS (a second signal cuts that short), leases of the rest are released, exit 0.
 */
import { type ServerType, serve as serveHttp } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { type Logger, pino } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Agent } from 'undici';
import pkg from '../package.json' with { type: 'json' };
import { createApp } from './api/app.ts';
import { type MetricsExposition, opsRoutes } from './api/ops.ts';
import type { RequestRecord } from './api/requests.ts';
import { buildInfo } from './build-info.ts';
import {
  KEYS_REENCRYPT,
  KEYS_ROTATE_JWT,
  LISTEN,
  MIGRATE,
  NODE,
  parseCommand,
  resolveCommand,
  SERVE,
  TENANT_CREATE,
  UsageExitError,
  usageError,
} from './cli-args.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { loadWebAssets } from './console/load-node.ts';
import { createCallbackAgent, createDeliver } from './dispatch/deliver.ts';
import { createDispatcher, type Dispatcher } from './dispatch/drivers/node-dispatcher.ts';
import { resolvePublicHost } from './dispatch/guard.ts';
import { createHousekeeper, type Housekeeper } from './dispatch/housekeeping.ts';
import { createNodeJwtSigner } from './dispatch/jwt-node.ts';
import { createKeyring } from './dispatch/keyring.ts';
import { createDispatchMetrics, registerDueBacklog } from './dispatch/metrics.ts';
import { createdTenantJson, ensureFirstTenant } from './first-tenant.ts';
import { tuneHeap } from './heap-tuning.ts';
import { createRequestMetrics, registerBuildInfo } from './request-metrics.ts';
import { openRuntime, type Runtime, startClockSync } from './runtime.ts';
import { type ApiPresence, createApiPresence } from './store/api-presence.ts';
import { CipherError, keyName } from './store/cipher.ts';
import { errorChain } from './store/db.ts';
import { ensureJwtKey, JWKS_GRACE_MS, rotateJwtKey } from './store/jwt-keys.ts';
import { SchemaBehindError, type SchemaStatus, schemaStatus } from './store/migrate.ts';
import { checkPostgresPatch, PostgresPatchError } from './store/postgres-patch.ts';
import { countDueRuns } from './store/queue/due-backlog.ts';
import { checkKeysInUse, MissingEncryptionKeyError, reencryptSecrets } from './store/sealed-secrets.ts';
import { createTenant } from './store/tenants.ts';
import { loadTracing, type Tracing } from './tracing.ts';

const ROLES = ['api', 'dispatcher', 'all'] as const;
/**
 * Resolution of the event-loop delay histogram behind nodejs_eventloop_lag_* (prom-client samples with a timer of
 * this period), in ms. prom-client's 10 ms wakes an idle process 100 times a second: about half of an idle
 * dispatcher's CPU; 100 ms still sees any stall long enough to matter to callbacks.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

/** Routes of probes and scrapes: their access-log lines are debug, or each scrape would log one at info. */
const OPS_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);

/** A failure to start that the user can fix: printed as one line (`chime: <message>`), exit 1, no stack trace. */
class StartupError extends Error {
  override name = 'StartupError';
}

/** Runs the command `argv` names; a wrong command line or `--help` throws UsageExitError before anything is opened. */
async function main(argv: string[]): Promise<number> {
  const { spec, args } = resolveCommand(argv);
  switch (spec) {
    case SERVE: {
      const values = parseCommand(SERVE, args);
      const role = values.role as (typeof ROLES)[number];
      if (!ROLES.includes(role)) throw usageError(SERVE, `--role must be one of ${ROLES.join(', ')}, not "${values.role}"`);
      // --dev (npm start): a laptop's defaults, each overridden by the variable when it is set.
      const devEnv = { HOST: '127.0.0.1', CHIME_ALLOW_PRIVATE_DESTINATIONS: 'true', CHIME_MIGRATE: 'true' };
      const config = loadConfig(values.dev ? { ...devEnv, ...process.env } : process.env);
      return serve({ ...config, migrate: config.migrate || values.migrate }, role);
    }
    case MIGRATE: {
      const values = parseCommand(MIGRATE, args);
      return withDatabase({ schema: values.status ? 'as-is' : 'migrate' }, async (rt) => {
        if (values.status) process.stdout.write(formatSchemaStatus(await schemaStatus(rt.database.db)));
        else process.stderr.write('migrations applied\n');
      });
    }
    case TENANT_CREATE: {
      const values = parseCommand(TENANT_CREATE, args);
      const name = values.name;
      if (!name) throw usageError(TENANT_CREATE, '--name is required');
      return withDatabase({}, async (rt) => {
        const t = await createTenant(rt.store, name);
        process.stdout.write(`${JSON.stringify(createdTenantJson(t), null, 2)}\n`);
      });
    }
    case KEYS_ROTATE_JWT: {
      parseCommand(KEYS_ROTATE_JWT, args);
      return withDatabase({}, async (rt) => {
        const key = await rotateJwtKey(rt.store);
        process.stdout.write(`${JSON.stringify({ kid: key.kid, createdAt: new Date(key.createdAtMs).toISOString() })}\n`);
        process.stderr.write(
          `new JWT signing key ${key.kid}; dispatchers switch to it within a minute, the old key stays in the JWKS ${JWKS_GRACE_MS / 60_000} minutes\n`,
        );
      });
    }
    case KEYS_REENCRYPT: {
      parseCommand(KEYS_REENCRYPT, args);
      return withDatabase({}, async (rt) => {
        const changed = await reencryptSecrets(rt.database.db, rt.cipher);
        const total = Object.values(changed).reduce((a, b) => a + b, 0);
        process.stdout.write(`${JSON.stringify({ changed, total })}\n`);
        process.stderr.write(`${total} secrets sealed again under ${keyName(rt.cipher.keyIds[0]!)}\n`);
      });
    }
    case LISTEN: {
      const values = parseCommand(LISTEN, args);
      // Number('') is 0: only digits are a port.
      const port = /^\d+$/.test(values.port) ? Number(values.port) : NaN;
      if (!(port <= 65535)) throw usageError(LISTEN, `--port must be a port number (0-65535), not "${values.port}"`);
      const secrets = values.secret ?? (process.env.CHIME_SIGNING_SECRET ? [process.env.CHIME_SIGNING_SECRET] : []);
      const after = values['complete-after'];
      if (after !== undefined && !/^\d{1,9}$/.test(after)) {
        throw usageError(LISTEN, `--complete-after must be a number of milliseconds, not "${after}"`);
      }
      const { runListen } = await import('./listen.ts');
      const listener = await runListen({
        port,
        secrets,
        out: process.stdout,
        ...(values.jwks ? { jwksUrl: values.jwks } : {}),
        ...(after === undefined ? {} : { completeAfterMs: Number(after) }),
      }).catch((err: unknown) => {
        if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE')
          throw new StartupError(`cannot listen on port ${port}: it is in use (EADDRINUSE); pass another --port`);
        throw err;
      });
      process.stderr.write(
        `listening for callbacks on ${listener.url}${secrets.length ? '' : ' (no --secret: signatures are not checked)'}\n`,
      );
      await new Promise<void>((resolve) => process.once('SIGINT', resolve).once('SIGTERM', resolve));
      await listener.close();
      return 0;
    }
    case NODE: {
      parseCommand(NODE, args);
      const { runNodeProtocol } = await import('./node/index.ts');
      await runNodeProtocol({ input: process.stdin, output: process.stdout, log: process.stderr });
      return 0;
    }
    default:
      throw new Error(`chime: no handler for command "${spec.name}"`);
  }
}

async function serve(config: Config, role: (typeof ROLES)[number]): Promise<number> {
  // A dispatcher's heap setting; an API-only process keeps V8's default (heap-tuning.ts says why).
  if (role !== 'api') tuneHeap();
  const logger = pino({ level: config.logLevel, base: { service: 'chime', role } });
  // Only with OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) set is the OpenTelemetry SDK loaded (README "Traces").
  const tracing = await loadTracing(process.env, { serviceVersion: pkg.version, log: (level, msg) => logger[level](msg) });
  if (tracing) logger.info('tracing: spans are exported over OTLP/HTTP');
  const rt = await openDatabase(config, { poolSize: role === 'api' ? 10 : 20 });
  // Every key a stored secret is sealed under must be configured; opening the signing key proves the keys are the
  // ones the data was sealed with. On a failure the database is closed, or its open connections would keep the
  // process from exiting.
  await checkKeysInUse(rt.database.db, rt.cipher)
    .then(() => ensureJwtKey(rt.store))
    .catch(async (err: unknown) => {
      await rt.database.close().catch(() => {});
      if (err instanceof MissingEncryptionKeyError) throw new StartupError(err.message);
      throw err;
    });
  if (!config.databaseUrl) await announceFirstTenant(rt, config.dataDir, logger);
  const stopClockSync = startClockSync(rt, (fields, msg) => logger.warn(fields, msg));

  const registry = new Registry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  const dispatchMetrics = createDispatchMetrics(registry);
  registerDueBacklog(registry, () => countDueRuns(rt.database.db, rt.clock.now()));
  registerBuildInfo(registry, buildInfo());
  const requestMetrics = createRequestMetrics(registry);
  const metrics = { contentType: registry.contentType, render: () => registry.metrics() };

  let dispatcher: Dispatcher | null = null;
  // Handlers go in before the port opens: /readyz answers as soon as it does, and a SIGTERM that came before the
  // handlers would kill the process without draining.
  const stopRequested = new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (signal: string) => {
      signals++;
      if (signals === 1) {
        logger.info({ signal }, 'draining');
        resolve();
      } else {
        logger.warn({ signal }, 'second signal: releasing in-flight leases now');
        dispatcher?.drainNow();
      }
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  let housekeeper: Housekeeper | null = null;
  let callbackAgent: Agent | null = null;
  // An API process on PostgreSQL counts the others, to share each tenant's request rate with them (api-presence.ts).
  const presence =
    role !== 'dispatcher' && config.databaseUrl
      ? createApiPresence(rt.database.db, {
          onError: (err) => logger.warn({ err }, 'API heartbeat failed; the last count of API processes stands'),
        })
      : null;
  await presence?.start();
  // A dispatcher-only process still answers /healthz, /readyz and /metrics on PORT.
  const server = await (role === 'dispatcher'
    ? startOpsServer(config, rt, logger, metrics)
    : startApi(config, rt, logger, metrics, requestMetrics, tracing, presence)
  ).catch(async (err: unknown) => {
    await presence?.stop();
    // Its open connections (or the embedded database's lock) would keep the process from exiting.
    await rt.database.close().catch(() => {});
    throw err;
  });
  if (role !== 'api') {
    callbackAgent = createCallbackAgent({ allowPrivate: config.allowPrivateDestinations });
    housekeeper = createHousekeeper({
      db: rt.database.db,
      clock: rt.clock,
      logger,
      retentionMs: config.retentionMs,
      auditRetentionMs: config.auditRetentionMs,
      metrics: dispatchMetrics,
    });
    housekeeper.start();
    dispatcher = createDispatcher({
      metrics: dispatchMetrics,
      database: rt.database,
      clock: rt.clock,
      logger,
      deliver: createDeliver(callbackAgent),
      keyring: createKeyring(rt.store, {
        jwtKeyMaxAgeMs: config.jwtKeyMaxAgeMs,
        createSigner: createNodeJwtSigner,
        publicUrl: publicUrlOf(config, server),
      }),
      userAgent: `chime/${pkg.version}`,
      options: { ...config.dispatch, callbacksPerDay: config.limits.callbacksPerDay },
      tracer: tracing?.dispatchTracer,
    });
    await dispatcher.start();
  }

  await stopRequested;

  const closing = new Promise<void>((r) => server.close(() => r()));
  await dispatcher?.stop();
  // Requests still hanging were released by stop(): abort them, or their sockets would keep the process alive.
  await callbackAgent?.destroy().catch(() => {});
  await housekeeper?.stop();
  stopClockSync();
  await closing;
  await presence?.stop();
  await rt.database.close();
  // The spans of the drain go out before the process ends.
  await tracing?.shutdown();
  logger.info('stopped');
  return 0;
}

/**
 * Where async jobs' receivers report (Chime-Completion-Url's base): CHIME_PUBLIC_URL, else this process on localhost at
 * the port it listens on (right for a single process on one machine; a fleet or a dispatcher-only process sets it).
 */
function publicUrlOf(config: Config, server: ServerType): string {
  if (config.publicUrl) return config.publicUrl;
  const address = server.address();
  return `http://localhost:${typeof address === 'object' && address ? address.port : config.port}`;
}

async function startApi(
  config: Config,
  rt: Runtime,
  logger: Logger,
  metrics: MetricsExposition,
  countRequest: (r: RequestRecord) => void,
  tracing: Tracing | null,
  presence: ApiPresence | null,
): Promise<ServerType> {
  const assets = await loadWebAssets();
  if (!assets) logger.warn('the web assets are not built (npm run build): /console and /docs answer 503');
  const app = createApp({
    metrics,
    assets,
    store: rt.store,
    database: rt.database,
    config: {
      adminToken: config.adminToken,
      signup: config.signup,
      allowPrivateDestinations: config.allowPrivateDestinations,
      metricsToken: config.metricsToken,
      version: pkg.version,
      limits: config.limits,
    },
    // The API processes alive on the database, sharing each tenant's request rate (1 on the embedded database).
    ...(presence ? { apiProcesses: () => presence.processes } : {}),
    resolveHost: async (host) => {
      const r = await resolvePublicHost(host);
      // A name that does not resolve now is accepted: the connect-time guard checks it on every attempt.
      if (!r.ok && /could not resolve/.test(r.reason)) return { ok: true };
      return r.ok ? { ok: true } : r;
    },
    onUnexpectedError: (err, request) => logger.error({ err, ...request }, 'unexpected error in a request'),
    // The access log: one line per request, never a key or a body; probes and scrapes at debug.
    onRequest: (r) => {
      countRequest(r);
      if (OPS_ROUTES.has(r.route)) logger.debug(r, 'request');
      else logger.info(r, 'request');
    },
    // The socket's peer: X-Forwarded-For is not trusted (Chime has no trusted-proxy setting), so behind a proxy every
    // client shares the proxy's address.
    clientAddress: (c) => getConnInfo(c).remote.address,
    onSecurityWarning: (fields, message) => logger.warn(fields, message),
    ...(tracing ? { tracing: { requestMiddleware: tracing.requestMiddleware } } : {}),
  });
  return listen(app.fetch, config, logger);
}

/** The operations endpoints of a dispatcher-only process: /healthz, /readyz (database reachable), /metrics. */
function startOpsServer(config: Config, rt: Runtime, logger: Logger, metrics: MetricsExposition): Promise<ServerType> {
  const ops = opsRoutes({ database: rt.database, metrics, metricsToken: config.metricsToken });
  return listen(ops.fetch, config, logger);
}

/**
 * Serves `fetch` on HOST:PORT.
 * @throws (rejects) StartupError naming PORT or HOST when the port cannot be listened on (in use, privileged, not an
 *   address of this machine)
 */
function listen(fetch: (req: Request) => Response | Promise<Response>, config: Config, logger: Logger): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serveHttp({ fetch, port: config.port, hostname: config.host }, (info) => {
      server.off('error', onError);
      logger.info({ host: config.host, port: info.port }, 'listening');
      resolve(server);
    });
    const onError = (err: NodeJS.ErrnoException) => reject(listenError(err, config));
    server.once('error', onError);
  });
}

/** A listen failure as a StartupError saying which variable to change; other errors as they are. */
function listenError(err: NodeJS.ErrnoException, config: Config): Error {
  const where = `${config.host}:${config.port}`;
  switch (err.code) {
    case 'EADDRINUSE':
      return new StartupError(`cannot listen on ${where}: the port is in use (EADDRINUSE); set PORT to a free port, or stop what holds it`);
    case 'EACCES':
      return new StartupError(
        `cannot listen on ${where}: permission denied (EACCES; ports below 1024 need privileges); set PORT to 1024 or above`,
      );
    case 'EADDRNOTAVAIL':
      return new StartupError(`cannot listen on ${where}: ${config.host} is not an address of this machine (EADDRNOTAVAIL); set HOST`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new StartupError(`cannot listen on ${where}: the name ${config.host} does not resolve (${err.code}); set HOST`);
    default:
      return err;
  }
}

/** Connection-level failure codes of postgres.js and Node's net module: the server is not reachable as configured. */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  '57P01',
  '57P03', // shutting down; starting up
]);
/** File-system failure codes of opening the embedded database's folder. */
const DATA_DIR_CODES = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST', 'ENOSPC', 'ELOOP', 'ENAMETOOLONG']);

/**
 * `openRuntime` with the failures a user fixes by configuration as one-line StartupErrors: with DATABASE_URL, an
 * unpatched postgres.js (postgres-patch.ts), an unreachable server, a refused login, a missing database; on the
 * embedded database, a data folder that cannot be created or written.
 * @throws StartupError as above; ConfigError, DataDirLockedError and anything unexpected as they are
 */
async function openDatabase(config: Config, opts: Parameters<typeof openRuntime>[1] = {}): Promise<Runtime> {
  if (config.databaseUrl) {
    try {
      checkPostgresPatch();
    } catch (err) {
      if (err instanceof PostgresPatchError) throw new StartupError(err.message);
      throw err;
    }
  }
  try {
    return await openRuntime(config, { schema: config.migrate ? 'migrate' : 'check', ...opts });
  } catch (err) {
    if (err instanceof SchemaBehindError) throw new StartupError(err.message);
    throw databaseError(err, config);
  }
}

/**
 * A one-shot command's database session: opens the configured database (as `openDatabase`, with `opts`), runs `work`,
 * and closes it whatever happens.
 * @returns 0, the command's exit code
 * @throws what `openDatabase` and `work` throw
 */
async function withDatabase(opts: Parameters<typeof openRuntime>[1], work: (rt: Runtime) => Promise<void>): Promise<number> {
  const rt = await openDatabase(loadConfig(process.env), opts);
  try {
    await work(rt);
  } finally {
    await rt.database.close();
  }
  return 0;
}

/** `chime migrate --status`: one line per committed migration (`applied` or `pending`), then a summary. */
function formatSchemaStatus(status: SchemaStatus): string {
  const lines = [
    ...status.applied.map((m) => `applied  ${m.tag}`),
    ...status.pending.map((m) => `pending  ${m.tag}`),
    `${status.applied.length} applied, ${status.pending.length} pending` +
      (status.pending.length ? ': run `chime migrate`' : '') +
      (status.newer ? `; the database also has ${status.newer} migration(s) of a later version of Chime` : ''),
  ];
  return `${lines.join('\n')}\n`;
}

/** An error of opening the database as a StartupError naming DATABASE_URL or CHIME_DATA_DIR, when it is one of those. */
function databaseError(err: unknown, config: Config): unknown {
  const chain = errorChain(err);
  const found = chain.find((e) => e.code !== undefined) ?? chain[0];
  const code = found?.code === undefined ? '' : String(found.code);
  const detail = `${code}${code && found?.message ? ': ' : ''}${found?.message ? String(found.message) : ''}`;
  if (!config.databaseUrl) {
    if (!DATA_DIR_CODES.has(code)) return err;
    return new StartupError(
      `cannot open the embedded database in ${config.dataDir} (${detail}); set CHIME_DATA_DIR to a folder this user may write`,
    );
  }
  const server = databaseServer(config.databaseUrl);
  if (UNREACHABLE_CODES.has(code)) {
    return new StartupError(`cannot reach the database at ${server} (${detail}); check DATABASE_URL and that the server is up`);
  }
  if (code.startsWith('28'))
    return new StartupError(`the database at ${server} refused the login (${detail}); check the user and password in DATABASE_URL`);
  if (code === '3D000')
    return new StartupError(`the database at ${server} has no such database (${detail}); check the database name in DATABASE_URL`);
  if (code === '42501')
    return new StartupError(
      `the role in DATABASE_URL lacks a privilege (${detail}); grant what README "Database roles" lists, or migrate with \`chime migrate\` as the role that owns the schema`,
    );
  return err;
}

/** `host:port` of a postgres:// URL, without its credentials; `DATABASE_URL` when it does not parse (several hosts). */
function databaseServer(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || 'localhost'}:${u.port || 5432}`;
  } catch {
    return 'DATABASE_URL';
  }
}

/**
 * On an embedded database without tenants, makes the first one and tells the user where its secrets are, once (the
 * key and the secret are printed on this start only; the file keeps them).
 */
async function announceFirstTenant(rt: Runtime, dataDir: string, logger: Logger): Promise<void> {
  const first = await ensureFirstTenant(rt.store, dataDir);
  if (!first) return;
  logger.info({ tenantId: first.created.tenant.tenantId, file: first.file }, 'first start: created the first tenant');
  process.stderr.write(
    `\nFirst start: created tenant "${first.created.tenant.name}". Its API key and signing secret, shown this once, are kept in\n` +
      `${first.file} (mode 0600):\n  API key:        ${first.created.apiKey}\n  signing secret: ${first.created.signingSecret}\n\n`,
  );
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof UsageExitError) {
    err.write();
    process.exitCode = err.code;
  } else if (err instanceof ConfigError || err instanceof CipherError || (err instanceof Error && err.name === 'DataDirLockedError')) {
    process.stderr.write(`chime: configuration error: ${err.message}\n`);
    process.exitCode = 1;
  } else if (err instanceof StartupError) {
    process.stderr.write(`chime: ${err.message}\n`);
    process.exitCode = 1;
  } else {
    throw err;
  }
}
