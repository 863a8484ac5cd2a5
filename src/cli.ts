/**
 * The `chime` command (API.md "Start-up and configuration"):
 *   chime serve [--role api|dispatcher|all]   chime migrate   chime tenant create --name N   chime listen   chime node
 * `serve` is the process composition root (serve.ts); the one-shot commands open the database (open-database.ts), do
 * their work and close it. A failure the user can fix is one line on stderr and exit 1.
 */
import {
  KEYS_REENCRYPT,
  KEYS_ROTATE_JWT,
  LISTEN,
  MIGRATE,
  NODE,
  parseCommand,
  ROLES,
  type Role,
  resolveCommand,
  SERVE,
  TENANT_CREATE,
  UsageExitError,
  usageError,
} from './cli-args.ts';
import type { SchemaStatus } from './store/migrate.ts';

// Each command imports what it runs when it runs: `--help` and a wrong command line load nothing but the parser
// (the build splits the bundle at these imports), so they answer at once.
const openDatabase = () => import('./open-database.ts');

/** Runs the command `argv` names; a wrong command line or `--help` throws UsageExitError before anything is opened. */
async function main(argv: string[]): Promise<number> {
  const { spec, args } = resolveCommand(argv);
  switch (spec) {
    case SERVE: {
      const values = parseCommand(SERVE, args);
      const role = values.role as Role;
      if (!ROLES.includes(role)) throw usageError(SERVE, `--role must be one of ${ROLES.join(', ')}, not "${values.role}"`);
      const [{ loadConfig }, { serve }] = await Promise.all([import('./config.ts'), import('./serve.ts')]);
      // --dev (npm start): a laptop's defaults, each overridden by the variable when it is set.
      const devEnv = { HOST: '127.0.0.1', CHIME_ALLOW_PRIVATE_DESTINATIONS: 'true', CHIME_MIGRATE: 'true' };
      const config = loadConfig(values.dev ? { ...devEnv, ...process.env } : process.env);
      return serve({ ...config, migrate: config.migrate || values.migrate }, role);
    }
    case MIGRATE: {
      const values = parseCommand(MIGRATE, args);
      const [{ withDatabase }, { schemaStatus }] = await Promise.all([openDatabase(), import('./store/migrate.ts')]);
      return withDatabase({ schema: values.status ? 'as-is' : 'migrate' }, async (rt) => {
        if (values.status) process.stdout.write(formatSchemaStatus(await schemaStatus(rt.database.db)));
        else process.stderr.write('migrations applied\n');
      });
    }
    case TENANT_CREATE: {
      const values = parseCommand(TENANT_CREATE, args);
      const name = values.name;
      if (!name) throw usageError(TENANT_CREATE, '--name is required');
      const [{ withDatabase }, { createTenant }, { createdTenantJson }] = await Promise.all([
        openDatabase(),
        import('./store/tenants.ts'),
        import('./first-tenant.ts'),
      ]);
      return withDatabase({}, async (rt) => {
        const t = await createTenant(rt.store, name);
        process.stdout.write(`${JSON.stringify(createdTenantJson(t), null, 2)}\n`);
      });
    }
    case KEYS_ROTATE_JWT: {
      parseCommand(KEYS_ROTATE_JWT, args);
      const [{ withDatabase }, { rotateJwtKey, JWKS_GRACE_MS }] = await Promise.all([openDatabase(), import('./store/jwt-keys.ts')]);
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
      const [{ withDatabase }, { reencryptSecrets }, { keyName }] = await Promise.all([
        openDatabase(),
        import('./store/sealed-secrets.ts'),
        import('./store/cipher.ts'),
      ]);
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
      }).catch(async (err: unknown) => {
        if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
        const { StartupError } = await openDatabase();
        throw new StartupError(`cannot listen on port ${port}: it is in use (EADDRINUSE); pass another --port`);
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

/**
 * Writes the one line a user can act on for `err` (a wrong command line, a configuration or start-up failure) and
 * returns the exit code; anything else is a bug, rethrown with its stack.
 */
async function reportFailure(err: unknown): Promise<number> {
  if (err instanceof UsageExitError) {
    err.write();
    return err.code;
  }
  // Past the parser: loading the modules that define these errors costs only a failing start.
  const [{ ConfigError }, { CipherError }, { StartupError }] = await Promise.all([
    import('./config.ts'),
    import('./store/cipher.ts'),
    openDatabase(),
  ]);
  if (err instanceof ConfigError || err instanceof CipherError || (err instanceof Error && err.name === 'DataDirLockedError')) {
    process.stderr.write(`chime: configuration error: ${err.message}\n`);
    return 1;
  }
  if (err instanceof StartupError) {
    process.stderr.write(`chime: ${err.message}\n`);
    return 1;
  }
  throw err;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  process.exitCode = await reportFailure(err);
}
