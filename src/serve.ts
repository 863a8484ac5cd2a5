/**
 * `chime serve`: the process composition root (API.md "Start-up and configuration"). It opens the database, builds the
 * API (`createApp`) and the dispatcher (`createDispatcher`) for the role, serves HTTP, and on SIGTERM (or SIGINT) drains:
 * the API stops accepting, the dispatcher stops claiming and lets in-flight callbacks finish within
 * CHIME_SHUTDOWN_GRACE_MS (a second signal cuts that short), leases of the rest are released, exit 0.
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
import type { Role } from './cli-args.ts';
import type { Config } from './config.ts';
import { loadWebAssets } from './console/load-node.ts';
import { createCallbackAgent, createDeliver } from './dispatch/deliver.ts';
import { createDispatcher, type Dispatcher } from './dispatch/drivers/node-dispatcher.ts';
import { resolvePublicHost } from './dispatch/guard.ts';
import { createHousekeeper, type Housekeeper } from './dispatch/housekeeping.ts';
import { createNodeJwtSigner } from './dispatch/jwt-node.ts';
import { createKeyring } from './dispatch/keyring.ts';
import { createDispatchMetrics, registerDueBacklog } from './dispatch/metrics.ts';
import { ensureFirstTenant } from './first-tenant.ts';
import { tuneHeap } from './heap-tuning.ts';
import { openDatabase, StartupError } from './open-database.ts';
import { createRequestMetrics, registerBuildInfo } from './request-metrics.ts';
import { type Runtime, startClockSync } from './runtime.ts';
import { type ApiPresence, createApiPresence } from './store/api-presence.ts';
import { ensureJwtKey } from './store/jwt-keys.ts';
import { countDueRuns } from './store/queue/due-backlog.ts';
import { checkKeysInUse, MissingEncryptionKeyError } from './store/sealed-secrets.ts';
import { loadTracing, type Tracing } from './tracing.ts';

/**
 * Resolution of the event-loop delay histogram behind nodejs_eventloop_lag_* (prom-client samples with a timer of
 * this period), in ms. prom-client's 10 ms wakes an idle process 100 times a second: about half of an idle
 * dispatcher's CPU; 100 ms still sees any stall long enough to matter to callbacks.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

/** Routes of probes and scrapes: their access-log lines are debug, or each scrape would log one at info. */
const OPS_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Runs the service in `role` until a signal has drained it.
 * @returns the exit code (0)
 * @throws StartupError for what configuration fixes (a busy port, an unreachable database, a missing key)
 */
export async function serve(config: Config, role: Role): Promise<number> {
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
