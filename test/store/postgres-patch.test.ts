/**
 * Start-up refuses an unpatched postgres.js (issue #28, point 8): an install that skipped the `postinstall`
 * (`--ignore-scripts`, or src/store/patches not copied yet when `npm ci` ran, where patch-package says "No patch files
 * found" and exits 0) ran silently without the fix. The detector passes on this install (patched by `npm ci`) and
 * names the files, the version and the command on a copy with the patch taken out again.
 */
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  APPLY_PATCH_COMMAND,
  checkPostgresPatch,
  POSTGRES_PATCHED_FILES,
  PostgresPatchError,
  postgresPackageDir,
} from '../../src/store/postgres-patch.ts';

const PATCH_FILE = new URL('../../src/store/patches/postgres+3.4.9.patch', import.meta.url);
const scratch = await mkdtemp(join(tmpdir(), 'chime-pg-patch-'));
afterAll(() => rm(scratch, { recursive: true, force: true }));

/** `text` without the lines the patch adds to `file` (its `+` lines of that file's section): the original. */
function unpatch(text: string, patch: string, file: string): string {
  const section = patch.split(/^diff --git /m).find((s) => s.startsWith(`a/node_modules/postgres/${file} `));
  if (!section) throw new Error(`the patch has no section for ${file}`);
  const added = section
    .split('\n')
    .filter((l) => l.startsWith('+') && !l.startsWith('+++'))
    .map((l) => l.slice(1));
  const lines = text.split('\n');
  for (const line of added) {
    const i = lines.indexOf(line);
    if (i < 0) throw new Error(`${file}: the patched line is missing: ${line}`);
    lines.splice(i, 1);
  }
  return lines.join('\n');
}

/** A copy of the installed package's patched files (and package.json) under `dir`, unpatched when asked. */
async function copyOfPostgres(dir: string, opts: { unpatched: readonly string[] }): Promise<string> {
  const installed = postgresPackageDir();
  const patch = await readFile(PATCH_FILE, 'utf8');
  await mkdir(dir, { recursive: true });
  await copyFile(join(installed, 'package.json'), join(dir, 'package.json'));
  for (const file of POSTGRES_PATCHED_FILES) {
    await mkdir(dirname(join(dir, file)), { recursive: true });
    const text = await readFile(join(installed, file), 'utf8');
    await writeFile(join(dir, file), opts.unpatched.includes(file) ? unpatch(text, patch, file) : text);
  }
  return dir;
}

describe('checkPostgresPatch', () => {
  it('finds the installed postgres.js and passes on it (npm ci applied the patch)', () => {
    expect(postgresPackageDir()).toMatch(/node_modules[/\\]postgres$/);
    expect(() => checkPostgresPatch()).not.toThrow();
  });

  it('refuses an unpatched copy, naming the files, the version and the command that applies the patch', async () => {
    const dir = await copyOfPostgres(join(scratch, 'unpatched'), { unpatched: POSTGRES_PATCHED_FILES });
    // The copy really is the original: none of the patch's lines is left.
    expect(await readFile(join(dir, 'src/connection.js'), 'utf8')).not.toContain('Chime patch');
    let thrown: unknown;
    try {
      checkPostgresPatch(dir);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(PostgresPatchError);
    const message = (thrown as Error).message;
    for (const file of POSTGRES_PATCHED_FILES) expect(message).toContain(file);
    expect(message).toContain('3.4.9');
    expect(message).toContain(APPLY_PATCH_COMMAND);
  });

  it('refuses a copy where only the build Node runs is unpatched, and passes an intact copy', async () => {
    const partly = await copyOfPostgres(join(scratch, 'partly'), { unpatched: ['src/connection.js'] });
    expect(() => checkPostgresPatch(partly)).toThrow(/src\/connection\.js\)/);
    const intact = await copyOfPostgres(join(scratch, 'intact'), { unpatched: [] });
    expect(() => checkPostgresPatch(intact)).not.toThrow();
  });
});
