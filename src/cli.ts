/**
 * The `chime` command and the process composition root (API.md "Start-up and configuration"):
 *   chime serve [--role api|dispatcher|all]   chime migrate   chime tenant create --name N   chime listen   chime node
 * SIGTERM (or SIGINT) drains: the API stops accepting, the dispatcher stops claiming and lets in-flight callbacks
 * finish within CHIME_SHUTDOWN_GRACE_MS (a second signal cuts that short), leases of the rest are released, exit 0.
 */
import { parseArgs } from 'node:util';
import { serve as serveHttp, type ServerType } from '@hono/node-server';
import { pino, type Logger } from 'pino';
import type { Agent } from 'undici';
import pkg from '../package.json' with { type: 'json' };
import { Hono } from 'hono';
import { sql } from 'drizzle-orm';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { createApp, type AppDeps } from './api/app.ts';
import { createHousekeeper, type Housekeeper } from './dispatch/housekeeping.ts';
import { createDispatchMetrics, registerDueBacklog } from './dispatch/metrics.ts';
import { countDueRuns } from './store/queue/due-backlog.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createCallbackAgent, createDeliver } from './dispatch/deliver.ts';
import { createDispatcher, type Dispatcher } from './dispatch/dispatcher.ts';
import { resolvePublicHost } from './dispatch/guard.ts';
import { createNodeJwtSigner } from './dispatch/jwt-node.ts';
import { createKeyring } from './dispatch/keyring.ts';
import { openRuntime, type Runtime } from './runtime.ts';
import { tuneHeap } from './heap-tuning.ts';
import { CipherError } from './store/cipher.ts';
import { ensureJwtKey, JWKS_GRACE_MS, rotateJwtKey } from './store/jwt-keys.ts';
import { createTenant } from './store/tenants.ts';

