/**
 * The command line of `chime`: each command's options and help text, and one parser for all of them. `--help` (or
 * `-h`) prints a command's help on stdout and exits 0; a wrong command line prints `chime: <problem>` and the
 * command's help on stderr and exits 2, never a stack trace. Both are thrown as `UsageExitError`, which the CLI's entry
 * point turns into output and an exit code.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import pkg from '../package.json' with { type: 'json' };
import { DEFAULT_DATA_DIR, DEFAULT_HOST, DEFAULT_PORT } from './process-defaults.ts';

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

/** What `chime serve --role` starts: the HTTP API, the dispatcher, or both in one process. */
export const ROLES = ['api', 'dispatcher', 'all'] as const;
export type Role = (typeof ROLES)[number];

/** One `chime` command: what `parseCommand` accepts and what its `--help` says. */
export type CommandSpec<O extends OptionsConfig = OptionsConfig> = {
  /** The words after `chime`: `serve`, `tenant create`. */
  name: string;
  /** Its arguments as the usage line shows them: `[--role api|dispatcher|all]`. */
  args: string;
  /** One line, for the list of commands (the overall usage, a group's help). */
  summary: string;
  /** The rest of its help, after the usage line: what it does, its options with defaults, the environment it reads. */
  details: string;
  /** Its options for node:util parseArgs (strict; `--help`/`-h` is added); no command takes positionals. */
  options: O;
};

const HELP_OPTION = { help: { type: 'boolean', short: 'h' } } as const;

type ParsedValues<O extends OptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O & typeof HELP_OPTION; strict: true; allowPositionals: false }>
>['values'];

/**
 * A command line that ends `chime` before anything runs: help (exit 0, `text` on stdout) or a usage error (exit 2,
 * `text` on stderr).
 */
export class UsageExitError extends Error {
  override name = 'UsageExitError';
  constructor(
    readonly code: 0 | 2,
    readonly text: string,
  ) {
    super(text.split('\n')[0]);
  }

  /** Writes `text` where it belongs (stdout for help, stderr for an error). */
  write(): void {
    (this.code === 0 ? process.stdout : process.stderr).write(this.text);
  }
}

/** Keeps the option types of a command literal, so `parseCommand` returns typed values. */
function command<const O extends OptionsConfig>(spec: CommandSpec<O>): CommandSpec<O> {
  return spec;
}

const DB_ENV = `environment:
  DATABASE_URL          postgres://… of a PostgreSQL ≥ 14 (default: the embedded database in CHIME_DATA_DIR)
  CHIME_DATA_DIR        folder of the embedded database (default ${DEFAULT_DATA_DIR}); one process at a time
                        may open it, so stop \`chime serve\` first
  CHIME_ENCRYPTION_KEY  base64 of 32 bytes, or several comma-separated <id>:<base64> (the first seals, all
                        open); required with DATABASE_URL
`;

export const SERVE = command({
  name: 'serve',
  args: '[--role api|dispatcher|all] [--migrate] [--dev]',
  summary: 'run the service (default: all, on PORT)',
  details: `Runs the HTTP API and/or a dispatcher that delivers due callbacks. SIGTERM or SIGINT drains: in-flight
callbacks get CHIME_SHUTDOWN_GRACE_MS to finish (a second signal cuts that short), then it exits 0.

options:
  --role ROLE   api: the HTTP API only; dispatcher: delivers callbacks and answers only /healthz, /readyz
                and /metrics; all: both in one process (default: all)
  --migrate     apply pending migrations before starting (as CHIME_MIGRATE=true). Without it, on
                PostgreSQL the service checks that the schema is current and refuses to start if not:
                an operator runs \`chime migrate\` with a role that owns the schema. The embedded
                database migrates by itself unless CHIME_MIGRATE=false
  --dev         local development (what \`npm start\` runs): listens on 127.0.0.1 unless HOST is set,
                allows callbacks to loopback and private addresses unless CHIME_ALLOW_PRIVATE_DESTINATIONS
                is set, and migrates unless CHIME_MIGRATE is set
  -h, --help    show this help

On the embedded database, the first start creates a first tenant and writes its API key and signing secret to
first-tenant.json in CHIME_DATA_DIR (mode 0600).

environment:
  PORT                  HTTP port (default ${DEFAULT_PORT})
  HOST                  address to listen on (default ${DEFAULT_HOST}; with --dev 127.0.0.1)
  DATABASE_URL          postgres://… of a PostgreSQL ≥ 14 (default: the embedded database in CHIME_DATA_DIR)
  CHIME_DATA_DIR        folder of the embedded database (default ${DEFAULT_DATA_DIR})
  CHIME_ENCRYPTION_KEY  base64 of 32 bytes; required with DATABASE_URL
  CHIME_ADMIN_TOKEN     bearer token that may create tenants (POST /v1/tenants)
  CHIME_METRICS_TOKEN   bearer token that GET /metrics requires (unset: /metrics answers 404)
  CHIME_LOG_LEVEL       fatal, error, warn, info, debug, trace or silent (default info)
  …and the other CHIME_* settings in README.md, "Configuration".
`,
  options: {
    role: { type: 'string', default: 'all' },
    migrate: { type: 'boolean', default: false },
    dev: { type: 'boolean', default: false },
  },
});

