/**
 * Node wiring shared by the CLI commands: open and migrate the configured database, load the encryption key, build
 * the store context. The one place that chooses between PostgreSQL and the embedded PGlite.
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { systemClock, type Clock } from './domain/clock.ts';
import type { Config } from './config.ts';
import { ConfigError } from './config.ts';
import { createCipher, ENCRYPTION_KEY_BYTES, fromBase64Url, type Cipher } from './store/cipher.ts';
import type { Database } from './store/db.ts';
import type { StoreContext } from './store/context.ts';
import { migrateEmbedded, migratePostgresUrl } from './store/migrate.ts';
import { OpenJobsEstimates } from './store/open-jobs.ts';
import { openPostgres } from './store/postgres.ts';

/** Name of the generated key file in CHIME_DATA_DIR (embedded database only). */
export const KEY_FILE = 'encryption.key';

export type Runtime = { database: Database; cipher: Cipher; store: StoreContext; clock: Clock };

/**
 * Opens the database (postgres.js for DATABASE_URL, else PGlite in CHIME_DATA_DIR), applies migrations unless
 * `migrate: false`, and builds the cipher.
 * @throws ConfigError for a malformed encryption key; the driver's error when the database cannot be reached
 */
export async function openRuntime(config: Config, opts: { migrate?: boolean; poolSize?: number } = {}): Promise<Runtime> {
  const cipher = await createCipher(await loadEncryptionKey(config));
  let database: Database;
  if (config.databaseUrl) {
    if (opts.migrate !== false) await migratePostgresUrl(config.databaseUrl);
    database = openPostgres(config.databaseUrl, { max: opts.poolSize });
  } else {
    const { openEmbedded } = await import('./store/embedded.ts');
    const embedded = await openEmbedded(config.dataDir);
    if (opts.migrate !== false) await migrateEmbedded(embedded.pg);
    database = embedded;
  }
  const clock = systemClock;
  return { database, cipher, clock, store: { db: database.db, cipher, clock, openJobs: new OpenJobsEstimates(clock) } };
}

async function loadEncryptionKey(config: Config): Promise<Uint8Array> {
  if (config.encryptionKey) return decodeKey(config.encryptionKey, 'CHIME_ENCRYPTION_KEY');
  const file = join(config.dataDir, KEY_FILE);
  try {
    return decodeKey((await readFile(file, 'utf8')).trim(), file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(config.dataDir, { recursive: true });
  const key = crypto.getRandomValues(new Uint8Array(ENCRYPTION_KEY_BYTES));
  await writeFile(file, Buffer.from(key).toString('base64') + '\n', { flag: 'wx', mode: 0o600 });
  await chmod(file, 0o600);
  return key;
}

function decodeKey(value: string, source: string): Uint8Array {
  let key: Uint8Array;
  try {
    key = fromBase64Url(value);
  } catch {
    throw new ConfigError(`${source}: not base64`);
  }
  if (key.byteLength !== ENCRYPTION_KEY_BYTES) {
    throw new ConfigError(`${source}: must decode to ${ENCRYPTION_KEY_BYTES} bytes, got ${key.byteLength}`);
  }
  return key;
}
