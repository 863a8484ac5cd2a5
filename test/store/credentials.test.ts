/**
 * Credentials (src/store/credentials.ts): SHA-256 from @noble/hashes agrees with the FIPS 180-4 test vectors and with
 * node:crypto on keys and on non-ASCII text (idempotency bodies are hashed too); a generated API key's stored hash is
 * the hash of the key, and its lookup names the tenant's bucket. Authentication (src/store/api-keys.ts) finds a key
 * in the bucket it names, and a key made before keys named their bucket through the lookup in every bucket.
 */
import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardOf } from '../../src/domain/shard.ts';
import { authenticateApiKey, createApiKey } from '../../src/store/api-keys.ts';
import { API_KEY_LOOKUP_LENGTH, apiKeyPrefix, apiKeyShard, generateApiKey, sha256Hex } from '../../src/store/credentials.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { createTestTenantIn, openTestStore, type TestStore } from '../support/store.ts';

describe('sha256Hex', () => {
  it('matches the FIPS 180-4 examples', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('agrees with node:crypto on keys and on UTF-8 text', () => {
    for (const s of [`chk_AAAAAAAAAAAA${'x'.repeat(43)}`, '{"name":"ünïcødé ✓ 😀"}', 'a'.repeat(1000)]) {
      expect(sha256Hex(s)).toBe(createHash('sha256').update(s, 'utf8').digest('hex'));
    }
  });

  it('a generated API key is stored as its hash, and found by its prefix', async () => {
    const { key, prefix, hash } = await generateApiKey(5);
    expect(hash).toBe(createHash('sha256').update(key).digest('hex'));
    expect(apiKeyPrefix(key)).toBe(prefix);
  });
});

describe('API keys name their bucket', () => {
  it('in the first character of the lookup, for every bucket, and nothing else is fixed', async () => {
    for (let shard = 0; shard < 64; shard++) {
      const seen = new Set<string>();
      for (let i = 0; i < 8; i++) {
        const { key, prefix } = await generateApiKey(shard);
        expect(apiKeyShard(key)).toBe(shard);
        expect(prefix).toHaveLength(API_KEY_LOOKUP_LENGTH);
        seen.add(prefix.slice(5));
      }
      expect(seen.size).toBe(8);
    }
    await expect(generateApiKey(64)).rejects.toThrow(RangeError);
    await expect(generateApiKey(-1)).rejects.toThrow(RangeError);
    expect(apiKeyShard('whsec_abc')).toBeNull();
  });
});

describe.each(DATABASE_TARGETS)('API key authentication on $kind', (target) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(target);
  });
  afterAll(() => store?.close());

  it('finds a key in its bucket, and a key from before the bucket rule anywhere', async () => {
    const tenant = await createTestTenantIn(store.ctx, 'keys');
    const made = await createApiKey(store.ctx, tenant, { name: 'new', expiresAt: null });
    expect(apiKeyShard(made.key)).toBe(shardOf(tenant));
    expect(await authenticateApiKey(store.ctx, made.key)).toEqual({
      tenantId: tenant,
      keyId: made.keyId,
      prefix: made.prefix,
      scopes: ['*'],
      // Read with the key, in the same statement: the tenant's status and quota overrides.
      tenantStatus: 'active',
      quotas: {},
    });

    // An older key: its lookup's first character names another bucket than its tenant's.
    const legacy = await createApiKey(store.ctx, tenant, { name: 'legacy', expiresAt: null });
    const other = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'[(shardOf(tenant) + 1) % 64]!;
    const key = `${legacy.key.slice(0, 4)}${other}${legacy.key.slice(5)}`;
    await store.database.db.execute(
      sql`update api_keys set prefix = ${key.slice(0, API_KEY_LOOKUP_LENGTH)}, key_hash = ${sha256Hex(key)} where id = ${legacy.keyId}`,
    );
    expect(apiKeyShard(key)).not.toBe(shardOf(tenant));
    expect(await authenticateApiKey(store.ctx, key)).toEqual({
      tenantId: tenant,
      keyId: legacy.keyId,
      prefix: key.slice(0, API_KEY_LOOKUP_LENGTH),
      scopes: ['*'],
      tenantStatus: 'active',
      quotas: {},
    });
    expect(await authenticateApiKey(store.ctx, `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`)).toBeNull();
  });
});
