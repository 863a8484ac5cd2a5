/**
 * The node:crypto Chime-Signature signer makes the same tokens as the jose one: both verify with jose's jwtVerify
 * against the published public key, with the same protected header and claims; its two Ed25519 backends (libsodium
 * through sodium-native, node:crypto) make byte-identical tokens, Ed25519 being deterministic (RFC 8032 §5.1.6).
 */
import { createHash } from 'node:crypto';
import { calculateJwkThumbprint, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { createNodeJwtSigner, defaultEd25519Backend } from '../../src/dispatch/jwt-node.ts';
import { createJwtSigner, JWT_ISSUER } from '../../src/dispatch/sign.ts';
import { JWT_TTL_SECONDS, type SigningJwk } from '../../src/store/jwt-keys.ts';

async function newKey(): Promise<{ key: SigningJwk; publicJwk: Awaited<ReturnType<typeof exportJWK>> }> {
  const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return { key: { kid, alg: 'EdDSA', privateJwk: await exportJWK(privateKey), createdAtMs: 0 }, publicJwk };
}

describe('createNodeJwtSigner', () => {
  it('signs tokens that jose verifies, with the same header and claims as the jose signer', async () => {
    const { key, publicJwk } = await newKey();
    const claims = { sub: 'https://example.com/hook?x=1', jti: 'run-1.2', body: '{"a":"ü"}', iatSec: Math.floor(Date.now() / 1000) };
    const fromNode = await (await createNodeJwtSigner(key)).sign(claims);
    const fromJose = await (await createJwtSigner(key)).sign(claims);
    const verifyKey = await importJWK(publicJwk, 'EdDSA');
    const a = await jwtVerify(fromNode, verifyKey, { issuer: JWT_ISSUER, subject: claims.sub });
    const b = await jwtVerify(fromJose, verifyKey, { issuer: JWT_ISSUER, subject: claims.sub });
    expect(a.payload).toEqual(b.payload);
    expect(a.payload).toMatchObject({
      iat: claims.iatSec,
      exp: claims.iatSec + JWT_TTL_SECONDS,
      jti: claims.jti,
      body: createHash('sha256').update(claims.body).digest('base64url'),
    });
    expect(decodeProtectedHeader(fromNode)).toEqual(decodeProtectedHeader(fromJose));
    expect(decodeProtectedHeader(fromNode)).toEqual({ alg: 'EdDSA', kid: key.kid, typ: 'JWT' });
  });

  it("a token signed with another key does not verify against this key's public half", async () => {
    const one = await newKey();
    const other = await newKey();
    const token = await (await createNodeJwtSigner(other.key)).sign({
      sub: 's',
      jti: 'j',
      body: '',
      iatSec: Math.floor(Date.now() / 1000),
    });
    await expect(jwtVerify(token, await importJWK(one.publicJwk, 'EdDSA'))).rejects.toThrow(/signature/);
  });

  it('libsodium and node:crypto make the very same token, and libsodium (the faster) is the default here', async () => {
    const { key, publicJwk } = await newKey();
    const claims = { sub: 'https://example.com/h', jti: 'run-9.1', body: '{"n":1}', iatSec: 1_800_000_000 };
    const viaSodium = await (await createNodeJwtSigner(key, 'sodium')).sign(claims);
    const viaNode = await (await createNodeJwtSigner(key, 'node')).sign(claims);
    expect(viaSodium).toBe(viaNode);
    await expect(
      jwtVerify(viaSodium, await importJWK(publicJwk, 'EdDSA'), { currentDate: new Date(claims.iatSec * 1000) }),
    ).resolves.toBeTruthy();
    // sodium-native is an optional dependency with prebuilt binaries for this platform: if it stopped loading, the
    // dispatcher would silently sign at about half the speed.
    expect(defaultEd25519Backend()).toBe('sodium');
  });
});
