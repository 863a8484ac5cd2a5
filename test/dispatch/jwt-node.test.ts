/**
 * The node:crypto Chime-Signature signer makes the same tokens as the jose one: both verify with jose's jwtVerify
 * against the published public key, with the same protected header and claims.
 */
import { createHash } from 'node:crypto';
import { calculateJwkThumbprint, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { createNodeJwtSigner } from '../../src/dispatch/jwt-node.ts';
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
    const token = await (await createNodeJwtSigner(other.key)).sign({ sub: 's', jti: 'j', body: '', iatSec: Math.floor(Date.now() / 1000) });
    await expect(jwtVerify(token, await importJWK(one.publicJwk, 'EdDSA'))).rejects.toThrow(/signature/);
  });
});
