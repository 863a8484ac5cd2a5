/**
 * Opening the configured database for a command (API.md "Start-up and configuration"), with the failures a user fixes
 * by configuration reported as one-line StartupErrors (the CLI prints `chime: <message>` and exits 1).
 */
import { type Config, loadConfig } from './config.ts';
import { openRuntime, type Runtime } from './runtime.ts';
import { errorChain } from './store/db.ts';
import { SchemaBehindError } from './store/migrate.ts';
import { checkPostgresPatch, PostgresPatchError } from './store/postgres-patch.ts';

/** A failure to start that the user can fix: printed as one line (`chime: <message>`), exit 1, no stack trace. */
export class StartupError extends Error {
  override name = 'StartupError';
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
export async function openDatabase(config: Config, opts: Parameters<typeof openRuntime>[1] = {}): Promise<Runtime> {
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
export async function withDatabase(opts: Parameters<typeof openRuntime>[1], work: (rt: Runtime) => Promise<void>): Promise<number> {
  const rt = await openDatabase(loadConfig(process.env), opts);
  try {
    await work(rt);
  } finally {
    await rt.database.close();
  }
  return 0;
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
