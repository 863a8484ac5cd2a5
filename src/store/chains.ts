/**
 * The tenant's chain links as the API checks a `then` against them (API.md "Richer schedules"; src/domain/chain.ts):
 * which jobs a link may name, and the links already stored, to refuse a cycle. The runs a chain triggers are made by
 * src/store/queue/chain-runs.ts.
 */
import { sql } from 'drizzle-orm';
import type { ChainLink } from '../domain/chain.ts';
import { shardOf } from '../domain/shard.ts';
import { type Executor, query, uuidArray } from './db.ts';

/** A job of the tenant as a chain sees it: what a link to it needs (`kind`, `status`) and its own links. */
export type ChainJob = { id: string; name: string | null; kind: string; status: string; then_jobs: ChainLink[] | null };

/**
 * The tenant's jobs named by `ids` and, with `withLinks`, every job of the tenant that has `then` links (its then-graph):
 * one statement on the tenant's bucket. The check it serves runs before the change's own transaction, so two changes at
 * once may close a cycle between them: the runs a chain triggers stop such a cycle (src/domain/chain.ts).
 * @param ids job ids (UUIDs) of the tenant; another tenant's are simply not found
 */
export async function chainJobs(db: Executor, tenantId: string, ids: readonly string[], withLinks: boolean): Promise<ChainJob[]> {
  if (ids.length === 0 && !withLinks) return [];
  return query<ChainJob>(
    db,
    sql`select id, name, kind, status, then_jobs from jobs
      where shard = ${shardOf(tenantId)} and tenant_id = ${tenantId}
        and (id = any(${uuidArray([...new Set(ids)])}::uuid[]) ${withLinks ? sql`or then_jobs is not null` : sql``})`,
  );
}
