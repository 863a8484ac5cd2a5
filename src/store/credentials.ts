/**
 * Credential formats and hashing, runtime-portable (WebCrypto for randomness; SHA-256 from @noble/hashes, pure
 * JavaScript and synchronous: WebCrypto's digest is an asynchronous job on the thread pool, a queue hop per API request
 * for a hash that costs less than the hop).
 * - API key: `chk_` + 12-character lookup prefix + 43-character base64url secret (32 random bytes).
 *   Only the SHA-256 of the whole key is stored; the prefix finds the row, the hash is compared in constant time.
 *   The prefix's first character is the tenant's bucket (src/domain/shard.ts) in the base64url alphabet, so that
 *   authentication reads one bucket (on Citus, one shard: a worker that is down fails only its own tenants' keys).
 * - Signing secret: `whsec_` + base64 of 32 random bytes (Standard Webhooks "Symmetric" secret format).
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { toBase64Url } from './cipher.ts';

export const API_KEY_PREFIX = 'chk_';
/** Characters of the key that are stored in clear to find its row (`chk_` included). */
export const API_KEY_LOOKUP_LENGTH = API_KEY_PREFIX.length + 12;
export const SIGNING_SECRET_PREFIX = 'whsec_';

/**
 * A fresh API key of a tenant in bucket `shard`, and what is stored of it. The lookup is 9 random bytes but for the
 * first 6 bits, which are `shard`: base64url (RFC 4648 section 5) writes them as the lookup's first character.
 * @param shard the tenant's bucket, 0..63 (shardOf)
 * @throws RangeError when `shard` is not an integer in 0..63
 */
export async function generateApiKey(shard: number): Promise<{ key: string; prefix: string; hash: string }> {
  if (!Number.isInteger(shard) || shard < 0 || shard > 63) throw new RangeError(`shard ${shard} is not in 0..63`);
  const bytes = crypto.getRandomValues(new Uint8Array(9));
  bytes[0] = (shard << 2) | (bytes[0]! & 0b11);
  const lookup = toBase64Url(bytes);
  const secret = toBase64Url(crypto.getRandomValues(new Uint8Array(32)));
  const key = `${API_KEY_PREFIX}${lookup}${secret}`;
  return { key, prefix: key.slice(0, API_KEY_LOOKUP_LENGTH), hash: sha256Hex(key) };
}

/** The lookup prefix of a presented key, or null when it is not shaped like one of ours. */
export function apiKeyPrefix(key: string): string | null {
  return key.startsWith(API_KEY_PREFIX) && key.length > API_KEY_LOOKUP_LENGTH && key.length <= 128
    ? key.slice(0, API_KEY_LOOKUP_LENGTH)
    : null;
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * The bucket a presented key names (its lookup's first character, see `generateApiKey`), or null when it is not
 * shaped like one of ours. A key made before keys carried their bucket names a random one: look it up without.
 */
export function apiKeyShard(key: string): number | null {
  if (apiKeyPrefix(key) === null) return null;
  const i = BASE64URL.indexOf(key[API_KEY_PREFIX.length]!);
  return i < 0 ? null : i;
}

/** A fresh Standard Webhooks signing secret (`whsec_<base64>`). */
export function generateSigningSecret(): string {
  let s = '';
  for (const b of crypto.getRandomValues(new Uint8Array(32))) s += String.fromCharCode(b);
  return SIGNING_SECRET_PREFIX + btoa(s);
}

/** Lowercase hex SHA-256 (FIPS 180-4) of a UTF-8 string. */
export function sha256Hex(s: string): string {
  return bytesToHex(sha256(utf8ToBytes(s)));
}

/**
 * Whether two secrets are equal (a presented token and the configured one, or two key hashes), in time that depends
 * neither on where they differ nor on either's length: both are hashed to 32-byte SHA-256 digests, and all 32 bytes
 * are compared without an early exit. The one comparison of secrets in Chime (the admin token, the metrics token, API
 * key hashes). Pure JavaScript rather than node:crypto's timingSafeEqual because this module also runs in the Worker
 * (node:crypto there is allowed only to the dispatcher's signing code, test/worker/bundle.test.ts), and that one
 * throws on inputs of different lengths, which would leak the secret's length unless hashed first anyway.
 * @returns true when `a` and `b` are the same string (a SHA-256 collision aside)
 */
export function timingSafeEqualStrings(a: string, b: string): boolean {
  const x = sha256(utf8ToBytes(a));
  const y = sha256(utf8ToBytes(b));
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}
