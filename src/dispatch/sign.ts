/**
 * Callback signatures.
 * - Standard Webhooks (https://www.standardwebhooks.com, spec "Verifying webhooks"): `webhook-signature` is
 *   `v1,<base64 HMAC-SHA256(key, "${webhook-id}.${webhook-timestamp}.${body}")>`, key = base64-decoded part of the
 *   `whsec_` secret; several signatures are space-separated (secret rotation).
 * - `Chime-Signature`: a JWT (RFC 7519) signed with the service's EdDSA key through jose, `kid` in the header,
 *   claims iss, sub (the callback URL), aud (`callback.jwtAudience`, when set), iat, exp, jti,
 *   body = base64url(SHA-256(body)).
 */
import { createHash, createHmac } from 'node:crypto';
import { type CryptoKey, importJWK, type KeyObject, SignJWT } from 'jose';
import { SIGNING_SECRET_PREFIX } from '../store/credentials.ts';
import { JWT_TTL_SECONDS, type SigningJwk } from '../store/jwt-keys.ts';

/** The issuer claim of Chime-Signature tokens. */
export const JWT_ISSUER = 'chime';

/**
 * The `webhook-signature` header value for one message, one `v1,` signature per secret.
 * @param secrets `whsec_<base64>` secrets, newest first
 * @param timestampSec the `webhook-timestamp` value (Unix seconds)
 */
export function standardWebhookSignature(secrets: readonly string[], msgId: string, timestampSec: number, body: string): string {
  const content = `${msgId}.${timestampSec}.${body}`;
  return secrets
    .map((s) => {
      const key = Buffer.from(s.startsWith(SIGNING_SECRET_PREFIX) ? s.slice(SIGNING_SECRET_PREFIX.length) : s, 'base64');
      return `v1,${createHmac('sha256', key).update(content).digest('base64')}`;
    })
    .join(' ');
}

/** Signs Chime-Signature JWTs with one key. */
export type JwtSigner = {
  kid: string;
  /**
   * @param iatSec issued-at, Unix seconds
   * @param aud the `aud` claim (RFC 7519 §4.1.3), a single string; absent: no `aud`
   */
  sign(claims: { sub: string; jti: string; body: string; iatSec: number; aud?: string }): Promise<string>;
};

/** Imports a signing key once, for many tokens. */
export async function createJwtSigner(key: SigningJwk): Promise<JwtSigner> {
  const privateKey: CryptoKey | KeyObject | Uint8Array = await importJWK(key.privateJwk, key.alg);
  return {
    kid: key.kid,
    sign: ({ sub, jti, body, iatSec, aud }) => {
      const jwt = new SignJWT({ body: createHash('sha256').update(body).digest('base64url') })
        .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
        .setIssuer(JWT_ISSUER)
        .setSubject(sub);
      // After `sub`: the claims' order is the Node signer's (jwt-node.ts), which makes the very same token.
      if (aud !== undefined) jwt.setAudience(aud);
      return jwt
        .setIssuedAt(iatSec)
        .setExpirationTime(iatSec + JWT_TTL_SECONDS)
        .setJti(jti)
        .sign(privateKey);
    },
  };
}