export const MIGRATE = command({
  name: 'migrate',
  args: '[--status]',
  summary: 'apply database migrations, or list them',
  details: `Applies the database migrations that have not run yet, then exits. Run it with a role that owns the
schema, before starting a new version (README "Upgrades"); \`serve --migrate\` does the same at start.
Migrations only expand the schema, so the running version keeps working on it.

options:
  --status      list the migrations, each applied or pending, and change nothing
  -h, --help    show this help

${DB_ENV}`,
  options: { status: { type: 'boolean', default: false } },
});

export const TENANT_CREATE = command({
  name: 'tenant create',
  args: '--name NAME',
  summary: 'create a tenant; prints its API key and signing secret once',
  details: `Creates a tenant in the database directly and prints it as JSON, with its API key and signing secret:
they are not shown again.

options:
  --name NAME   the tenant's name (required)
  -h, --help    show this help

${DB_ENV}`,
  options: { name: { type: 'string' } },
});

export const KEYS_ROTATE_JWT = command({
  name: 'keys rotate-jwt',
  args: '',
  summary: 'retire the JWT signing key now and start signing with a new one',
  details: `Makes a new Chime-Signature (JWT) signing key and prints its kid. Dispatchers switch to it within a
minute; the old key stays in the JWKS for a while, so callbacks signed with it still verify.

options:
  -h, --help    show this help

${DB_ENV}`,
  options: {},
});

export const KEYS_REENCRYPT = command({
  name: 'keys reencrypt',
  args: '',
  summary: 'seal every stored secret again under the first CHIME_ENCRYPTION_KEY',
  details: `Re-seals every stored secret (callback auth tokens, signing secrets, JWT private keys) that is not sealed
under the first key of CHIME_ENCRYPTION_KEY, in small batches, while the service runs, and prints how many rows it
changed per table. To rotate the encryption key: put the new key first (CHIME_ENCRYPTION_KEY=new:<base64>,<old>),
restart the service, run this, then remove the old key and restart again. On the embedded database, stop the
service first (one process at a time opens it).

options:
  -h, --help    show this help

${DB_ENV}`,
  options: {},
});

export const LISTEN = command({
  name: 'listen',
  args: '[--port P] [--secret whsec_…] [--jwks URL] [--complete-after MS]',
  summary: 'a local receiver that prints each callback and checks its signatures',
  details: `Receives callbacks over HTTP and prints each one with the result of its signature checks, until
SIGINT or SIGTERM. \`GET /ready\` answers 200 without printing (a readiness probe).

options:
  --port P          port to listen on (default 9000)
  --secret whsec_…  the tenant's signing secret, to check webhook-signature (may be repeated;
                    default: CHIME_SIGNING_SECRET; none: signatures are not checked)
  --jwks URL        the service's JWKS URL, to check Chime-Signature
  --complete-after MS
                    an async job's attempt (Chime-Completion-Url): answer 202, heartbeat every 5 s
                    and report succeeded after MS milliseconds (default: answer 200, report by hand)
  -h, --help        show this help

environment:
  CHIME_SIGNING_SECRET  the signing secret when no --secret is given
`,
  options: {
    port: { type: 'string', default: '9000' },
    secret: { type: 'string', multiple: true },
    jwks: { type: 'string' },
    'complete-after': { type: 'string' },
  },
});

export const NODE = command({
  name: 'node',
  args: '',
  summary: 'the JSON-lines node protocol on stdin/stdout',
  details: `Speaks the node protocol (docs/protocol.md): one JSON message a line on stdin, replies on stdout, logs on
stderr; exits when stdin ends. Keeps its jobs in memory, no database.

options:
  -h, --help    show this help
`,
  options: {},
});

/** Every command, in the order the overall usage lists them. */
export const COMMANDS: readonly CommandSpec[] = [SERVE, MIGRATE, TENANT_CREATE, KEYS_ROTATE_JWT, KEYS_REENCRYPT, LISTEN, NODE];

/** One line per command, the arguments aligned; a long synopsis puts its summary on the next line. */
function commandList(specs: readonly CommandSpec[], indent = '  '): string {
  const column = 38;
  return specs
    .map((c) => {
      const synopsis = `${indent}${c.name}${c.args ? ` ${c.args}` : ''}`;
      return synopsis.length + 2 <= column
        ? `${synopsis.padEnd(column)}${c.summary}\n`
        : `${synopsis}\n${' '.repeat(column)}${c.summary}\n`;
    })
    .join('');
}