const USAGE = `usage: chime <command>
  serve [--role api|dispatcher|all]   run the service (default: all, on PORT)
  migrate                             apply database migrations
  tenant create --name NAME           create a tenant; prints its API key and signing secret once
  keys rotate-jwt                     retire the JWT signing key now and start signing with a new one
  listen [--port P] [--secret whsec_…] [--jwks URL]
                                      a local receiver that prints each callback and checks its signatures
  node                                the JSON-lines node protocol on stdin/stdout
`;
const ROLES = ['api', 'dispatcher', 'all'] as const;
/**
 * Resolution of the event-loop delay histogram behind nodejs_eventloop_lag_* (prom-client samples with a timer of
 * this period), in ms. prom-client's 10 ms wakes an idle process 100 times a second: about half of an idle
 * dispatcher's CPU; 100 ms still sees any stall long enough to matter to callbacks.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve': {
      const { values } = parseArgs({ args: rest, options: { role: { type: 'string', default: 'all' } } });
      const role = values.role as (typeof ROLES)[number];
      if (!ROLES.includes(role)) return usage(`--role must be one of ${ROLES.join(', ')}`);
      return serve(loadConfig(process.env), role);
    }
    case 'migrate': {
      const rt = await openRuntime(loadConfig(process.env));
      await rt.database.close();
      process.stderr.write('migrations applied\n');
      return 0;
    }
    case 'tenant': {
      const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { name: { type: 'string' } } });
      if (positionals[0] !== 'create' || !values.name) return usage('tenant create --name NAME');
      const rt = await openRuntime(loadConfig(process.env));
      try {
        const t = await createTenant(rt.store, values.name);
        process.stdout.write(JSON.stringify({ tenant: { ...t.tenant, createdAt: t.tenant.createdAt.toISOString() }, apiKey: t.apiKey, signingSecret: t.signingSecret }, null, 2) + '\n');
      } finally {
        await rt.database.close();
      }
      return 0;
    }
    case 'keys': {
      if (rest[0] !== 'rotate-jwt' || rest.length !== 1) return usage('keys rotate-jwt');
      const rt = await openRuntime(loadConfig(process.env));
      try {
        const key = await rotateJwtKey(rt.store);
        process.stdout.write(JSON.stringify({ kid: key.kid, createdAt: new Date(key.createdAtMs).toISOString() }) + '\n');
        process.stderr.write(`new JWT signing key ${key.kid}; dispatchers switch to it within a minute, the old key stays in the JWKS ${JWKS_GRACE_MS / 60_000} minutes\n`);
      } finally {
        await rt.database.close();
      }
      return 0;
    }
    case 'listen': {
      const { values } = parseArgs({
        args: rest,
        options: { port: { type: 'string', default: '9000' }, secret: { type: 'string', multiple: true }, jwks: { type: 'string' } },
      });
      const port = Number(values.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) return usage('--port must be a port number');
      const secrets = values.secret ?? (process.env.CHIME_SIGNING_SECRET ? [process.env.CHIME_SIGNING_SECRET] : []);
      const { runListen } = await import('./listen.ts');
      const listener = await runListen({ port, secrets, out: process.stdout, ...(values.jwks ? { jwksUrl: values.jwks } : {}) });
      process.stderr.write(`listening for callbacks on ${listener.url}${secrets.length ? '' : ' (no --secret: signatures are not checked)'}\n`);
      await new Promise<void>((resolve) => process.once('SIGINT', resolve).once('SIGTERM', resolve));
      await listener.close();
      return 0;
    }
    case 'node': {
      const { runNodeProtocol } = await import('./node/index.ts');
      await runNodeProtocol({ input: process.stdin, output: process.stdout, log: process.stderr });
      return 0;
    }
    default:
      return usage(command ? `unknown command "${command}"` : undefined);
  }
}

function usage(problem?: string): number {
  process.stderr.write(`${problem ? `chime: ${problem}\n` : ''}${USAGE}`);
  return 2;
}

async function serve(config: Config, role: (typeof ROLES)[number]): Promise<number> {
  // A dispatcher's heap setting; an API-only process keeps V8's default (heap-tuning.ts says why).
  if (role !== 'api') tuneHeap();
  const logger = pino({ level: config.logLevel, base: { service: 'chime', role } });
  const rt = await openRuntime(config, { poolSize: role === 'api' ? 10 : 20 });
  // Opening the signing key proves the encryption key is the one the data was sealed with. On a mismatch the
  // database is closed, or its open connections would keep the process from exiting.
  await ensureJwtKey(rt.store).catch(async (err: unknown) => {
    await rt.database.close().catch(() => {});
    throw err;
  });

  const registry = new Registry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  const dispatchMetrics = createDispatchMetrics(registry);
  registerDueBacklog(registry, () => countDueRuns(rt.database.db, rt.clock.now()));
  const metrics = { contentType: registry.contentType, render: () => registry.metrics() };

  let dispatcher: Dispatcher | null = null;
  let housekeeper: Housekeeper | null = null;
  let callbackAgent: Agent | null = null;
  // A dispatcher-only process still answers /healthz, /readyz and /metrics on PORT.
  const server = role === 'dispatcher' ? await startOpsServer(config, rt, logger, metrics) : await startApi(config, rt, logger, metrics);
  if (role !== 'api') {
    callbackAgent = createCallbackAgent({ allowPrivate: config.allowPrivateDestinations });
    housekeeper = createHousekeeper({ db: rt.database.db, clock: rt.clock, logger, retentionMs: config.retentionMs, metrics: dispatchMetrics });
    housekeeper.start();
    dispatcher = createDispatcher({
      metrics: dispatchMetrics,
      database: rt.database,
      clock: rt.clock,
      logger,
      deliver: createDeliver(callbackAgent),
      keyring: createKeyring(rt.store, { jwtKeyMaxAgeMs: config.jwtKeyMaxAgeMs, createSigner: createNodeJwtSigner }),
      userAgent: `chime/${pkg.version}`,
      options: config.dispatch,
    });
    await dispatcher.start();
  }

  await new Promise<void>((resolve) => {
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

  const closing = new Promise<void>((r) => server.close(() => r()));
  await dispatcher?.stop();
  // Requests still hanging were released by stop(): abort them, or their sockets would keep the process alive.
  await callbackAgent?.destroy().catch(() => {});
  await housekeeper?.stop();
  await closing;
  await rt.database.close();
  logger.info('stopped');
  return 0;
}

type MetricsExposition = NonNullable<AppDeps['metrics']>;

function startApi(config: Config, rt: Runtime, logger: Logger, metrics: MetricsExposition): Promise<ServerType> {
  const app = createApp({
    metrics,
    store: rt.store,
    database: rt.database,
    config: { adminToken: config.adminToken, signup: config.signup, allowPrivateDestinations: config.allowPrivateDestinations, version: pkg.version, limits: config.limits },
    resolveHost: async (host) => {
      const r = await resolvePublicHost(host);
      // A name that does not resolve now is accepted: the connect-time guard checks it on every attempt.
      if (!r.ok && /could not resolve/.test(r.reason)) return { ok: true };
      return r.ok ? { ok: true } : r;
    },
    onUnexpectedError: (err) => logger.error({ err }, 'unexpected error in a request'),
  });
  return listen(app.fetch, config.port, logger);
}

/** The operations endpoints of a dispatcher-only process: /healthz, /readyz (database reachable), /metrics. */
function startOpsServer(config: Config, rt: Runtime, logger: Logger, metrics: MetricsExposition): Promise<ServerType> {
  const ops = new Hono();
  ops.get('/healthz', (c) => c.json({ status: 'ok' }));
  ops.get('/readyz', async (c) => {
    try {
      await rt.database.db.execute(sql`select 1`);
      return c.json({ status: 'ready' });
    } catch {
      return c.json({ status: 'unavailable' }, 503);
    }
  });
  ops.get('/metrics', async (c) => c.body(await metrics.render(), 200, { 'content-type': metrics.contentType }));
  return listen(ops.fetch, config.port, logger);
}

function listen(fetch: (req: Request) => Response | Promise<Response>, port: number, logger: Logger): Promise<ServerType> {
  return new Promise((resolve) => {
    const server = serveHttp({ fetch, port, hostname: '0.0.0.0' }, (info) => {
      logger.info({ port: info.port }, 'listening');
      resolve(server);
    });
  });
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof ConfigError || err instanceof CipherError || (err instanceof Error && err.name === 'DataDirLockedError')) {
    process.stderr.write(`chime: configuration error: ${err.message}\n`);
    process.exitCode = 1;
  } else {
    throw err;
  }
}
