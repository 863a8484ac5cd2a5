/**
 * The JWT signing keys (src/store/jwt-keys.ts) on every database target, with a ManualClock: one active key,
 * rotated once it reaches its maximum age (or by hand), the retired key published for JWKS_GRACE_MS and then
 * dropped from the JWKS, racing rotations leaving one active key, and a wrong encryption key refused by name.
 */

import { sql } from 'drizzle-orm';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { JWT_KEY_TTL_MS } from '../../src/dispatch/keyring.ts';
import { createJwtSigner, JWT_ISSUER } from '../../src/dispatch/sign.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { CipherError, createCipher } from '../../src/store/cipher.ts';
import type { StoreContext } from '../../src/store/context.ts';
import { query } from '../../src/store/db.ts';
import { ensureJwtKey, JWKS_GRACE_MS, JWT_TTL_SECONDS, publicJwks, rotateJwtKey, type SigningJwk } from '../../src/store/jwt-keys.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { openTestStore, T0, type TestStore } from '../support/store.ts';

const DAY_MS = 86_400_000;
const MAX_AGE_MS = 30 * DAY_MS;

describe.each(DATABASE_TARGETS)('JWT signing keys on $kind', (target) => {
  let store: TestStore;
  let clock: ManualClock;
  let ctx: StoreContext;

  beforeAll(async () => {
    clock = new ManualClock(T0);
    store = await openTestStore(target, clock);
    ctx = store.ctx;
  });
  afterAll(async () => {
    await store?.close();
  });
  beforeEach(async () => {
    clock.set(T0);
    await store.database.db.execute(sql`delete from jwt_keys`);
  });

  const kids = async () => (await publicJwks(ctx)).keys.map((k) => k.kid);
  const activeKids = async () =>
    (await query<{ kid: string }>(store.database.db, sql`select kid from jwt_keys where retired_at is null`)).map((r) => r.kid);
  /** A Chime-Signature token signed with `key` now (by the manual clock). */
  const tokenOf = async (key: SigningJwk) =>
    (await createJwtSigner(key)).sign({
      sub: 'https://receiver.example/cb',
      jti: 'run-1',
      body: '{}',
      iatSec: Math.floor(clock.now() / 1000),
    });
  /** Verifies `token` against the JWKS as published now. */
  const verifyNow = async (token: string) =>
    jwtVerify(token, createLocalJWKSet(await publicJwks(ctx)), { issuer: JWT_ISSUER, currentDate: new Date(clock.now()) });

  it('creates one key on first use and keeps signing with it', async () => {
    const a = await ensureJwtKey(ctx);
    expect(a).toMatchObject({ alg: 'EdDSA', createdAtMs: T0 });
    expect(a.privateJwk.d).toBeTypeOf('string');
    clock.advance(365 * DAY_MS); // without a maximum age, age alone changes nothing
    expect((await ensureJwtKey(ctx)).kid).toBe(a.kid);
    expect(await kids()).toEqual([a.kid]);
    const published = (await publicJwks(ctx)).keys[0]!;
    expect(published).toMatchObject({ kid: a.kid, alg: 'EdDSA', use: 'sig', kty: 'OKP', crv: 'Ed25519' });
    expect(published.d).toBeUndefined(); // never the private half
  });

  it('rotates the key once it is maxAgeMs old, not a millisecond before', async () => {
    const a = await ensureJwtKey(ctx, { maxAgeMs: MAX_AGE_MS });
    clock.advance(MAX_AGE_MS - 1);
    expect((await ensureJwtKey(ctx, { maxAgeMs: MAX_AGE_MS })).kid).toBe(a.kid);
    clock.advance(1);
    const b = await ensureJwtKey(ctx, { maxAgeMs: MAX_AGE_MS });
    expect(b.kid).not.toBe(a.kid);
    expect(b.createdAtMs).toBe(T0 + MAX_AGE_MS);
    expect(await activeKids()).toEqual([b.kid]);
    // The new key is used from now on, by every caller.
    expect((await ensureJwtKey(ctx, { maxAgeMs: MAX_AGE_MS })).kid).toBe(b.kid);
    expect((await ensureJwtKey(ctx)).kid).toBe(b.kid);
  });

  it('keeps the retired key in the JWKS for JWKS_GRACE_MS, so tokens it signed still verify, then drops it', async () => {
    // The grace covers a token signed at the rotation, and one signed by a dispatcher that still caches the old key.
    expect(JWKS_GRACE_MS).toBeGreaterThanOrEqual(JWT_TTL_SECONDS * 1000 + JWT_KEY_TTL_MS);
    const a = await ensureJwtKey(ctx, { maxAgeMs: MAX_AGE_MS });
    clock.advance(MAX_AGE_MS);
    const oldToken = await tokenOf(a); // signed at the last moment the old key was current
    const b = await ensureJwtKey(ctx, { maxAgeMs: MAX_AGE_MS });
    const newToken = await tokenOf(b);
    expect(await kids()).toEqual([b.kid, a.kid]);
    expect((await verifyNow(oldToken)).protectedHeader.kid).toBe(a.kid);
    expect((await verifyNow(newToken)).protectedHeader.kid).toBe(b.kid);

    clock.advance(JWKS_GRACE_MS - 1);
    expect(await kids()).toEqual([b.kid, a.kid]);
    clock.advance(1);
    expect(await kids()).toEqual([b.kid]);
    // The old key's tokens have all expired by now anyway; the new key's keep verifying.
    await expect(verifyNow(oldToken)).rejects.toThrow();
    expect((await verifyNow(await tokenOf(b))).protectedHeader.kid).toBe(b.kid);
  });

  it('rotateJwtKey rotates at once, whatever the age, and the old key stays published', async () => {
    const a = await ensureJwtKey(ctx);
    clock.advance(1000);
    const b = await rotateJwtKey(ctx);
    expect(b.kid).not.toBe(a.kid);
    expect(await activeKids()).toEqual([b.kid]);
    expect(await kids()).toEqual([b.kid, a.kid]);
    expect((await ensureJwtKey(ctx, { maxAgeMs: MAX_AGE_MS })).kid).toBe(b.kid);
  });

  it('several dispatchers rotating at once leave one active key, and all of them sign with it', async () => {
    const a = await ensureJwtKey(ctx, { maxAgeMs: MAX_AGE_MS });
    clock.advance(MAX_AGE_MS + 1);
    // On PostgreSQL, each racer has its own connection pool, as separate processes would.
    const contexts: StoreContext[] =
      target.kind === 'postgres'
        ? Array.from({ length: 6 }, () => ({ ...ctx, db: store.openAnother()!.db }))
        : Array.from({ length: 6 }, () => ctx);
    const got = await Promise.all(contexts.map((c) => ensureJwtKey(c, { maxAgeMs: MAX_AGE_MS })));
    const rotatedTo = new Set(got.map((k) => k.kid));
    expect(rotatedTo.size).toBe(1);
    expect(rotatedTo.has(a.kid)).toBe(false);
    expect(await activeKids()).toEqual([...rotatedTo]);
    expect(await kids()).toEqual([...rotatedTo, a.kid]);
  });

  it('several processes starting on an empty database create one key', async () => {
    const contexts: StoreContext[] =
      target.kind === 'postgres'
        ? Array.from({ length: 6 }, () => ({ ...ctx, db: store.openAnother()!.db }))
        : Array.from({ length: 6 }, () => ctx);
    const got = await Promise.all(contexts.map((c) => ensureJwtKey(c)));
    expect(new Set(got.map((k) => k.kid)).size).toBe(1);
    expect(await kids()).toHaveLength(1);
  });

  it('a wrong encryption key fails with CHIME_ENCRYPTION_KEY named, and rotates nothing', async () => {
    const a = await ensureJwtKey(ctx);
    const wrong: StoreContext = { ...ctx, cipher: await createCipher(new Uint8Array(32).fill(9)) };
    clock.advance(MAX_AGE_MS);
    for (const attempt of [() => ensureJwtKey(wrong), () => ensureJwtKey(wrong, { maxAgeMs: MAX_AGE_MS }), () => rotateJwtKey(wrong)]) {
      const err = await attempt().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CipherError);
      expect((err as Error).message).toMatch(/^CHIME_ENCRYPTION_KEY does not match the data/);
    }
    expect(await activeKids()).toEqual([a.kid]);
    expect(await kids()).toEqual([a.kid]);
  });
});
