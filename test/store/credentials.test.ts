/**
 * Credential hashing (src/store/credentials.ts): SHA-256 from @noble/hashes agrees with the FIPS 180-4 test vectors
 * and with node:crypto on keys and on non-ASCII text (idempotency bodies are hashed too); a generated API key's
 * stored hash is the hash of the key.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { apiKeyPrefix, generateApiKey, sha256Hex } from '../../src/store/credentials.ts';

describe('sha256Hex', () => {
  it('matches the FIPS 180-4 examples', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('agrees with node:crypto on keys and on UTF-8 text', () => {
    for (const s of ['chk_AAAAAAAAAAAA' + 'x'.repeat(43), '{"name":"ünïcødé ✓ 😀"}', 'a'.repeat(1000)]) {
      expect(sha256Hex(s)).toBe(createHash('sha256').update(s, 'utf8').digest('hex'));
    }
  });

  it('a generated API key is stored as its hash, and found by its prefix', async () => {
    const { key, prefix, hash } = await generateApiKey();
    expect(hash).toBe(createHash('sha256').update(key).digest('hex'));
    expect(apiKeyPrefix(key)).toBe(prefix);
  });
});
