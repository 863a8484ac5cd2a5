/**
 * Configuration of the Worker, from its `env` (vars and secrets), parsed per isolate with the same zod schema as the
 * Node process (`loadConfig` in src/config.ts) plus the Worker's own knobs. The database is the Hyperdrive binding's
 * connection string (or a `DATABASE_URL` var for a direct connection), so `CHIME_ENCRYPTION_KEY` is required, as it
 * is with `DATABASE_URL` on Node.
 */
import { z } from 'zod';
import { type Config, ConfigError, loadConfig } from '../config.ts';
import { CipherError, type EncryptionKey, parseEncryptionKeys } from '../store/cipher.ts';
import type { WorkerEnv } from './types.ts';

/**
 * Defaults of the `scheduled` tick, sized for the Workers limits
 * (https://developers.cloudflare.com/workers/platform/limits/):
 * - `tickBudgetMs`: no new claim after this much wall time (ms) since the tick started; callbacks already sent
 *   still finish (each bounded by its job's `timeoutMs`, at most 60 s), well inside a Cron Trigger's 15 min;
 * - `concurrency`: most callbacks in flight at once (also the claim batch size). A Worker invocation has at most 6
 *   connections waiting for response headers; a 7th `fetch` is queued by the runtime while its `timeoutMs` already
 *   runs, so a queued callback could time out unsent (and an at-most-once run fail for nothing). Hence at most
 *   WORKER_MAX_CONCURRENCY, and 5 by default, leaving one connection to the database;
 * - `maxCallbacksPerTick`: most callbacks one tick sends. Each is one `fetch` subrequest, limited per invocation
 *   (50 on the Free plan, 1000 on Paid when this was written), and the database connections may count too, hence
 *   45 by default (raise it on Paid).
 */
export const WORKER_DEFAULTS = Object.freeze({ tickBudgetMs: 25_000, concurrency: 5, maxCallbacksPerTick: 45 });
/** Simultaneous open connections of one Workers invocation (https://developers.cloudflare.com/workers/platform/limits/). */
export const WORKER_MAX_CONCURRENCY = 6;
/** Most database connections one invocation opens (Hyperdrive pools them on its side). */
export const WORKER_DB_CONNECTIONS = 5;

const positiveInt = z.coerce.number().int().positive();
const WorkerVarsSchema = z.object({
  CHIME_WORKER_TICK_BUDGET_MS: positiveInt.max(14 * 60_000).default(WORKER_DEFAULTS.tickBudgetMs),
  CHIME_WORKER_CONCURRENCY: positiveInt
    .max(WORKER_MAX_CONCURRENCY, `at most ${WORKER_MAX_CONCURRENCY} (simultaneous connections of a Worker invocation)`)
    .default(WORKER_DEFAULTS.concurrency),
  CHIME_WORKER_MAX_CALLBACKS_PER_TICK: positiveInt.max(100_000).default(WORKER_DEFAULTS.maxCallbacksPerTick),
});

/** The `scheduled` tick's bounds (see WORKER_DEFAULTS). */
import type { TickLimits } from '../dispatch/drivers/workers-tick.ts';

export type { TickLimits };

/** Everything the Worker's handlers need from `env`. */
export type WorkerConfig = {
  /** The shared configuration, as the Node process would parse it (`databaseUrl` is the Hyperdrive string). */
  config: Config;
  /** The AES-256-GCM keys of CHIME_ENCRYPTION_KEY, the sealing one first (store/cipher.ts). */
  encryptionKeys: EncryptionKey[];
  tick: TickLimits;
};

/**
 * Parses the Worker's `env`. Vars may be strings, numbers or booleans (wrangler keeps TOML types); bindings
 * (objects) other than HYPERDRIVE are ignored.
 * @throws ConfigError naming every bad variable (HYPERDRIVE when there is neither a binding nor DATABASE_URL)
 */
export function loadWorkerConfig(env: WorkerEnv): WorkerConfig {
  const vars: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') vars[name] = String(value);
  }
  const databaseUrl = env.HYPERDRIVE?.connectionString ?? vars.DATABASE_URL;
  if (!databaseUrl) {
    throw new ConfigError('HYPERDRIVE: bind a Hyperdrive configuration as HYPERDRIVE in wrangler.toml (or set DATABASE_URL)');
  }
  const config = loadConfig({ ...vars, DATABASE_URL: databaseUrl });
  const r = WorkerVarsSchema.safeParse(vars);
  if (!r.success) throw new ConfigError(r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  return {
    config,
    encryptionKeys: decodeKeys(config.encryptionKey!),
    tick: {
      tickBudgetMs: r.data.CHIME_WORKER_TICK_BUDGET_MS,
      concurrency: r.data.CHIME_WORKER_CONCURRENCY,
      maxCallbacksPerTick: r.data.CHIME_WORKER_MAX_CALLBACKS_PER_TICK,
    },
  };
}

function decodeKeys(value: string): EncryptionKey[] {
  try {
    return parseEncryptionKeys(value, 'CHIME_ENCRYPTION_KEY');
  } catch (err) {
    if (err instanceof CipherError) throw new ConfigError(err.message);
    throw err;
  }
}
