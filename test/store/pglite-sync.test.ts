/**
 * The embedded database syncs to disk (issue #30, point 1; docs/design.md invariant 1): PGlite's defaults start
 * PostgreSQL with `-F` and its file system ignores fsync (electric-sql/pglite#1107). The detector of Chime's patch
 * passes on this install (patched by `npm ci`) and refuses a copy with the patch taken out again, naming the file, the
 * version and both ways out, and so does `chime` started on such an install; a folder opens with fsync on and the patch's hooks in place, unless told not to sync
 * (CHIME_EMBEDDED_SYNC=off, or `memory://`, which has no disk). That each commit is synced before it is acknowledged
 * is shown under strace by test/e2e/embedded-durability.test.ts.
 */
import { spawn } from 'node:child_process';
import { copyFile, cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.ts';
import { openEmbedded } from '../../src/store/embedded.ts';
import {
  checkPGliteSyncPatch,
  checkSyncHooks,
  PGLITE_PATCHED_FILES,
  PGliteSyncPatchError,
  pglitePackageDir,
} from '../../src/store/pglite-sync.ts';
import { APPLY_PATCH_COMMAND } from '../../src/store/postgres-patch.ts';
import { CHIME_BUILD_DIR, CHIME_CLI } from '../support/build.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

const scratch = await mkdtemp(join(tmpdir(), 'chime-pglite-sync-'));
afterAll(() => rm(scratch, { recursive: true, force: true }));

/** The patch file for the installed PGlite version. */
async function patchText(): Promise<string> {
  const version = (JSON.parse(await readFile(join(pglitePackageDir(), 'package.json'), 'utf8')) as { version: string }).version;
  return readFile(new URL(`../../src/store/patches/@electric-sql+pglite+${version}.patch`, import.meta.url), 'utf8');
}

/** The original of `file`: the lines the patch's section of it removes or keeps (its `-` and context lines). */
async function unpatchedText(file: string): Promise<string> {
  const section = (await patchText()).split(/^diff --git /m).find((s) => s.startsWith(`a/node_modules/@electric-sql/pglite/${file} `));
  if (!section) throw new Error(`the patch has no section for ${file}`);
  const hunks = section.slice(section.indexOf('\n@@'));
  return hunks
    .split('\n')
    .filter((l) => l.startsWith('-') || l.startsWith(' '))
    .map((l) => l.slice(1))
    .join('\n');
}

/** A copy of the installed package's patched files (and package.json) under `dir`, unpatched when asked. */
async function copyOfPGlite(dir: string, opts: { unpatched: readonly string[] }): Promise<string> {
  const installed = pglitePackageDir();
  await mkdir(dir, { recursive: true });
  await copyFile(join(installed, 'package.json'), join(dir, 'package.json'));
  for (const file of PGLITE_PATCHED_FILES) {
    await mkdir(dirname(join(dir, file)), { recursive: true });
    await writeFile(
      join(dir, file),
      opts.unpatched.includes(file) ? await unpatchedText(file) : await readFile(join(installed, file), 'utf8'),
    );
  }
  return dir;
}

async function setting(db: Awaited<ReturnType<typeof openEmbedded>>, name: string): Promise<string> {
  const r = await db.pg.query<Record<string, string>>(`SHOW ${name}`);
  return r.rows[0]![name]!;
}

describe('checkPGliteSyncPatch', () => {
  it('finds the installed PGlite and passes on it (npm ci applied the patch)', () => {
    expect(pglitePackageDir()).toMatch(/node_modules[/\\]@electric-sql[/\\]pglite$/);
    expect(() => checkPGliteSyncPatch()).not.toThrow();
  });

  it('refuses an unpatched copy as a configuration error naming the file, the version, the command and the opt-out', async () => {
    const dir = await copyOfPGlite(join(scratch, 'unpatched'), { unpatched: PGLITE_PATCHED_FILES });
    const nodefs = await readFile(join(dir, 'dist/fs/nodefs.js'), 'utf8');
    // The copy really is the original: PGlite's NodeFS, without a line of the patch.
    expect(nodefs).toContain('s.FS.mount(c,{root:this.rootDir},i)');
    expect(nodefs).not.toContain('Chime patch');
    let thrown: unknown;
    try {
      checkPGliteSyncPatch(dir);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(PGliteSyncPatchError);
    expect(thrown).toBeInstanceOf(ConfigError); // the CLI prints it as one line, "chime: configuration error: …"
    const message = (thrown as Error).message;
    for (const file of PGLITE_PATCHED_FILES) expect(message).toContain(file);
    expect(message).toMatch(/PGlite \d+\.\d+\.\d+ in /);
    expect(message).toContain(APPLY_PATCH_COMMAND);
    expect(message).toContain('CHIME_EMBEDDED_SYNC=off');
    const intact = await copyOfPGlite(join(scratch, 'intact'), { unpatched: [] });
    expect(() => checkPGliteSyncPatch(intact)).not.toThrow();
  });

  it('refuses an opened module whose file system lacks the sync operations', () => {
    expect(() => checkSyncHooks({ NODEFS: { stream_ops: { read() {}, write() {} } } })).toThrow(PGliteSyncPatchError);
    expect(() => checkSyncHooks({ NODEFS: undefined })).toThrow(/fsync\/fdatasync/);
  });
});

describe('openEmbedded and CHIME_EMBEDDED_SYNC', () => {
  it('opens a folder with fsync on and the hooks in place, and a folder opened again the same way', async () => {
    const dir = join(scratch, 'synced');
    for (let i = 0; i < 2; i++) {
      const db = await openEmbedded(dir, { sync: true });
      try {
        expect(await setting(db, 'fsync')).toBe('on');
        expect(await setting(db, 'synchronous_commit')).toBe('on');
        expect(await setting(db, 'wal_sync_method')).toBe('fdatasync'); // what the patch's fdatasync hook serves
        expect(() => checkSyncHooks(db.pg.Module)).not.toThrow();
      } finally {
        await db.close();
      }
    }
  });

  it("keeps PGlite's -F with sync off, and follows CHIME_EMBEDDED_SYNC when not told", async () => {
    const off = await openEmbedded(join(scratch, 'unsynced'), { sync: false });
    try {
      expect(await setting(off, 'fsync')).toBe('off');
    } finally {
      await off.close();
    }
    const saved = process.env.CHIME_EMBEDDED_SYNC;
    process.env.CHIME_EMBEDDED_SYNC = 'off';
    try {
      const fromEnv = await openEmbedded(join(scratch, 'unsynced'));
      try {
        expect(await setting(fromEnv, 'fsync')).toBe('off');
      } finally {
        await fromEnv.close();
      }
    } finally {
      if (saved === undefined) delete process.env.CHIME_EMBEDDED_SYNC;
      else process.env.CHIME_EMBEDDED_SYNC = saved;
    }
  });

  it('never syncs memory://, which has no disk', async () => {
    const db = await openEmbedded('memory://', { sync: true });
    try {
      expect(await setting(db, 'fsync')).toBe('off');
    } finally {
      await db.close();
    }
  });
});

/**
 * An installation in `dir` as `npm ci --ignore-scripts` leaves it: the built CLI, and node_modules with every package
 * of this one but PGlite linked, PGlite copied with the patch taken out.
 */
async function installWithoutPatch(dir: string): Promise<void> {
  const modules = join(ROOT, 'node_modules');
  await mkdir(join(dir, 'node_modules', '@electric-sql'), { recursive: true });
  for (const name of await readdir(modules)) {
    if (name !== '@electric-sql' && name !== '.bin') await symlink(join(modules, name), join(dir, 'node_modules', name));
  }
  // A copy, not a link: Node resolves a link to its real path, the patched package.
  await cp(pglitePackageDir(), join(dir, 'node_modules', '@electric-sql', 'pglite'), { recursive: true });
  for (const file of PGLITE_PATCHED_FILES)
    await writeFile(join(dir, 'node_modules', '@electric-sql', 'pglite', file), await unpatchedText(file));
  await cp(join(ROOT, CHIME_BUILD_DIR), join(dir, CHIME_BUILD_DIR), { recursive: true });
  await symlink(join(ROOT, 'dist', 'console'), join(dir, 'dist', 'console'));
  await symlink(join(ROOT, 'drizzle'), join(dir, 'drizzle'));
}

/** Runs `node CHIME_CLI migrate` in `cwd` with `env`, and its exit code and stderr. */
function migrate(cwd: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [CHIME_CLI, 'migrate'], {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, CHIME_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stderr })));
}

describe('chime on an install without the patch', () => {
  it('refuses to open the embedded database with one line saying how to fix it, and opens it with CHIME_EMBEDDED_SYNC=off', async () => {
    const dir = join(scratch, 'install');
    await installWithoutPatch(dir);
    const refused = await migrate(dir, { CHIME_DATA_DIR: join(dir, 'data') });
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toMatch(/^chime: configuration error: PGlite \S+ in \S+ lacks Chime's patch \(dist\/fs\/nodefs\.js\)/m);
    expect(refused.stderr).toContain(APPLY_PATCH_COMMAND);
    expect(refused.stderr).toContain('CHIME_EMBEDDED_SYNC=off');
    expect(refused.stderr).not.toMatch(/^\s+at /m);
    const unsafe = await migrate(dir, { CHIME_DATA_DIR: join(dir, 'data'), CHIME_EMBEDDED_SYNC: 'off' });
    expect(unsafe.code, unsafe.stderr).toBe(0);
    expect(unsafe.stderr).toContain('migrations applied');
  }, 60_000);
});
