/**
 * Lease renewal for runs a dispatcher holds but has not sent yet: a claim sizes its lease for one request (callback
 * timeout + margin), but a run may first wait in the dispatcher's per-destination queue behind slower callbacks to
 * the same origin. Renewing the lease while it waits keeps the reaper from giving the run to another dispatcher
 * (a second request at least once; a wrong "ambiguous" failure at most once) before it was even sent.
 */
import { sql } from 'drizzle-orm';
import { type Db, query } from '../db.ts';
import { eachBucket, type OnBucketError } from './by-bucket.ts';

/** One lease to extend: the run, the attempt that claimed it, and the new expiry (epoch ms). */
export type LeaseRenewal = { shard: number; runId: string; attempt: number; leaseExpiresAtMs: number };

/**
 * Extends the leases `owner` still holds (same owner, same attempt, still `running`) to the given expiries; a lease
 * is never shortened. One statement per bucket whatever the number of runs.
 * @param onBucketError called with a bucket whose statement failed (on Citus, its worker is down) and the error; the
 *   other buckets are renewed all the same, and that bucket's runs are not in the result (their lease is unknown, not
 *   lost). Without it, the first failure is thrown.
 * @returns the ids of the runs whose lease is still held (the others were reaped or released: do not send them)
 */
export function renewLeases(db: Db, owner: string, renewals: LeaseRenewal[], onBucketError?: OnBucketError): Promise<Set<string>> {
  return eachBucket(renewals, (shard, group) => renewBucket(db, owner, shard, group), onBucketError);
}

async function renewBucket(db: Db, owner: string, shard: number, renewals: LeaseRenewal[]): Promise<Set<string>> {
  const rows = JSON.stringify(
    renewals.map((r) => ({ id: r.runId, attempt: r.attempt, lease_expires_at: new Date(r.leaseExpiresAtMs).toISOString() })),
  );
  const held = await query<{ id: string }>(
    db,
    sql`update runs r set lease_expires_at = greatest(r.lease_expires_at, v.lease_expires_at)
        from jsonb_to_recordset(${rows}::jsonb) as v(id uuid, attempt smallint, lease_expires_at timestamptz)
        where r.shard = ${shard} and r.id = v.id and r.status = 'running' and r.lease_owner = ${owner} and r.attempts = v.attempt
        returning r.id`,
  );
  return new Set(held.map((h) => h.id));
}

/**
 * Undoes claims `owner` holds for runs it never sent (a stopping dispatcher's per-destination queue): each run goes
 * back to the waiting state it was claimed from, due now, its attempt not counted and nothing logged, so another
 * dispatcher sends it as if this one had never claimed it (at-most-once runs included: nothing left).
 * @returns the ids of the runs given back (the others' leases were no longer held)
 */
export function unclaimRuns(
  db: Db,
  owner: string,
  claims: { shard: number; runId: string; attempt: number }[],
  nowMs: number,
): Promise<Set<string>> {
  return eachBucket(claims, (shard, group) => unclaimBucket(db, owner, shard, group, nowMs));
}

async function unclaimBucket(
  db: Db,
  owner: string,
  shard: number,
  claims: { runId: string; attempt: number }[],
  nowMs: number,
): Promise<Set<string>> {
  const rows = JSON.stringify(claims.map((c) => ({ id: c.runId, attempt: c.attempt })));
  const back = await query<{ id: string }>(
    db,
    sql`update runs r
        set status = case when r.attempts > 1 then 'retrying' else 'scheduled' end, attempts = r.attempts - 1,
            next_attempt_at = ${new Date(nowMs).toISOString()}::timestamptz,
            started_at = case when r.attempts > 1 then r.started_at end, lease_owner = null, lease_expires_at = null
        from jsonb_to_recordset(${rows}::jsonb) as v(id uuid, attempt smallint)
        where r.shard = ${shard} and r.id = v.id and r.status = 'running' and r.lease_owner = ${owner} and r.attempts = v.attempt
        returning r.id`,
  );
  return new Set(back.map((b) => b.id));
}
