/**
 * Node wiring shared by the CLI commands: open and migrate the configured database, load the encryption key, build
 * the store context. The one place that chooses between PostgreSQL and the embedded PGlite.
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from './config.ts';
import { ConfigError } from './config.ts';
import { type Clock, OffsetClock, systemClock } from './domain/clock.ts';
import { type Cipher, CipherError, createCipher, ENCRYPTION_KEY_BYTES, type EncryptionKey, parseEncryptionKeys } from './store/cipher.ts';
import type { StoreContext } from './store/context.ts';
import type { Database } from './store/db.ts';
import { measureClockOffset } from './store/db-time.ts';
import { checkSchemaCurrent, migrateEmbedded, migratePostgresUrl } from './store/migrate.ts';
import { OpenJobsEstimates } from './store/open-jobs.ts';
import { openPostgres } from './store/postgres.ts';

/** Name of the generated key file in CHIME_DATA_DIR (embedded database only). */
export const KEY_FILE = 'encryption.key';

export type Runtime = {
  database: Database;
  cipher: Cipher;
  store: StoreContext;
  /** The database's clock (docs/design.md "One clock"): this host's, shifted by the measured offset on PostgreSQL. */
  clock: Clock;
  /** The shifted clock to keep in step (`startClockSync`); null on the embedded database, which runs on this host's. */
  databaseClock: OffsetClock | null;
};

/** How often a running process measures the database's clock again, in ms. */
export const CLOCK_SYNC_INTERVAL_MS = 30_000;
/** An offset past which the process warns that this host's clock is off (it follows the database's all the same). */
const CLOCK_WARN_MS = 1_000;

/**
 * Measures the database's clock into `clock` now and every CLOCK_SYNC_INTERVAL_MS, warning once per measurement when
 * this host's clock is off by more than CLOCK_WARN_MS; a failed measurement keeps the last offset.
 * @returns a function that stops it
 */
export function startClockSync(rt: Runtime, warn: (fields: Record<string, unknown>, msg: string) => void): () => void {
  const clock = rt.databaseClock;
  if (!clock) return () => {};
  const measure = async () => {
    try {
      const { offsetMs, roundTripMs } = await measureClockOffset(rt.database.db, systemClock);
      clock.offsetMs = offsetMs;
      if (Math.abs(offsetMs) > CLOCK_WARN_MS)
        warn({ offsetMs: Math.round(offsetMs), roundTripMs }, "this host's clock is off the database's; Chime follows the database's");
    } catch (err) {
      warn({ err }, "measuring the database's clock failed; keeping the last offset");
    }
  };
  void measure();
  return systemClock.every(CLOCK_SYNC_INTERVAL_MS, measure);
}

/**
 * Opens the database (postgres.js for DATABASE_URL, else PGlite in CHIME_DATA_DIR) and builds the cipher. With
 * `schema: 'migrate'` (the default) it applies pending migrations first; with `'check'` it refuses a schema that is
 * behind (store/migrate.ts); with `'as-is'` it looks at neither (`chime migrate --status`).
 * @throws ConfigError for a malformed encryption key; SchemaBehindError on `'check'`; the driver's error when the
 *   database cannot be reached (or the role may not read drizzle's journal, 42501)
 */
export async function openRuntime(
  config: Config,
  opts: { schema?: 'migrate' | 'check' | 'as-is'; poolSize?: number } = {},
): Promise<Runtime> {
  const schema = opts.schema ?? 'migrate';
  const cipher = await createCipher(await loadEncryptionKeys(config));
  let database: Database;
  if (config.databaseUrl) {
    if (schema === 'migrate') await migratePostgresUrl(config.databaseUrl);
    database = openPostgres(config.databaseUrl, { max: opts.poolSize });
  } else {
    const { openEmbedded } = await import('./store/embedded.ts');
    const embedded = await openEmbedded(config.dataDir, { sync: config.embeddedSync });
    if (schema === 'migrate') await migrateEmbedded(embedded.pg);
    database = embedded;
  }
  if (schema === 'check') {
    await checkSchemaCurrent(database.db).catch(async (err: unknown) => {
      await database.close().catch(() => {});
      throw err;
    });
  }
  // On PostgreSQL every process follows the database's clock (measured now, kept in step by startClockSync).
  const databaseClock = config.databaseUrl ? new OffsetClock(systemClock) : null;
  if (databaseClock) databaseClock.offsetMs = (await measureClockOffset(database.db, systemClock)).offsetMs;
  const clock: Clock = databaseClock ?? systemClock;
  return { database, cipher, clock, databaseClock, store: { db: database.db, cipher, clock, openJobs: new OpenJobsEstimates(clock) } };
}

/**
 * The configured keys: CHIME_ENCRYPTION_KEY (several with ids while they are rotated: cipher.ts), else the embedded
 * database's key file, generated on first use.
 * @throws ConfigError naming the variable or the file and the entry at fault
 */
async function loadEncryptionKeys(config: Config): Promise<EncryptionKey[]> {
  if (config.encryptionKey) return parseKeys(config.encryptionKey, 'CHIME_ENCRYPTION_KEY');
  const file = join(config.dataDir, KEY_FILE);
  try {
    return parseKeys((await readFile(file, 'utf8')).trim(), file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(config.dataDir, { recursive: true });
  const key = crypto.getRandomValues(new Uint8Array(ENCRYPTION_KEY_BYTES));
  await writeFile(file, `${Buffer.from(key).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
  await chmod(file, 0o600);
  return [{ id: null, key }];
}

function parseKeys(value: string, source: string): EncryptionKey[] {
  try {
    return parseEncryptionKeys(value, source);
  } catch (err) {
    if (err instanceof CipherError) throw new ConfigError(err.message);
    throw err;
  }
}
