/**
 * The Worker's two handlers, built over injectable services so tests can run them under Node with the same inputs
 * as workerd gives them:
 * - `fetch`: the same Hono app as the Node process (`createApp`), over a database client opened for this request
 *   and closed after it (`ctx.waitUntil`). No DNS on Workers: `resolveHost` is left out, so registration checks the
 *   callback URL on its face only (src/worker/fetch-deliver.ts says why that is enough there).
 * - `scheduled`: one bounded dispatch tick (src/dispatch/drivers/workers-tick.ts), sending callbacks with `fetch`.
 * Configuration errors answer `503` problem+json naming the variable (fetch), or throw (scheduled: the Cron
 * Trigger's log shows it).
 */
import pkg from '../../package.json' with { type: 'json' };
import { createApp } from '../api/app.ts';
import { PROBLEM_CONTENT_TYPE, problemBody } from '../api/problems.ts';
import { ConfigError } from '../config.ts';
import type { WebAssets } from '../console/assets.ts';
import { runTick, type TickReport } from '../dispatch/drivers/workers-tick.ts';
import { createKeyring } from '../dispatch/keyring.ts';
import { type Clock, systemClock } from '../domain/clock.ts';
import { newId } from '../domain/ids.ts';
import { type Cipher, createCipher } from '../store/cipher.ts';
import { loadWorkerConfig, type WorkerConfig } from './config.ts';
import { openWorkerDatabase, type WorkerDatabase } from './database.ts';
import { createFetchDeliver, type FetchFn } from './fetch-deliver.ts';
import { createWorkerLogger, type LogSink, type WorkerLogger } from './log.ts';
import type { ExecutionContext, ScheduledController, WorkerEnv } from './types.ts';

/** Services of the handlers; every one has a production default. */
export type WorkerServices = {
  /** Opens the database client of one invocation (default: postgres.js on the connection string). */
  openDatabase?: (connectionString: string) => WorkerDatabase;
  /** The fetch callbacks are sent with (default: the global fetch). */
  fetch?: FetchFn;
  clock?: Clock;
  /** Where log lines go (default: console). */
  logSink?: LogSink;
  /** Called with each tick's report (tests; the report is also logged). */
  onTick?: (report: TickReport) => void;
  /** The built console and API-reference assets (src/worker.ts passes the build's manifest; absent: 503 pages). */
  assets?: WebAssets;
};

/** The module-syntax Worker: what `src/worker.ts` exports as default. */
export type WorkerHandlers = {
  fetch(request: Request, env: WorkerEnv, ctx: ExecutionContext): Promise<Response>;
  scheduled(controller: ScheduledController, env: WorkerEnv, ctx: ExecutionContext): Promise<void>;
};

type Prepared = { wc: WorkerConfig; cipher: Cipher; log: WorkerLogger };

/** Builds the handlers. Parsed configuration and the cipher are kept per `env` object (per isolate). */
export function createWorkerHandlers(services: WorkerServices = {}): WorkerHandlers {
  const openDatabase = services.openDatabase ?? ((url: string) => openWorkerDatabase(url));
  const clock = services.clock ?? systemClock;
  // Only settled values are kept: a pending promise must not cross from one request's context into another's.
  const prepared = new WeakMap<object, Prepared>();

  async function prepare(env: WorkerEnv): Promise<Prepared> {
    const hit = prepared.get(env);
    // The Hyperdrive connection string may differ per invocation: re-read it, keep the rest.
    if (hit && hit.wc.config.databaseUrl === (env.HYPERDRIVE?.connectionString ?? env.DATABASE_URL)) return hit;
    const wc = loadWorkerConfig(env);
    const p = {
      wc,
      cipher: await createCipher(wc.encryptionKeys),
      log: createWorkerLogger(wc.config.logLevel, { service: 'chime', runtime: 'workers' }, services.logSink),
    };
    prepared.set(env, p);
    return p;
  }

  return {
    async fetch(request, env, ctx) {
      let p: Prepared;
      try {
        p = await prepare(env);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        createWorkerLogger('error', { service: 'chime', runtime: 'workers' }, services.logSink).error({ err }, 'configuration error');
        return new Response(JSON.stringify(problemBody('unavailable', `the service is misconfigured: ${err.message}`)), {
          status: 503,
          headers: { 'content-type': PROBLEM_CONTENT_TYPE },
        });
      }
      const { wc, cipher, log } = p;
      const database = openDatabase(wc.config.databaseUrl!);
      const app = createApp({
        store: { db: database.db, cipher, clock },
        database,
        config: {
          adminToken: wc.config.adminToken,
          signup: wc.config.signup,
          allowPrivateDestinations: wc.config.allowPrivateDestinations,
          version: pkg.version,
          // The active-jobs quota holds as on Node. The per-tenant rate limit is off: its token buckets live in one
          // app, and this app lives for one request (a Worker's requests spread over many isolates anyway); use
          // Cloudflare's rate limiting rules in front of the Worker instead (README).
          limits: { ...wc.config.limits, ratePerSecond: 0 },
        },
        onUnexpectedError: (err) => log.error({ err, path: new URL(request.url).pathname }, 'unexpected error in a request'),
        assets: services.assets,
      });
      try {
        return await app.fetch(request);
      } finally {
        ctx.waitUntil(database.close().catch((err) => log.warn({ err }, 'closing the database client failed')));
      }
    },

    async scheduled(controller, env, ctx) {
      const { wc, cipher, log } = await prepare(env);
      const database = openDatabase(wc.config.databaseUrl!);
      try {
        const store = { db: database.db, cipher, clock };
        const report = await runTick(
          {
            db: database.db,
            clock,
            // Async completion needs the Worker's public URL (no port to default to): without CHIME_PUBLIC_URL an async
            // job's attempts carry no completion headers and end completion_timeout (README "Configuration").
            keyring: createKeyring(store, {
              jwtKeyMaxAgeMs: wc.config.jwtKeyMaxAgeMs,
              ...(wc.config.publicUrl ? { publicUrl: wc.config.publicUrl } : {}),
            }),
            deliver: createFetchDeliver({
              allowPrivate: wc.config.allowPrivateDestinations,
              ...(services.fetch ? { fetch: services.fetch } : {}),
            }),
            log,
            userAgent: `chime/${pkg.version}`,
            owner: newId(),
            leaseMarginMs: wc.config.dispatch.leaseMarginMs,
            callbacksPerDay: wc.config.limits.callbacksPerDay,
          },
          wc.tick,
        );
        log.info({ cron: controller.cron, scheduledTime: controller.scheduledTime, ...report }, 'tick finished');
        services.onTick?.(report);
      } catch (err) {
        // Runs claimed before the failure keep their leases and come back through the next tick's reaper.
        log.error({ err, cron: controller.cron }, 'tick failed');
        throw err;
      } finally {
        ctx.waitUntil(database.close().catch((err) => log.warn({ err }, 'closing the database client failed')));
      }
    },
  };
}
