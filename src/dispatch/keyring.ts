/**
 * Signing material for the dispatcher, cached: tenants' signing secrets (re-read after `SECRETS_TTL_MS`, so a
 * rotation reaches callbacks within that time), the JWT signer (re-read after `JWT_KEY_TTL_MS`) and opened
 * auth tokens. Decrypting on every callback would put AES-GCM and a query on the hot path for nothing.
 */
import { activeSigningSecrets } from '../store/signing-secrets.ts';
import { ensureJwtKey } from '../store/jwt-keys.ts';
import type { StoreContext } from '../store/context.ts';
import { createJwtSigner, type JwtSigner } from './sign.ts';

export const SECRETS_TTL_MS = 5_000;
export const JWT_KEY_TTL_MS = 60_000;
/** Most opened auth tokens kept in memory. */
export const AUTH_TOKEN_CACHE_SIZE = 10_000;

export interface Keyring {
  /** The tenant's active `whsec_` secrets, newest first. @throws CipherError on a wrong encryption key */
  secretsFor(tenantId: string): Promise<string[]>;
  /** The current JWT signer. */
  jwtSigner(): Promise<JwtSigner>;
  /** Opens a sealed auth token. @throws CipherError */
  openAuthToken(sealed: string): Promise<string>;
}

type Entry<T> = { value: Promise<T>; expiresAt: number };

export function createKeyring(ctx: StoreContext): Keyring {
  const secrets = new Map<string, Entry<string[]>>();
  let jwt: Entry<JwtSigner> | null = null;
  const tokens = new Map<string, string>();
  const cached = <T>(entry: Entry<T> | null | undefined, load: () => Promise<T>, ttl: number, put: (e: Entry<T>) => void) => {
    const now = ctx.clock.now();
    if (entry && entry.expiresAt > now) return entry.value;
    const value = load();
    const e = { value, expiresAt: now + ttl };
    put(e);
    value.catch(() => {
      if (e.expiresAt > 0) e.expiresAt = 0; // do not cache failures
    });
    return value;
  };
  return {
    secretsFor: (tenantId) =>
      cached(secrets.get(tenantId), () => activeSigningSecrets(ctx, tenantId), SECRETS_TTL_MS, (e) => secrets.set(tenantId, e)),
    jwtSigner: () => cached(jwt, async () => createJwtSigner(await ensureJwtKey(ctx)), JWT_KEY_TTL_MS, (e) => (jwt = e)),
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
