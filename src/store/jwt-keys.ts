/**
 * The service's JWT signing keys for `Chime-Signature` (EdDSA over Ed25519, via jose). The private half is sealed
 * at rest; the public half is served as a JWKS (RFC 7517). A retired key stays in the JWKS for `JWKS_GRACE_MS`,
 * longer than any token it signed lives, so receivers never meet an unknown `kid`.
 *
 * Rotation: one key is active (`retired_at` null) and signs; when it is older than the configured maximum age
 * (CHIME_JWT_KEY_MAX_AGE_DAYS) the next `ensureJwtKey` with `maxAgeMs` retires it and creates the next one, or an
 * operator forces that with `chime keys rotate-jwt` (`rotateJwtKey`). Creating and rotating take a transaction-scoped
 * advisory lock and look again under it, so any number of dispatchers racing past the age leave exactly one active
 * key, whichever of them got there first.
 */
import { and, desc, gt, isNull, or, sql } from 'drizzle-orm';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import { CipherError } from './cipher.ts';
import type { StoreContext } from './context.ts';
import type { Db, Executor } from './db.ts';
import { jwtKeys } from './schema.ts';

export const JWT_ALG = 'EdDSA';
/** Lifetime of a Chime-Signature token, in seconds. */
export const JWT_TTL_SECONDS = 300;
/**
 * How long a retired key stays published, in ms: twice the token lifetime. It covers a token signed just before the
 * rotation (JWT_TTL_SECONDS) plus a dispatcher still signing with its cached key for up to `JWT_KEY_TTL_MS` (60 s,
 * src/dispatch/keyring.ts) after another one rotated.
 */
export const JWKS_GRACE_MS = 2 * JWT_TTL_SECONDS * 1000;
/** Default maximum age of the signing key before it is rotated, in ms (30 days; CHIME_JWT_KEY_MAX_AGE_DAYS). */
export const JWT_KEY_MAX_AGE_DEFAULT_MS = 30 * 86_400_000;
/**
 * The advisory lock (two-int form, `pg_advisory_xact_lock(int, int)`) that serializes key creation and rotation
 * across processes: ASCII "chim" and "jwtk".
 */
const KEY_LOCK = [0x6368696d, 0x6a77746b] as const;

/** A signing key, opened: its id (RFC 7638 thumbprint), algorithm, private JWK and creation time (epoch ms). */
export type SigningJwk = { kid: string; alg: string; privateJwk: JWK; createdAtMs: number };

type KeyRow = typeof jwtKeys.$inferSelect;

/**
 * The newest active signing key, creating one if there is none; with `maxAgeMs`, a key created that long ago or
 * earlier (by `ctx.clock`) is retired and replaced first. Several processes may race: the check is repeated under
 * an advisory lock, so one of them creates or rotates and the others take its key.
 * @param opts.maxAgeMs maximum key age in ms (default: never rotate here)
 * @throws CipherError naming CHIME_ENCRYPTION_KEY when the stored key cannot be opened with the configured
 *   encryption key (the data was sealed under another one)
 */
export async function ensureJwtKey(ctx: StoreContext, opts: { maxAgeMs?: number } = {}): Promise<SigningJwk> {
  const maxAgeMs = opts.maxAgeMs ?? Infinity;
  const usable = (row: KeyRow | undefined): row is KeyRow => row !== undefined && ctx.clock.now() - row.createdAt.getTime() < maxAgeMs;
  const current = await newestActive(ctx.db);
  if (usable(current)) return openKey(ctx, current);
  return (ctx.db as Db).transaction(async (tx) => {
    await lockKeys(tx);
    const again = await newestActive(tx);
    if (usable(again)) return openKey(ctx, again);
    // Prove the encryption key before retiring anything: a wrong one must not replace the keys it cannot read.
    if (again) await openKey(ctx, again);
    return replaceActiveKey({ ...ctx, db: tx });
  });
}

/**
 * Retires every active key and creates a new one now, whatever their age (`chime keys rotate-jwt`). The retired keys
 * stay in the JWKS for JWKS_GRACE_MS; dispatchers switch to the new key within their cache time (60 s).
 * @throws CipherError naming CHIME_ENCRYPTION_KEY when the current key cannot be opened (nothing is changed then)
 */
export async function rotateJwtKey(ctx: StoreContext): Promise<SigningJwk> {
  return (ctx.db as Db).transaction(async (tx) => {
    await lockKeys(tx);
    const current = await newestActive(tx);
    if (current) await openKey(ctx, current);
    return replaceActiveKey({ ...ctx, db: tx });
  });
}

/** The JWKS document: every active key and every key retired less than JWKS_GRACE_MS ago, newest first. */
export async function publicJwks(ctx: StoreContext): Promise<{ keys: JWK[] }> {
  const cutoff = new Date(ctx.clock.now() - JWKS_GRACE_MS);
  const rows = await ctx.db
    .select({ publicJwk: jwtKeys.publicJwk })
    .from(jwtKeys)
    .where(or(isNull(jwtKeys.retiredAt), and(gt(jwtKeys.retiredAt, cutoff))))
    .orderBy(desc(jwtKeys.createdAt));
  return { keys: rows.map((r) => r.publicJwk as JWK) };
}

async function newestActive(db: Executor): Promise<KeyRow | undefined> {
  const [row] = await db.select().from(jwtKeys).where(isNull(jwtKeys.retiredAt)).orderBy(desc(jwtKeys.createdAt)).limit(1);
  return row;
}

async function lockKeys(tx: Executor): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(${KEY_LOCK[0]}::int, ${KEY_LOCK[1]}::int)`);
}

async function openKey(ctx: StoreContext, row: KeyRow): Promise<SigningJwk> {
  let privateJwk: JWK;
  try {
    privateJwk = JSON.parse(await ctx.cipher.open(row.privateJwkEnc)) as JWK;
  } catch (err) {
    if (!(err instanceof CipherError)) throw err;
    throw new CipherError(
      'CHIME_ENCRYPTION_KEY does not match the data: the stored JWT signing key cannot be decrypted with it. ' +
        'Start with the key this database was first used with (without CHIME_ENCRYPTION_KEY, the embedded database ' +
        'uses the key file in CHIME_DATA_DIR).',
    );
  }
  return { kid: row.kid, alg: row.alg, privateJwk, createdAtMs: row.createdAt.getTime() };
}

/** Retires the active keys and inserts a new one; run under the key lock. */
async function replaceActiveKey(ctx: StoreContext): Promise<SigningJwk> {
  const now = new Date(ctx.clock.now());
  await ctx.db.update(jwtKeys).set({ retiredAt: now }).where(isNull(jwtKeys.retiredAt));
  const { publicKey, privateKey } = await generateKeyPair(JWT_ALG, { crv: 'Ed25519', extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const privateJwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  await ctx.db.insert(jwtKeys).values({
    kid,
    alg: JWT_ALG,
    publicJwk: { ...publicJwk, kid, alg: JWT_ALG, use: 'sig' },
    privateJwkEnc: await ctx.cipher.seal(JSON.stringify(privateJwk)),
    createdAt: now,
  });
  // The retirement and the insert commit together: readers never see a moment without an active key.
  return { kid, alg: JWT_ALG, privateJwk, createdAtMs: now.getTime() };
}
