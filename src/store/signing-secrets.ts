/**
 * Standard Webhooks signing secrets per tenant, sealed at rest. Rotation keeps the previous secret signing for
 * `ROTATION_OVERLAP_MS`, so receivers can switch over without dropping a callback.
 */
import { and, desc, gt, isNull, or } from 'drizzle-orm';
import { newId } from '../domain/ids.ts';
import { shardOf } from '../domain/shard.ts';
import { auditChanges } from './audit-log.ts';
import type { StoreContext } from './context.ts';
import { generateSigningSecret } from './credentials.ts';
import type { Db } from './db.ts';
import { signingSecrets } from './schema.ts';
import { ofTenant } from './tenant-scope.ts';

/** How long a rotated-out secret keeps signing: 24 h. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;

/** Creates a new current secret for the tenant. @returns its id and the secret in clear (`whsec_…`) */
export async function createSigningSecret(ctx: StoreContext, tenantId: string): Promise<{ id: string; secret: string }> {
  const secret = generateSigningSecret();
  const id = newId();
  await ctx.db.insert(signingSecrets).values({
    shard: shardOf(tenantId),
    id,
    tenantId,
    secretEnc: await ctx.cipher.seal(secret),
    createdAt: new Date(ctx.clock.now()),
  });
  return { id, secret };
}

/**
 * The secrets that sign the tenant's callbacks now, newest first (two during a rotation overlap).
 * @throws CipherError when the configured encryption key cannot open them
 */
export async function activeSigningSecrets(ctx: StoreContext, tenantId: string): Promise<string[]> {
  const now = new Date(ctx.clock.now());
  const rows = await ctx.db
    .select({ secretEnc: signingSecrets.secretEnc })
    .from(signingSecrets)
    .where(and(ofTenant(signingSecrets, tenantId), or(isNull(signingSecrets.expiresAt), gt(signingSecrets.expiresAt, now))))
    .orderBy(desc(signingSecrets.id));
  return Promise.all(rows.map((r) => ctx.cipher.open(r.secretEnc)));
}

/**
 * Rotates: the current secret expires in `ROTATION_OVERLAP_MS`, older ones at once, and a new one is created, with
 * the audit entry, in one transaction.
 * @returns the new secret and when the previous one stops signing
 */
export async function rotateSigningSecret(
  ctx: StoreContext,
  tenantId: string,
): Promise<{ signingSecret: string; previousValidUntil: Date }> {
  const now = ctx.clock.now();
  const previousValidUntil = new Date(now + ROTATION_OVERLAP_MS);
  return (ctx.db as Db).transaction(async (tx) => {
    await tx
      .update(signingSecrets)
      .set({ expiresAt: new Date(now) })
      .where(and(ofTenant(signingSecrets, tenantId), gt(signingSecrets.expiresAt, new Date(now))));
    await tx
      .update(signingSecrets)
      .set({ expiresAt: previousValidUntil })
      .where(and(ofTenant(signingSecrets, tenantId), isNull(signingSecrets.expiresAt)));
    const { id, secret } = await createSigningSecret({ ...ctx, db: tx }, tenantId);
    await auditChanges(tx, ctx, tenantId, [{ action: 'signing_secret.rotated', target: { type: 'signing_secret', id } }]);
    return { signingSecret: secret, previousValidUntil };
  });
}
