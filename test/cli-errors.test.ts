/**
 * Start-up failures a user fixes by configuration print one line naming the cause and the variable to change, and
 * exit 1, never a stack trace (issue #28, point 8): a busy port at `chime serve` (either role), an unreachable
 * database, a refused login or a missing database at `chime serve` and `chime migrate`. The database's password is
 * never printed. Runs the built CLI as a user does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChimeRun, runChime } from './support/chime-run.ts';
import { TEST_ENCRYPTION_KEY } from './support/databases.ts';

const scratch = mkdtempSync(join(tmpdir(), 'chime-cli-errors-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const PASSWORD = 'pw-never-printed-7f3a';
const show = (run: ChimeRun) => `exit ${run.code} (${run.signal})\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;

/** Exit 1 with exactly one `chime: …` line on stderr matching `pattern`, no stack frame, no password. */
function expectOneLine(run: ChimeRun, pattern: RegExp): void {
  expect(run.code, show(run)).toBe(1);
  const lines = run.stderr.split('\n').filter((l) => l.startsWith('chime: '));
  expect(lines, show(run)).toHaveLength(1);
  expect(lines[0], show(run)).toMatch(pattern);
  for (const out of [run.stdout, run.stderr]) {
    expect(out, show(run)).not.toContain('    at ');
    expect(out, show(run)).not.toContain(PASSWORD);
  }
}

describe('a busy port', () => {
  let holder: Server;
  let port: number;
  beforeAll(async () => {
    holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
    port = (holder.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((r) => holder.close(() => r())));

  it.each([['all'], ['dispatcher']])(
    'chime serve --role %s: one line naming the port and PORT, exit 1',
    async (role) => {
      const run = await runChime(
        { PORT: String(port), HOST: '127.0.0.1', CHIME_DATA_DIR: join(scratch, `busy-${role}`) },
        ['serve', '--role', role],
        60_000,
      );
      expectOneLine(run, new RegExp(`^chime: cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use \\(EADDRINUSE\\); set PORT`));
    },
    90_000,
  );
});

describe('an unreachable database', () => {
  let closedPort: number;
  beforeAll(async () => {
    // A port nothing listens on: taken, then given back.
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    closedPort = (s.address() as { port: number }).port;
    await new Promise<void>((r) => s.close(() => r()));
  });
  const env = (url: string) => ({ DATABASE_URL: url, CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, PORT: '0', HOST: '127.0.0.1' });

  it.each([['migrate'], ['serve']])(
    'chime %s: one line naming the server and DATABASE_URL, exit 1',
    async (command) => {
      const run = await runChime(env(`postgres://chime:${PASSWORD}@127.0.0.1:${closedPort}/chime`), [command], 60_000);
      expectOneLine(
        run,
        new RegExp(`^chime: cannot reach the database at 127\\.0\\.0\\.1:${closedPort} \\(ECONNREFUSED.*\\); check DATABASE_URL`),
      );
    },
    90_000,
  );

  it('chime migrate on a name that does not resolve: one line naming DATABASE_URL, exit 1', async () => {
    const run = await runChime(env(`postgres://chime:${PASSWORD}@no-such-host.invalid:5432/chime`), ['migrate'], 60_000);
    expectOneLine(run, /^chime: cannot reach the database at no-such-host\.invalid:5432 \((ENOTFOUND|EAI_AGAIN).*\); check DATABASE_URL/);
  }, 90_000);

  it.runIf(process.env.TEST_DATABASE_URL)(
    'chime migrate with a wrong user or database name: one line naming DATABASE_URL, exit 1',
    async () => {
      const base = new URL(process.env.TEST_DATABASE_URL!);
      const wrongUser = new URL(base);
      wrongUser.username = 'no_such_role_chime';
      wrongUser.password = PASSWORD;
      expectOneLine(
        await runChime(env(wrongUser.href), ['migrate'], 60_000),
        /^chime: the database at .* refused the login \(28.*\); check the user and password in DATABASE_URL$/,
      );
      const wrongDb = new URL(base);
      wrongDb.pathname = '/no_such_database_chime';
      expectOneLine(
        await runChime(env(wrongDb.href), ['migrate'], 60_000),
        /^chime: the database at .* has no such database \(3D000.*\); check the database name in DATABASE_URL$/,
      );
    },
    150_000,
  );
});
