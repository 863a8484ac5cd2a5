/**
 * The README's Quick start, run as a new user runs it: a fresh clone of this repository's HEAD, `npm start` in it
 * (the README's first command; the clone borrows this checkout's installed node_modules in place of a second
 * `npm ci`), then the Quick start's shell block pasted as it stands (with the service's and the receiver's ports
 * swapped for free ones), with `bash -e`: every command must succeed. The callback must arrive with both signatures
 * verified, the run must be `succeeded` with its attempt log, and no file with a secret may be left where git would
 * commit it. Commit before running this locally: the clone sees HEAD, not the working tree.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/chime-process.ts';
import { eventually } from '../support/eventually.ts';

const ROOT = resolve(import.meta.dirname, '../..');

/** The shell block that follows the `quick-start` marker in the README. */
function quickStartScript(readme: string): string {
  const marker = readme.indexOf('<!-- quick-start');
  if (marker < 0) throw new Error('the README has no quick-start marker');
  const m = /```sh\n([\s\S]*?)```/.exec(readme.slice(marker));
  if (!m) throw new Error('no ```sh block after the quick-start marker');
  return m[1]!;
}

describe("the README's Quick start, pasted top to bottom", () => {
  let clone: string;
  let service: ChildProcess | undefined;
  let serviceOut = '';

  beforeAll(async () => {
    clone = await mkdtemp(join(tmpdir(), 'chime-readme-'));
    const cloned = spawnSync('git', ['clone', '--quiet', ROOT, clone], { encoding: 'utf8' });
    expect(cloned.status, cloned.stderr).toBe(0);
    await symlink(join(ROOT, 'node_modules'), join(clone, 'node_modules'), 'dir');
  }, 60_000);
  afterAll(async () => {
    if (service?.pid && service.exitCode === null) process.kill(-service.pid, 'SIGTERM');
    await new Promise((r) => (service && service.exitCode === null ? service.once('exit', r) : r(null)));
    await rm(clone, { recursive: true, force: true });
  });

  it('reaches a verified callback and its run history, with no secret in the working tree', async () => {
    const [port, receiverPort] = [await freePort(), await freePort()];
    // `npm start` as the README's first line runs it; its own process group, so the whole tree stops together.
    const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port) };
    service = spawn('npm', ['start'], { cwd: clone, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    service.stdout!.on('data', (d) => (serviceOut += d));
    service.stderr!.on('data', (d) => (serviceOut += d));
    // Ready once it says it listens on the port, then answers there: a process of another test that took the port
    // between freePort() and this start would answer /readyz too (a CI run saw that, before the build had ended).
    await eventually(
      async () => {
        if (service!.exitCode !== null) throw new Error(`npm start exited with ${service!.exitCode}: ${serviceOut}`);
        if (!serviceOut.includes(`"port":${port},"msg":"listening"`)) return false;
        return (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null))?.ok;
      },
      { timeoutMs: 60_000, what: 'npm start to be ready' },
    );
    expect(serviceOut).toMatch(/First start: created tenant "default"/);

    const script = quickStartScript(await readFile(join(clone, 'README.md'), 'utf8'))
      .replaceAll('localhost:8080', `localhost:${port}`)
      .replaceAll('9000', String(receiverPort));
    const run = spawnSync('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd: clone, env, encoding: 'utf8', timeout: 90_000 });
    const what = `exit ${run.status}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}\n--- service\n${serviceOut}`;
    expect(run.status, what).toBe(0);

    // The receiver's block: both signatures verified; the readiness probe printed nothing (no INVALID block).
    expect(run.stdout, what).toMatch(/--> POST \/hook/);
    expect(run.stdout, what).not.toContain('INVALID');
    expect(run.stdout.match(/^--> /gm), what).toHaveLength(1);
    expect(run.stdout, what).toMatch(/^\s*signature:\s+verified$/m);
    expect(run.stdout, what).toMatch(/^\s*chime-signature:\s+verified \(kid /m);
    // The run history, then the run with its attempt log.
    const lines = run.stdout.split('\n').filter((l) => l.startsWith('{'));
    const history = JSON.parse(lines.find((l) => l.startsWith('{"runs"'))!);
    expect(history.runs).toHaveLength(1);
    expect(history.runs[0].status).toBe('succeeded');
    const detail = JSON.parse(lines.find((l) => l.startsWith('{"runId"'))!);
    expect(detail).toMatchObject({ status: 'succeeded', attempts: 1, attemptLog: [{ attempt: 1, responseStatus: 200 }] });

    // Nothing git would commit appeared, and no tracked or untracked file outside .chime holds the key or secret.
    const status = spawnSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: clone, encoding: 'utf8' });
    expect(status.stdout, 'files git would pick up').toBe('');
    const saved = JSON.parse(await readFile(join(clone, '.chime/first-tenant.json'), 'utf8'));
    const grep = spawnSync(
      'grep',
      [
        '-rlF',
        '--exclude-dir=.chime',
        '--exclude-dir=node_modules',
        '--exclude-dir=.git',
        '-e',
        saved.apiKey,
        '-e',
        saved.signingSecret,
        '.',
      ],
      {
        cwd: clone,
        encoding: 'utf8',
      },
    );
    expect(grep.stdout, 'files holding a secret').toBe('');
  }, 180_000);
});
