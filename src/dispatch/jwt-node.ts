/**
 * A Chime-Signature signer for the Node dispatcher's hot path. The tokens are the same as `createJwtSigner` (sign.ts,
 * through jose) makes: a JWS Compact Serialization (RFC 7515 §7.1) of the JWT claims (RFC 7519) with `alg: EdDSA`
 * over Ed25519 (RFC 8037), `kid` and `typ: JWT` in the protected header. Ed25519 signatures are deterministic
 * (RFC 8032 §5.1.6), so every backend makes the very same token for the same key and claims.
 *
 * Signing is the largest single cost of a callback, so the fastest Ed25519 available is used:
 * - libsodium through `sodium-native` (an optional dependency with prebuilt binaries), the fastest;
 * - otherwise `crypto.sign` of node:crypto on a KeyObject imported once (OpenSSL 3.0's Ed25519 is generic C).
 * jose signs through WebCrypto, an asynchronous job per token on the thread pool: dearer again (test/bench/README.md).
 * Not for Workers (sign.ts is); tests verify these tokens with jose's `jwtVerify` against the JWKS.
 */
import { createHash, createPrivateKey, type JsonWebKey, type KeyObject, sign } from 'node:crypto';
import { createRequire } from 'node:module';
import { JWT_TTL_SECONDS, type SigningJwk } from '../store/jwt-keys.ts';
import { JWT_ISSUER, type JwtSigner } from './sign.ts';

/** Which library makes the Ed25519 signatures. */
export type Ed25519Backend = 'sodium' | 'node';

/** The part of sodium-native's API used here (libsodium's crypto_sign_*, https://doc.libsodium.org). */
type Sodium = {
  crypto_sign_BYTES: number;
  crypto_sign_PUBLICKEYBYTES: number;
  crypto_sign_SECRETKEYBYTES: number;
  crypto_sign_seed_keypair(pk: Buffer, sk: Buffer, seed: Buffer): void;
  crypto_sign_detached(sig: Buffer, message: Buffer, sk: Buffer): void;
};

let sodium: Sodium | null | undefined;
/** sodium-native when it is installed and loads on this platform, else null (looked up once). */
function loadSodium(): Sodium | null {
  if (sodium === undefined) {
    try {
      sodium = createRequire(import.meta.url)('sodium-native') as Sodium;
    } catch {
      sodium = null;
    }
  }
  return sodium;
}

/** The backend `createNodeJwtSigner` uses by default: 'sodium' when sodium-native loads, else 'node'. */
export function defaultEd25519Backend(): Ed25519Backend {
  return loadSodium() ? 'sodium' : 'node';
}

/**
 * A function that signs messages with the Ed25519 private JWK (RFC 8037 §2: `d` is the 32-byte seed).
 * @throws when `backend` is 'sodium' and sodium-native cannot be loaded, or the JWK is not an Ed25519 private key
 */
function ed25519Sign(privateJwk: JsonWebKey, backend: Ed25519Backend): (message: Buffer) => Buffer {
  // Imported for either backend: node:crypto checks that the JWK is an Ed25519 private key.
  const keyObject: KeyObject = createPrivateKey({ key: privateJwk, format: 'jwk' });
  if (backend === 'node') return (message) => sign(null, message, keyObject);
  const na = loadSodium();
  if (!na) throw new Error('sodium-native is not installed or does not load on this platform');
  const seed = Buffer.from(String(privateJwk.d), 'base64url');
  const pk = Buffer.alloc(na.crypto_sign_PUBLICKEYBYTES);
  const sk = Buffer.alloc(na.crypto_sign_SECRETKEYBYTES);
  na.crypto_sign_seed_keypair(pk, sk, seed);
  return (message) => {
    const sig = Buffer.allocUnsafe(na.crypto_sign_BYTES);
    na.crypto_sign_detached(sig, message, sk);
    return sig;
  };
}

/**
 * Imports the key once and returns a signer of tokens with claims iss, sub, aud (when given), iat, exp, jti and
 * body = base64url(SHA-256(body)).
 * @param backend the Ed25519 implementation (default `defaultEd25519Backend()`)
 * @throws when the key is not an Ed25519 private JWK, or `backend` is 'sodium' without sodium-native
 */
export async function createNodeJwtSigner(key: SigningJwk, backend: Ed25519Backend = defaultEd25519Backend()): Promise<JwtSigner> {
  if (key.alg !== 'EdDSA') throw new Error(`unsupported JWT algorithm ${key.alg}: only EdDSA (Ed25519)`);
  const signEd25519 = ed25519Sign(key.privateJwk as JsonWebKey, backend);
  const header = Buffer.from(JSON.stringify({ alg: key.alg, kid: key.kid, typ: 'JWT' })).toString('base64url');
  return {
    kid: key.kid,
    async sign({ sub, jti, body, iatSec, aud }) {
      const claims = {
        body: createHash('sha256').update(body).digest('base64url'),
        iss: JWT_ISSUER,
        sub,
        ...(aud === undefined ? {} : { aud }),
        iat: iatSec,
        exp: iatSec + JWT_TTL_SECONDS,
        jti,
      };
      const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
      return `${input}.${signEd25519(Buffer.from(input)).toString('base64url')}`;
    },
  };
}
