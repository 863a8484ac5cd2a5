/**
 * The completion token of an async job's attempt (API.md "Long-running jobs"): the receiver's credential for reporting
 * that attempt's end and heartbeats, and for nothing else.
 *
 * Stateless: `ct1.<shard>.<attempt>.<tag>`, the tag an HMAC-SHA256 (base64url) over `<runId>:<shard>:<attempt>` under
 * a key derived from the service's encryption key for this purpose alone (`Cipher.macs`, HKDF). Nothing is stored per
 * attempt, so issuing one costs the dispatcher no statement, and a dispatcher restart or failover changes nothing for
 * it. The tag is checked first, with a constant-time compare, before the database is asked anything: a forged token,
 * another run's, or a token with its attempt or bucket altered is refused without a query. That the token's attempt is
 * the run's current one (not stale) and still awaiting is the store's check (src/store/completion.ts). The bucket rides
 * in the token because the completion routes have no tenant: it lets the run be read by its primary key.
 * Works on Node and Workers alike (WebCrypto through the cipher).
 */

import type { Cipher } from './cipher.ts';
import { timingSafeEqualStrings } from './credentials.ts';

/** The HKDF `info` of the token key: a tag made for anything else is never a completion token. */
const PURPOSE = 'chime completion token v1';
const PREFIX = 'ct1';
/** A token's form: prefix, bucket, attempt, 43-character base64url tag. */
const TOKEN = /^ct1\.(\d{1,5})\.(\d{1,5})\.([A-Za-z0-9_-]{43})$/;

/** What a genuine token names: the run's bucket and the attempt it is the credential of. */
export type CompletionClaim = { shard: number; attempt: number };

/** The token of attempt `attempt` (1-based) of run `runId` in bucket `shard`. */
export async function completionToken(cipher: Cipher, runId: string, shard: number, attempt: number): Promise<string> {
  const [tag] = await cipher.macs(PURPOSE, message(runId, shard, attempt));
  return `${PREFIX}.${shard}.${attempt}.${tag}`;
}

/**
 * Checks that `token` was issued by this service for run `runId` (under any configured encryption key).
 * @returns its bucket and attempt, or null for anything else (malformed, forged, another run's); never throws
 */
export async function verifyCompletionToken(cipher: Cipher, runId: string, token: string): Promise<CompletionClaim | null> {
  const m = TOKEN.exec(token);
  if (!m) return null;
  const shard = Number(m[1]);
  const attempt = Number(m[2]);
  const tags = await cipher.macs(PURPOSE, message(runId, shard, attempt));
  // Every tag compared (no early exit), each in constant time.
  let ok = false;
  for (const tag of tags) ok = timingSafeEqualStrings(tag, m[3]!) || ok;
  return ok ? { shard, attempt } : null;
}

const message = (runId: string, shard: number, attempt: number) => `${runId.toLowerCase()}:${shard}:${attempt}`;
