/**
 * Start-up refuses an unpatched postgres.js (issue #28, point 8): an install that skipped the `postinstall`
 * (`--ignore-scripts`, or src/store/patches not copied yet when `npm ci` ran, where patch-package says "No patch files
 * found" and exits 0) ran silently without the fix. The detector passes on this install (patched by `npm ci`) and
 * names the files, the version and the command on a copy with the patch taken out again.
 */
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { errorChain, query } from '../../src/store/db.ts';
import { openPostgres } from '../../src/store/postgres.ts';
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

// porsager/postgres#1192: the types query every new connection sends first (fetch_types) had its failure dropped as an
// unhandled rejection, which ends a Node process. Made to fail for sure: a role that may not read pg_type, in a
// database of its own (a catalog's grants are per database).
describe.runIf(!!process.env.TEST_DATABASE_URL)('a connection whose types query fails (porsager/postgres#1192)', () => {
  it('fails its first statement with that error, serves the next, and no rejection goes unhandled', async () => {
    const adminUrl = process.env.TEST_DATABASE_URL!;
    const suffix = `${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    const [dbName, role] = [`chime_notypes_${suffix}`, `chime_notypes_${suffix}`];
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    const url = new URL(adminUrl);
    url.pathname = `/${dbName}`;
    url.username = role;
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    let client: ReturnType<typeof openPostgres> | undefined;
    try {
      await admin.unsafe(`create database ${dbName}`);
      await admin.unsafe(`create role ${role} login`);
      const ownerUrl = new URL(adminUrl);
      ownerUrl.pathname = `/${dbName}`;
      const owner = postgres(ownerUrl.toString(), { max: 1, onnotice: () => {} });
      await owner.unsafe('revoke select on pg_catalog.pg_type from public');
      await owner.end();

      client = openPostgres(url.toString());
      // postgres.js rejects the statement waiting for the connection with the types query's error (errored()).
      const first = await query(client.db, sql`select 1 as one`).catch((err: unknown) => err);
      expect(errorChain(first).map((e) => e.code)).toContain('42501');
      expect(await query<{ one: number }>(client.db, sql`select 1 as one`)).toEqual([{ one: 1 }]);
      // Unhandled rejections are reported once the microtask queue is empty: after a turn of the event loop.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await client?.close();
      await admin.unsafe(`drop database if exists ${dbName} with (force)`);
      await admin.unsafe(`drop role if exists ${role}`);
      await admin.end();
    }
  });
});
