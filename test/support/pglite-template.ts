/**
 * One migrated PGlite database for every test that opens a fresh embedded one: the global setup migrates a database
 * once and dumps its data folder (PGlite's `dumpDataDir`, a tar); a test's fresh database starts from that tar
 * (`openEmbedded`'s `loadDataDir`) instead of running initdb and the migrations again, as PostgreSQL's template
 * databases do. The migrations themselves are tested on their own (test/store/migrations-expand, migration-shard) and
 * by every process test, whose service migrates its fresh database at start.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import type { TestProject } from 'vitest/node';
import { openEmbedded } from '../../src/store/embedded.ts';
import { migrateEmbedded } from '../../src/store/migrate.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The path of the migrated data folder's tar, or '' when the global setup did not make one. */
    pgliteTemplate: string;
  }
}

let template: Promise<Blob | undefined> | undefined;

/**
 * The migrated database's tar as a Blob for `openEmbedded(dir, { loadDataDir })`, read once per test process;
 * undefined outside a vitest run with this global setup (the caller then migrates an empty database).
 */
export function pgliteTemplate(): Promise<Blob | undefined> {
  template ??= (async () => {
    const path = inject('pgliteTemplate');
    return path ? new Blob([await readFile(path)]) : undefined;
  })();
  return template;
}

/** Vitest global setup: migrates an in-memory database and writes its data folder's tar; teardown deletes it. */
export async function setup(project: TestProject): Promise<() => Promise<void>> {
  const database = await openEmbedded('memory://');
  try {
    await migrateEmbedded(database.pg);
    const dump = await database.pg.dumpDataDir('none');
    const path = join(tmpdir(), `chime-pglite-template-${process.pid}.tar`);
    await writeFile(path, new Uint8Array(await dump.arrayBuffer()));
    project.provide('pgliteTemplate', path);
    return () => rm(path, { force: true });
  } finally {
    await database.close();
  }
}
