/**
 * The dispatcher's keyring (src/dispatch/keyring.ts) rotates the JWT signing key by itself: it caches the signer
 * for JWT_KEY_TTL_MS, but never past the moment its key reaches `jwtKeyMaxAgeMs`; the reload then retires the key and
 * signs with a new one. Both database targets, ManualClock.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createKeyring, JWT_KEY_TTL_MS } from '../../src/dispatch/keyring.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { ensureJwtKey, publicJwks, rotateJwtKey } from '../../src/store/jwt-keys.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { openTestStore, T0, type TestStore } from '../support/store.ts';

const MAX_AGE_MS = 7 * 86_400_000;

describe.each(DATABASE_TARGETS)('keyring JWT key rotation on $kind', (target) => {
  let store: TestStore;
  let clock: ManualClock;

  beforeAll(async () => {
    clock = new ManualClock(T0);
    store = await openTestStore(target, clock);
  });
  afterAll(async () => {
    await store?.close();
  });
  beforeEach(async () => {
    clock.set(T0);
    await store.database.db.execute(sql`delete from jwt_keys`);
  });

  it('signs with the current key, and with a new one from the moment the current one is jwtKeyMaxAgeMs old', async () => {
    const first = await ensureJwtKey(store.ctx);
    const keyring = createKeyring(store.ctx, { jwtKeyMaxAgeMs: MAX_AGE_MS });
    // Loaded 10 s before the key comes of age: cached until then, not for the full JWT_KEY_TTL_MS.
    clock.set(T0 + MAX_AGE_MS - 10_000);
    expect((await keyring.jwtSigner()).kid).toBe(first.kid);
    clock.advance(9_999);
    expect((await keyring.jwtSigner()).kid).toBe(first.kid);
    clock.advance(1);
    const second = await keyring.jwtSigner();
    expect(second.kid).not.toBe(first.kid);
    expect((await publicJwks(store.ctx)).keys.map((k) => k.kid)).toEqual([second.kid, first.kid]);
    expect((await ensureJwtKey(store.ctx)).kid).toBe(second.kid);
  });

  it('picks up a rotation made elsewhere within JWT_KEY_TTL_MS', async () => {
    const keyring = createKeyring(store.ctx, { jwtKeyMaxAgeMs: MAX_AGE_MS });
    const first = await keyring.jwtSigner();
    const rotated = await rotateJwtKey(store.ctx); // e.g. `chime keys rotate-jwt`, or another dispatcher
    clock.advance(JWT_KEY_TTL_MS - 1);
    expect((await keyring.jwtSigner()).kid).toBe(first.kid); // cached
    clock.advance(1);
    expect((await keyring.jwtSigner()).kid).toBe(rotated.kid);
  });

  it('without options, keeps a key for the default 30 days', async () => {
    const keyring = createKeyring(store.ctx);
    const first = await keyring.jwtSigner();
    clock.advance(29 * 86_400_000);
    expect((await keyring.jwtSigner()).kid).toBe(first.kid);
    clock.advance(86_400_000);
    expect((await keyring.jwtSigner()).kid).not.toBe(first.kid);
  });
});
