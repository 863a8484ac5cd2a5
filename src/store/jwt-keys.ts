/**
 * The service's JWT signing keys for `Chime-Signature` (EdDSA over Ed25519, via jose). The private half is sealed
 * at rest; the public half is served as a JWKS (RFC 7517). A retired key stays in the JWKS for `JWKS_GRACE_MS`,
 * longer than any token it signed lives, so receivers never meet an unknown `kid`.
 */
import { and, desc, gt, isNull, or } from 'drizzle-orm';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import type { StoreContext } from './context.ts';
import { jwtKeys } from './schema.ts';

export const JWT_ALG = 'EdDSA';
/** Lifetime of a Chime-Signature token, in seconds. */
export const JWT_TTL_SECONDS = 300;
/** How long a retired key stays published: twice the token lifetime. */
export const JWKS_GRACE_MS = 2 * JWT_TTL_SECONDS * 1000;

export type SigningJwk = { kid: string; alg: string; privateJwk: JWK };

/**
 * The newest active signing key, creating one if there is none (several processes may race: each key they make is
 * valid and published, and the newest signs).
 * @throws CipherError when the stored key cannot be opened with the configured encryption key
 */
export async function ensureJwtKey(ctx: StoreContext): Promise<SigningJwk> {
  const [row] = await ctx.db.select().from(jwtKeys).where(isNull(jwtKeys.retiredAt)).orderBy(desc(jwtKeys.createdAt)).limit(1);
  if (row) return { kid: row.kid, alg: row.alg, privateJwk: JSON.parse(await ctx.cipher.open(row.privateJwkEnc)) as JWK };
  return createJwtKey(ctx);
}

/** Generates a new key and retires the others (they stay in the JWKS for JWKS_GRACE_MS). */
export async function rotateJwtKey(ctx: StoreContext): Promise<SigningJwk> {
  await ctx.db.update(jwtKeys).set({ retiredAt: new Date(ctx.clock.now()) }).where(isNull(jwtKeys.retiredAt));
  return createJwtKey(ctx);
}

async function createJwtKey(ctx: StoreContext): Promise<SigningJwk> {
  const { publicKey, privateKey } = await generateKeyPair(JWT_ALG, { crv: 'Ed25519', extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const privateJwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  await ctx.db
    .insert(jwtKeys)
    .values({
      kid,
      alg: JWT_ALG,
      publicJwk: { ...publicJwk, kid, alg: JWT_ALG, use: 'sig' },
      privateJwkEnc: await ctx.cipher.seal(JSON.stringify(privateJwk)),
      createdAt: new Date(ctx.clock.now()),
    })
    .onConflictDoNothing();
  return { kid, alg: JWT_ALG, privateJwk };
}

/** The JWKS document: every active key and every key retired less than JWKS_GRACE_MS ago. */
export async function publicJwks(ctx: StoreContext): Promise<{ keys: JWK[] }> {
  const cutoff = new Date(ctx.clock.now() - JWKS_GRACE_MS);
  const rows = await ctx.db
    .select({ publicJwk: jwtKeys.publicJwk })
    .from(jwtKeys)
    .where(or(isNull(jwtKeys.retiredAt), and(gt(jwtKeys.retiredAt, cutoff))))
    .orderBy(desc(jwtKeys.createdAt));
  return { keys: rows.map((r) => r.publicJwk as JWK) };
}