/** The overall usage: every command, one line each. */
export const USAGE = `usage: chime <command> [options]

commands:
${commandList(COMMANDS)}
\`chime <command> --help\` (or \`chime help <command>\`) describes a command, its options and the environment
it reads; \`chime --version\` prints the version.
`;

/** The help of one command. */
export function commandHelp(spec: CommandSpec): string {
  return `usage: chime ${spec.name}${spec.args ? ` ${spec.args}` : ''}\n\n${spec.details}`;
}

/** The help of a command group (`tenant`, `keys`): its subcommands. */
function groupHelp(group: string, specs: readonly CommandSpec[]): string {
  return `usage: chime ${group} <command> [options]

commands:
${commandList(specs)}
\`chime ${group} <command> --help\` describes a command.
`;
}

/** A usage error of `spec` (or of the whole CLI when it is a string: a group's help, or the overall usage). */
export function usageError(spec: CommandSpec | string, problem: string | undefined): UsageExitError {
  const help = typeof spec === 'string' ? spec : commandHelp(spec);
  return new UsageExitError(2, `${problem ? `chime: ${problem}\n` : ''}${help}`);
}

/** Whether the arguments ask for help (before a `--` that ends the options). */
function wantsHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/**
 * Finds the command `argv` (the arguments after `chime`) names.
 * @returns the command and the arguments after its name
 * @throws UsageExitError for `--help`, `-h`, `help [command]`, `--version`, `-v` (code 0), no or an unknown command
 *   (code 2)
 */
export function resolveCommand(argv: readonly string[]): { spec: CommandSpec; args: string[] } {
  const [first, ...rest] = argv;
  if (first === undefined) throw usageError(USAGE, undefined);
  if (first === '--help' || first === '-h') throw new UsageExitError(0, USAGE);
  if (first === '--version' || first === '-v') throw new UsageExitError(0, `chime ${pkg.version}\n`);
  if (first === 'help') {
    // `chime help tenant create` is `chime tenant create --help`.
    if (rest.length === 0) throw new UsageExitError(0, USAGE);
    const { spec } = resolveCommand([...rest, '--help']); // a group or an unknown command throws here
    throw new UsageExitError(0, commandHelp(spec));
  }
  const group = COMMANDS.filter((c) => c.name.startsWith(`${first} `));
  if (group.length > 0) {
    const spec = group.find((c) => c.name === `${first} ${rest[0]}`);
    if (spec) return { spec, args: rest.slice(1) };
    const help = groupHelp(first, group);
    if (wantsHelp(rest)) throw new UsageExitError(0, help);
    const sub = rest[0];
    throw usageError(help, sub === undefined || sub.startsWith('-') ? `"${first}" needs a command` : `unknown command "${first} ${sub}"`);
  }
  const spec = COMMANDS.find((c) => c.name === first);
  if (spec) return { spec, args: rest };
  throw usageError(USAGE, first.startsWith('-') ? `unknown option "${first}"` : `unknown command "${first}"`);
}

/**
 * Parses the arguments of `spec` (after its name) with node:util parseArgs, strict and without positionals.
 * @throws UsageExitError with `spec`'s help: code 0 when they contain `--help` or `-h` (whatever else they contain),
 *   code 2 for an unknown option, a missing option value or a positional argument
 */
export function parseCommand<O extends OptionsConfig>(spec: CommandSpec<O>, args: readonly string[]): ParsedValues<O> {
  if (wantsHelp(args)) throw new UsageExitError(0, commandHelp(spec));
  let values: ParsedValues<O>;
  try {
    ({ values } = parseArgs({ args: [...args], options: { ...spec.options, ...HELP_OPTION }, strict: true, allowPositionals: false }) as {
      values: ParsedValues<O>;
    });
  } catch (err) {
    if (!isParseArgsError(err)) throw err;
    throw usageError(spec, parseArgsProblem(err));
  }
  // Generic in O, TypeScript cannot see the `help` every command has.
  if ((values as { help?: boolean }).help) throw new UsageExitError(0, commandHelp(spec));
  return values;
}

function isParseArgsError(err: unknown): err is Error & { code: string } {
  const code = err instanceof Error ? (err as Error & { code?: unknown }).code : undefined;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}

/**
 * parseArgs' message, trimmed: its first sentence, which names the option or argument (later ones are advice that
 * varies with the Node version), except for an ambiguous value, whose advice is the point.
 */
function parseArgsProblem(err: Error): string {
  const text = /ambiguous/.test(err.message) ? err.message.replace(/\s*\n\s*/g, ' ') : err.message.split('\n')[0]!.split('. ')[0]!;
  return text.charAt(0).toLowerCase() + text.slice(1);
}
