/**
 * The embedded database's folder is the owner's alone (issue #28, point 8): PGlite made it 0755 with every file in it
 * 0666 (postgresql.conf and pg_hba.conf world-writable). On a fresh folder and on every open of an existing one, the
 * folder and the folders in it are 0700 and every file 0600.
 */
import { chmod, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openEmbedded } from '../../src/store/embedded.ts';

const scratch = await mkdtemp(join(tmpdir(), 'chime-data-modes-'));
afterAll(() => rm(scratch, { recursive: true, force: true }));

const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

/** Every path under `dir` with its permission bits, `dir` itself first. */
async function modes(dir: string): Promise<{ path: string; dir: boolean; mode: number }[]> {
  const out = [{ path: dir, dir: true, mode: await modeOf(dir) }];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isDirectory() || entry.isFile()) out.push({ path, dir: entry.isDirectory(), mode: await modeOf(path) });
  }
  return out;
}

function expectPrivate(all: { path: string; dir: boolean; mode: number }[]): void {
  const wrong = all.filter((e) => e.mode !== (e.dir ? 0o700 : 0o600)).map((e) => `${e.mode.toString(8)} ${e.path}`);
  expect(wrong).toEqual([]);
}

describe('the embedded data folder', () => {
  it('is 0700 with its files 0600 when made, postgresql.conf and pg_hba.conf included', async () => {
    const dir = join(scratch, 'fresh', '.chime');
    const db = await openEmbedded(dir);
    try {
      expect((await modeOf(dir)).toString(8)).toBe('700');
      expect((await modeOf(join(dir, 'postgresql.conf'))).toString(8)).toBe('600');
      expect((await modeOf(join(dir, 'pg_hba.conf'))).toString(8)).toBe('600');
      expectPrivate(await modes(dir));
    } finally {
      await db.close();
    }
  });

  it('is made private again when opened, if it was not', async () => {
    const dir = join(scratch, 'existing');
    await (await openEmbedded(dir)).close();
    // As an older version left it.
    await chmod(dir, 0o755);
    for (const name of ['postgresql.conf', 'pg_hba.conf', 'PG_VERSION']) await chmod(join(dir, name), 0o666);
    await chmod(join(dir, 'base'), 0o755);

    const db = await openEmbedded(dir);
    try {
      expectPrivate(await modes(dir));
    } finally {
      await db.close();
    }
  });
});
