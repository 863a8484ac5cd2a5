/**
 * A Chime-Signature signer on node:crypto, for the Node dispatcher's hot path. The tokens are the same as
 * `createJwtSigner` (sign.ts, through jose) makes: a JWS Compact Serialization (RFC 7515 §7.1) of the JWT claims
 * (RFC 7519) with `alg: EdDSA` over Ed25519 (RFC 8037), `kid` and `typ: JWT` in the protected header.
 * jose signs through WebCrypto, an asynchronous job per token on the thread pool: profiling the drain benchmark put
 * it at ~19 % of the dispatcher's CPU. `crypto.sign` on a KeyObject imported once is synchronous and several times
 * cheaper. Not for Workers (sign.ts is); tests verify these tokens with jose's `jwtVerify` against the JWKS.
 */
import { createHash, createPrivateKey, sign, type JsonWebKey, type KeyObject } from 'node:crypto';
import { JWT_TTL_SECONDS, type SigningJwk } from '../store/jwt-keys.ts';
import { JWT_ISSUER, type JwtSigner } from './sign.ts';

/**
 * Imports the key once (as a KeyObject) and returns a signer of tokens with claims iss, sub, iat, exp, jti and
 * body = base64url(SHA-256(body)).
 * @throws when the key is not an Ed25519 private JWK
 */
export async function createNodeJwtSigner(key: SigningJwk): Promise<JwtSigner> {
  if (key.alg !== 'EdDSA') throw new Error(`unsupported JWT algorithm ${key.alg}: only EdDSA (Ed25519)`);
  const privateKey: KeyObject = createPrivateKey({ key: key.privateJwk as JsonWebKey, format: 'jwk' });
  const header = Buffer.from(JSON.stringify({ alg: key.alg, kid: key.kid, typ: 'JWT' })).toString('base64url');
  return {
    kid: key.kid,
    async sign({ sub, jti, body, iatSec }) {
      const claims = {
        body: createHash('sha256').update(body).digest('base64url'),
        iss: JWT_ISSUER,
        sub,
        iat: iatSec,
        exp: iatSec + JWT_TTL_SECONDS,
        jti,
      };
      const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
      return `${input}.${sign(null, Buffer.from(input), privateKey).toString('base64url')}`;
    },
  };
}
