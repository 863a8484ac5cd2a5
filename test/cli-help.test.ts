/**
 * The `chime` command line, as a user runs it (the built CLI): `--help` on every command prints its usage on stdout
 * and exits 0 without opening anything; a wrong command line prints `chime: <problem>` and the usage on stderr and
 * exits 2, never a stack trace.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ChimeRun, runChime } from './support/chime-run.ts';

// An environment `loadConfig` rejects and a data folder nobody creates: help and usage errors must come before
// either is looked at (a database opened would create the folder; a config loaded would exit 1).
const scratch = mkdtempSync(join(tmpdir(), 'chime-cli-help-'));
const DATA_DIR = join(scratch, 'never-created');
const ENV = { CHIME_DATA_DIR: DATA_DIR, PORT: 'not-a-port' };
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const chime = (args: string[]): Promise<ChimeRun> => runChime(ENV, args, 20_000);
const show = (run: ChimeRun) => `exit ${run.code} (${run.signal})\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;

/** No stack frame, no parseArgs error code: what a user must never see. */
function expectNoTrace(run: ChimeRun): void {
  for (const out of [run.stdout, run.stderr]) {
    expect(out, show(run)).not.toContain('    at ');
    expect(out, show(run)).not.toContain('ERR_PARSE_ARGS');
  }
}

describe('chime --help', () => {
  it.each([['--help'], ['-h'], ['help']])('chime %s prints the overall usage on stdout, exit 0', async (flag) => {
    const run = await chime([flag]);
    expect(run.code, show(run)).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(/^usage: chime <command>/);
    for (const command of ['serve', 'migrate', 'tenant create', 'keys rotate-jwt', 'listen', 'node']) expect(run.stdout).toContain(command);
    expectNoTrace(run);
  });

  // Each command with words its help must contain: its name, its options, the environment it reads.
  const commands: [args: string[], expected: string[]][] = [
    [
      ['serve'],
      [
        'usage: chime serve',
        '--role',
        'api|dispatcher|all',
        'PORT',
        'HOST',
        '0.0.0.0',
        'DATABASE_URL',
        'CHIME_DATA_DIR',
        'CHIME_METRICS_TOKEN',
        '--help',
      ],
    ],
    [['migrate'], ['usage: chime migrate', 'DATABASE_URL', 'CHIME_DATA_DIR', '--help']],
    [
      ['tenant', 'create'],
      ['usage: chime tenant create', '--name NAME', 'DATABASE_URL', '--help'],
    ],
    [
      ['keys', 'rotate-jwt'],
      ['usage: chime keys rotate-jwt', 'DATABASE_URL', '--help'],
    ],
    [['listen'], ['usage: chime listen', '--port', 'default 9000', '--secret', '--jwks', 'CHIME_SIGNING_SECRET', '--help']],
    [['node'], ['usage: chime node', '--help']],
    [['tenant'], ['usage: chime tenant <command>', 'tenant create --name NAME']],
    [['keys'], ['usage: chime keys <command>', 'keys rotate-jwt']],
  ];
  describe.each(commands)('chime %j', (args, expected) => {
    it.each([['--help'], ['-h']])('%s prints its usage on stdout, exit 0, and opens nothing', async (flag) => {
      const run = await chime([...args, flag]);
      expect(run.code, show(run)).toBe(0);
      expect(run.stderr, show(run)).toBe('');
      for (const text of expected) expect(run.stdout, show(run)).toContain(text);
      expectNoTrace(run);
      expect(existsSync(DATA_DIR), 'the data folder was created: --help opened the database').toBe(false);
    });
  });

  it('chime help <command> is chime <command> --help', async () => {
    const [viaHelp, viaFlag] = await Promise.all([chime(['help', 'tenant', 'create']), chime(['tenant', 'create', '--help'])]);
    expect(viaHelp.code, show(viaHelp)).toBe(0);
    expect(viaHelp.stdout).toBe(viaFlag.stdout);
  });

  it('--help wins over a wrong option next to it', async () => {
    const run = await chime(['serve', '--bogus', '--help']);
    expect(run.code, show(run)).toBe(0);
    expect(run.stdout).toContain('usage: chime serve');
  });
});

describe('a wrong command line', () => {
  // The arguments, what stderr must name (the offending thing), and the usage it must show.
  const bad: [args: string[], offending: string, usage: string][] = [
    [['serve', '--bogus'], '--bogus', 'usage: chime serve'],
    [['migrate', '--bogus'], '--bogus', 'usage: chime migrate'],
    [['tenant', 'create', '--name', 'acme', '--bogus'], '--bogus', 'usage: chime tenant create'],
    [['keys', 'rotate-jwt', '--bogus'], '--bogus', 'usage: chime keys rotate-jwt'],
    [['listen', '--bogus'], '--bogus', 'usage: chime listen'],
    [['node', '--bogus'], '--bogus', 'usage: chime node'],
    [['serve', '-x'], '-x', 'usage: chime serve'],
    [['serve', '--role', 'x'], '"x"', 'usage: chime serve'],
    [['serve', '--role'], '--role', 'usage: chime serve'],
    [['serve', 'extra'], 'extra', 'usage: chime serve'],
    [['listen', '--port', 'abc'], 'abc', 'usage: chime listen'],
    [['listen', '--port', '70000'], '70000', 'usage: chime listen'],
    [['listen', '--port='], '--port', 'usage: chime listen'],
    [['tenant', 'create'], '--name', 'usage: chime tenant create'],
    [['tenant', 'create', '--name'], '--name', 'usage: chime tenant create'],
    [['tenant', 'create', '--name', '--bogus'], '--name', 'usage: chime tenant create'],
    [['tenant', 'create', '--name', 'acme', 'extra'], 'extra', 'usage: chime tenant create'],
    [['keys', 'rotate-jwt', 'extra'], 'extra', 'usage: chime keys rotate-jwt'],
    [['tenant'], 'tenant', 'usage: chime tenant <command>'],
    [['tenant', 'delete'], 'tenant delete', 'usage: chime tenant <command>'],
    [['keys'], '"keys"', 'usage: chime keys <command>'],
    [['bogus'], 'bogus', 'usage: chime <command>'],
    [['--bogus'], '--bogus', 'usage: chime <command>'],
    [['help', 'bogus'], 'bogus', 'usage: chime <command>'],
  ];
  it.each(bad)('chime %j: exit 2, the problem and the usage on stderr', async (args, offending, usage) => {
    const run = await chime(args);
    expect(run.code, show(run)).toBe(2);
    expect(run.stdout, show(run)).toBe('');
    expect(run.stderr, show(run)).toMatch(/^chime: .+\n/);
    expect(run.stderr.split('\n')[0], show(run)).toContain(offending);
    expect(run.stderr, show(run)).toContain(usage);
    expectNoTrace(run);
    expect(existsSync(DATA_DIR)).toBe(false);
  });

  it('chime without arguments: the overall usage on stderr, exit 2', async () => {
    const run = await chime([]);
    expect(run.code, show(run)).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^usage: chime <command>/);
    expectNoTrace(run);
  });
});
