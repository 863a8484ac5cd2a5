/**
 * The secrets sealed at rest (store/cipher.ts), across their tables: which keys they are sealed under (a start-up
 * refuses to run when one of those keys is no longer configured), and re-sealing them under the first key
 * (`chime keys reencrypt`), in small batches while the service runs.
 */
import { type SQL, sql } from 'drizzle-orm';
import { type Cipher, keyName, sealedKeyId, sealedPrefix } from './cipher.ts';
import { type Executor, query } from './db.ts';

/** Where sealed values live: a table, the columns of its primary key, and the sealed column. */
const SEALED_COLUMNS = [
  { table: 'jobs', key: ['shard', 'id'], column: 'auth_token_enc' },
  { table: 'jobs', key: ['shard', 'id'], column: 'auth_secret_enc' },
  { table: 'signing_secrets', key: ['shard', 'id'], column: 'secret_enc' },
  { table: 'jwt_keys', key: ['kid'], column: 'private_jwk_enc' },
] as const;

/** Rows re-sealed per statement: small, so that each batch holds its row locks for milliseconds. */
export const REENCRYPT_BATCH = 500;

/** Some stored secrets are sealed under keys the cipher does not have: the service must not start without them. */
export class MissingEncryptionKeyError extends Error {
  override name = 'MissingEncryptionKeyError';
  constructor(readonly missing: (string | null)[]) {
    super(
      `secrets in the database are sealed under ${missing.map(keyName).join(' and ')}, which CHIME_ENCRYPTION_KEY does not hold: ` +
        'add it back (CHIME_ENCRYPTION_KEY=<new id>:<base64>,<old id>:<base64>), and remove it only after `chime keys reencrypt`',
    );
  }
}

/**
 * The keys the stored secrets are sealed under (null: the key without an id). Reads every sealed column once (a
 * sequential scan of `jobs`: at start-up only).
 */
export async function keysInUse(db: Executor): Promise<Set<string | null>> {
  const used = new Set<string | null>();
  for (const { table, column } of SEALED_COLUMNS) {
    const c = sql.identifier(column);
    const rows = await query<{ prefix: string | null }>(
      db,
      sql`select distinct case when ${c} like 'v1.%' then 'v1.' else substring(${c} from '^v2\.[^.]+\.') end as prefix
          from ${sql.identifier(table)} where ${c} is not null`,
    );
    for (const { prefix } of rows) if (prefix) used.add(sealedKeyId(prefix)!);
  }
  return used;
}

/**
 * Checks that the cipher holds every key a stored secret is sealed under.
 * @throws MissingEncryptionKeyError naming the keys it lacks
 */
export async function checkKeysInUse(db: Executor, cipher: Cipher): Promise<void> {
  const missing = [...(await keysInUse(db))].filter((id) => !cipher.keyIds.includes(id));
  if (missing.length > 0) throw new MissingEncryptionKeyError(missing);
}

/**
 * Re-seals every stored secret not sealed under the cipher's first key, in batches of REENCRYPT_BATCH by primary
 * key. A row changed meanwhile (a job's new auth token) is left as it is: the update compares the value it read, and
 * the new value was sealed under the first key anyway.
 * @returns rows re-sealed, per table
 * @throws CipherError when a value cannot be opened (a key is missing: nothing more is changed)
 */
export async function reencryptSecrets(db: Executor, cipher: Cipher): Promise<Record<string, number>> {
  const prefix = sealedPrefix(cipher.keyIds[0]!);
  const changed: Record<string, number> = {};
  for (const { table, key, column } of SEALED_COLUMNS) {
    changed[table] ??= 0; // jobs has two sealed columns: one count for the table
    const keyList = sql.join(
      key.map((k) => sql.identifier(k)),
      sql`, `,
    );
    let after: unknown[] | null = null;
    for (;;) {
      const from: SQL = after
        ? sql`and (${keyList}) > (${sql.join(
            after.map((v) => sql`${v}`),
            sql`, `,
          )})`
        : sql``;
      const rows: Record<string, unknown>[] = await query<Record<string, unknown>>(
        db,
        sql`select ${keyList}, ${sql.identifier(column)} as sealed from ${sql.identifier(table)}
            where ${sql.identifier(column)} is not null and left(${sql.identifier(column)}, ${prefix.length}) <> ${prefix} ${from}
            order by ${keyList} limit ${REENCRYPT_BATCH}`,
      );
      if (rows.length === 0) break;
      for (const row of rows) {
        const resealed = await cipher.seal(await cipher.open(String(row.sealed)));
        const match = sql.join(
          key.map((k) => sql`${sql.identifier(k)} = ${row[k]}`),
          sql` and `,
        );
        const done = await query<{ n: number }>(
          db,
          sql`update ${sql.identifier(table)} set ${sql.identifier(column)} = ${resealed}
              where ${match} and ${sql.identifier(column)} = ${row.sealed} returning 1 as n`,
        );
        changed[table] += done.length;
      }
      const last = rows.at(-1)!;
      after = key.map((k): unknown => last[k]);
    }
  }
  return changed;
}
