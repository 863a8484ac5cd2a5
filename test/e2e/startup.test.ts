/**
 * Start-up with a bad CHIME_ENCRYPTION_KEY fails at once, clearly, and changes nothing (API.md "Start-up and
 * configuration"; docs/design.md invariant 7), with the real process on every database target: a valid key other than
 * the one the data was sealed with (PGlite: a replaced key file in CHIME_DATA_DIR, or the variable overriding it;
 * PostgreSQL: the variable), a key that is not base64, one of the wrong length, and none at all with DATABASE_URL.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_FILE } from '../../src/runtime.ts';
import { apiClient, createTestTenant, type TestTenant } from '../support/api.ts';
import { startChime } from '../support/chime-process.ts';
import { type ChimeRun, runChime } from '../support/chime-run.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';

/** A valid key (32 bytes, base64) other than the one the data was sealed with. */
const OTHER_KEY = Buffer.alloc(32, 42).toString('base64');

/** Asserts a start-up refused with exit code 1 and one clear line on stderr (no stack trace). */
function expectRefused(run: ChimeRun, message: RegExp): void {
  const what = `exit ${run.code} (${run.signal}); stderr:\n${run.stderr}`;
  expect(run.code, what).toBe(1);
  expect(run.stderr, what).toMatch(message);
  expect(run.stderr, what).toMatch(/^chime: configuration error: /m);
  expect(run.stderr, what).not.toMatch(/^\s+at /m);
}

describe.each(DATABASE_TARGETS)('start-up with a bad encryption key on $kind', (target) => {
  let db: FreshDatabase;
  let tenant: TestTenant;
  /** The JWKS as first published: the refused start-ups must not rotate or add keys. */
  let kids: string[];
  /** The environment the data was first used with (PGlite: the key file is generated; PostgreSQL: the test key). */
  let goodEnv: Record<string, string>;
  /** `chime serve`, which must exit by itself, and soon (a hung start-up fails the test with its output). */
  const serve = (env: Record<string, string>) => runChime({ ...env, PORT: '0' }, ['serve'], 25_000);

  beforeAll(async () => {
    db = await freshDatabase(target);
    goodEnv = db.env;
    const chime = await startChime(goodEnv);
    try {
      tenant = await createTestTenant(chime.url, 'sealed'); // its signing secret is sealed under the first key
      kids = (await apiClient(chime.url, null).get('/.well-known/jwks.json')).body.keys.map((k: { kid: string }) => k.kid);
      expect(kids).toHaveLength(1);
    } finally {
      expect(await chime.stop()).toBe(0);
    }
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('refuses another valid CHIME_ENCRYPTION_KEY, saying it does not match the data', async () => {
    const run = await serve({ ...goodEnv, CHIME_ENCRYPTION_KEY: OTHER_KEY });
    expectRefused(run, /CHIME_ENCRYPTION_KEY does not match the data/);
  });

  if (target.kind === 'pglite') {
    it('refuses a replaced key file in CHIME_DATA_DIR the same way', async () => {
      const file = join(db.dataDir!, KEY_FILE);
      const original = await readFile(file, 'utf8');
      expect(original.trim()).not.toBe(OTHER_KEY);
      await writeFile(file, `${OTHER_KEY}\n`);
      try {
        const run = await serve(goodEnv);
        expectRefused(run, /CHIME_ENCRYPTION_KEY does not match the data.*key file in CHIME_DATA_DIR/);
      } finally {
        await writeFile(file, original);
      }
    });

    it('refuses a key file that is not a key, naming the file', async () => {
      const file = join(db.dataDir!, KEY_FILE);
      const original = await readFile(file, 'utf8');
      await writeFile(file, 'this is not a key\n');
      try {
        expectRefused(await serve(goodEnv), new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: not base64`));
      } finally {
        await writeFile(file, original);
      }
    });
  }

  it('refuses a CHIME_ENCRYPTION_KEY that is not base64', async () => {
    expectRefused(await serve({ ...goodEnv, CHIME_ENCRYPTION_KEY: 'not*base64!' }), /CHIME_ENCRYPTION_KEY: not base64/);
  });

  it('refuses a CHIME_ENCRYPTION_KEY of the wrong length', async () => {
    const short = Buffer.alloc(16, 1).toString('base64');
    expectRefused(await serve({ ...goodEnv, CHIME_ENCRYPTION_KEY: short }), /CHIME_ENCRYPTION_KEY: must decode to 32 bytes, got 16/);
  });

  it('still starts with the right key afterwards, with the data as it was', async () => {
    // The refused start-ups rotated, re-keyed or locked nothing.
    const chime = await startChime(goodEnv);
    try {
      expect((await apiClient(chime.url, null).get('/.well-known/jwks.json')).body.keys.map((k: { kid: string }) => k.kid)).toEqual(kids);
      const me = await apiClient(chime.url, tenant.apiKey).get('/v1/tenant');
      expect(me.status).toBe(200);
    } finally {
      expect(await chime.stop()).toBe(0);
    }
  });
});

describe('start-up without an encryption key', () => {
  it('refuses DATABASE_URL without CHIME_ENCRYPTION_KEY before connecting', async () => {
    // Port 1 on loopback: nothing listens; the configuration check must come first.
    const run = await runChime({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', PORT: '0' }, ['serve']);
    expectRefused(run, /CHIME_ENCRYPTION_KEY: required with DATABASE_URL/);
  });
});
