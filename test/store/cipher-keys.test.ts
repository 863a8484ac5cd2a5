/**
 * Several encryption keys (store/cipher.ts; API.md "Access control and audit"): `CHIME_ENCRYPTION_KEY` parsed into
 * keys with ids (one may be bare), the first sealing, every one opening; a value sealed under a key not configured is
 * refused naming the key; and the forms `v1.` (the key without an id, every value sealed before ids) and `v2.<id>.`.
 */
import { describe, expect, it } from 'vitest';
import { CipherError, createCipher, parseEncryptionKeys, sealedKeyId } from '../../src/store/cipher.ts';

const b64 = (fill: number) => Buffer.alloc(32, fill).toString('base64');

describe('encryption keys', () => {
  it('parses a bare key, ids, and a mix; refuses a bad entry naming it', () => {
    expect(parseEncryptionKeys(b64(1), 'CHIME_ENCRYPTION_KEY')).toEqual([{ id: null, key: new Uint8Array(32).fill(1) }]);
    expect(parseEncryptionKeys(`k2:${b64(2)},${b64(1)}`, 'X').map((k) => k.id)).toEqual(['k2', null]);
    expect(() => parseEncryptionKeys(`k2:${b64(2)},k2:${b64(3)}`, 'X')).toThrow('X: key "k2" is given twice');
    expect(() => parseEncryptionKeys(`${b64(2)},${b64(3)}`, 'X')).toThrow('X: the key without an id is given twice');
    expect(() => parseEncryptionKeys(`k2:${b64(2)},bad id:${b64(3)}`, 'X')).toThrow('X (entry 2): a key id is 1..32');
    expect(() => parseEncryptionKeys(`k2:${Buffer.alloc(16).toString('base64')}`, 'X')).toThrow('X: must decode to 32 bytes, got 16');
    expect(() => parseEncryptionKeys('k2:not*base64', 'X')).toThrow('X: not base64');
  });

  it('seals under the first key and opens under any configured one; v1 stays the form of the key without an id', async () => {
    const old = await createCipher(parseEncryptionKeys(b64(1), 'X'));
    const legacy = await old.seal('token');
    expect(legacy).toMatch(/^v1\.[^.]+\.[^.]+$/);
    expect(sealedKeyId(legacy)).toBeNull();

    const rotating = await createCipher(parseEncryptionKeys(`k2:${b64(2)},${b64(1)}`, 'X'));
    expect(rotating.keyIds).toEqual(['k2', null]);
    expect(await rotating.open(legacy)).toBe('token');
    const fresh = await rotating.seal('token');
    expect(fresh).toMatch(/^v2\.k2\.[^.]+\.[^.]+$/);
    expect(sealedKeyId(fresh)).toBe('k2');
    expect(await rotating.open(fresh)).toBe('token');

    const rotated = await createCipher(parseEncryptionKeys(`k2:${b64(2)}`, 'X'));
    expect(await rotated.open(fresh)).toBe('token');
    await expect(rotated.open(legacy)).rejects.toThrow(/sealed under the key without an id, which is not configured/);
    await expect(old.open(fresh)).rejects.toThrow(/sealed under key "k2", which is not configured/);
    // The same id with other bytes: refused as a wrong key, never mistaken for the right one.
    const impostor = await createCipher(parseEncryptionKeys(`k2:${b64(9)}`, 'X'));
    await expect(impostor.open(fresh)).rejects.toBeInstanceOf(CipherError);
    await expect(impostor.open(`${fresh}x`)).rejects.toBeInstanceOf(CipherError);
  });
});
