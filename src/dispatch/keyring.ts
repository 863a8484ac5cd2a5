/**
 * Signing material for the dispatcher, cached: tenants' signing secrets (re-read after `SECRETS_TTL_MS`, so a
 * rotation reaches callbacks within that time), the JWT signer (re-read after `JWT_KEY_TTL_MS`, or sooner when the
 * key reaches its maximum age: then the reload rotates it, see `ensureJwtKey`) and opened auth tokens. Decrypting
 * on every callback would put AES-GCM and a query on the hot path for nothing.
 */

import { completionToken } from '../store/completion-token.ts';
import type { StoreContext } from '../store/context.ts';
import { ensureJwtKey, JWT_KEY_MAX_AGE_DEFAULT_MS, type SigningJwk } from '../store/jwt-keys.ts';
import { activeSigningSecrets } from '../store/signing-secrets.ts';
import { createJwtSigner, type JwtSigner } from './sign.ts';

export const SECRETS_TTL_MS = 5_000;
export const JWT_KEY_TTL_MS = 60_000;
/** Shortest time a JWT signer is cached, in ms, even when its key is already due for rotation (clock skew). */
export const JWT_KEY_MIN_TTL_MS = 1_000;
/** Most opened auth tokens kept in memory. */
export const AUTH_TOKEN_CACHE_SIZE = 10_000;

export type KeyringOptions = {
  /** Maximum age of the JWT signing key in ms before it is rotated (config.jwtKeyMaxAgeMs; default 30 days). */
  jwtKeyMaxAgeMs?: number;
  /** Makes the signer of a key (default `createJwtSigner`, jose: portable; the Node dispatcher passes node:crypto's). */
  createSigner?: (key: SigningJwk) => Promise<JwtSigner>;
  /**
   * The service's public base URL (config.publicUrl, or the Node default `http://localhost:<port>`): async jobs'
   * attempts carry `<publicUrl>/v1/runs/<runId>/completion`. Absent: `completion` is not offered (a Worker without
   * CHIME_PUBLIC_URL), and an async job's attempts carry no completion headers (they end `completion_timeout`).
   */
  publicUrl?: string;
};

export interface Keyring {
  /** The tenant's active `whsec_` secrets, newest first. @throws CipherError on a wrong encryption key */
  secretsFor(tenantId: string): Promise<string[]>;
  /** The current JWT signer. */
  jwtSigner(): Promise<JwtSigner>;
  /** Opens a sealed auth token. @throws CipherError */
  openAuthToken(sealed: string): Promise<string>;
  /**
   * The `Chime-Completion-Url` and `Chime-Completion-Token` of attempt `attempt` of run `runId` in bucket `shard` (an
   * async job's: API.md "Long-running jobs"; the token: src/store/completion-token.ts). Absent when the keyring was
   * made without a public URL.
   */
  completion?(runId: string, shard: number, attempt: number): Promise<{ url: string; token: string }>;
}

type Entry<T> = { value: Promise<T>; expiresAt: number };

/**
 * Builds a keyring over `ctx` (its clock decides cache expiry and key age).
 * @param opts.jwtKeyMaxAgeMs when the current JWT signing key is this old (ms), the next reload of the signer
 *   retires it and signs with a new one
 */
export function createKeyring(ctx: StoreContext, opts: KeyringOptions = {}): Keyring {
  const maxAgeMs = opts.jwtKeyMaxAgeMs ?? JWT_KEY_MAX_AGE_DEFAULT_MS;
  const secrets = new Map<string, Entry<string[]>>();
  let jwt: Entry<JwtSigner> | null = null;
  const tokens = new Map<string, string>();
  const cached = <T>(entry: Entry<T> | null | undefined, load: (e: Entry<T>) => Promise<T>, ttl: number, put: (e: Entry<T>) => void) => {
    const now = ctx.clock.now();
    if (entry && entry.expiresAt > now) return entry.value;
    const e = { expiresAt: now + ttl } as Entry<T>;
    e.value = load(e);
    put(e);
    e.value.catch(() => {
      e.expiresAt = 0; // do not cache failures
    });
    return e.value;
  };
  return {
    secretsFor: (tenantId) =>
      cached(
        secrets.get(tenantId),
        () => activeSigningSecrets(ctx, tenantId),
        SECRETS_TTL_MS,
        (e) => secrets.set(tenantId, e),
      ),
    jwtSigner: () =>
      cached(
        jwt,
        async (e) => {
          const key = await ensureJwtKey(ctx, { maxAgeMs });
          // Reload (and so rotate) when the key comes of age, not up to JWT_KEY_TTL_MS after.
          e.expiresAt = Math.min(e.expiresAt, Math.max(key.createdAtMs + maxAgeMs, ctx.clock.now() + JWT_KEY_MIN_TTL_MS));
          return (opts.createSigner ?? createJwtSigner)(key);
        },
        JWT_KEY_TTL_MS,
        (e) => (jwt = e),
      ),
    ...(opts.publicUrl === undefined
      ? {}
      : {
          async completion(runId: string, shard: number, attempt: number) {
            return {
              url: `${opts.publicUrl}/v1/runs/${runId}/completion`,
              token: await completionToken(ctx.cipher, runId, shard, attempt),
            };
          },
        }),
    async openAuthToken(sealed) {
      const hit = tokens.get(sealed);
      if (hit !== undefined) return hit;
      const token = await ctx.cipher.open(sealed);
      if (tokens.size >= AUTH_TOKEN_CACHE_SIZE) tokens.clear();
      tokens.set(sealed, token);
      return token;
    },
  };
}
