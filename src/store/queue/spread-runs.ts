/**
 * Due times of planned scheduled runs (src/domain/plan.ts), with `jitterMode: spread` placed where the destination is
 * least busy (API.md "Richer schedules"): the jitter window [occurrence, occurrence + jitterMs) is cut into slots, and
 * each run goes to the start of the slot holding the fewest waiting runs of the same tenant to the same destination
 * (`DESTINATION_PATTERN`), the earliest such slot on a tie, counting the runs placed before it in the same call. So a
 * thousand jobs on `0 * * * *` with a 60 s window reach their receiver evenly rather than in a random clump. A run is
 * never placed before its occurrence. One statement per (tenant, destination, occurrence, window) group, on bucket
 * `shard`; none without spread runs.
 */
import { sql } from 'drizzle-orm';
import { DESTINATION_PATTERN, destinationPatternOf } from '../../domain/destination.ts';
import type { PlannedRun } from '../../domain/plan.ts';
import type { JitterMode } from '../../domain/states.ts';
import { type Executor, query } from '../db.ts';

/** Most slots a jitter window is cut into: at least 1 ms each. */
export const SPREAD_SLOTS = 1000;

/** A planned run to give a due time: its job's tenant, id, callback URL and jitter. */
export type DueItem = { tenantId: string; jobId: string; url: string; jitterMs: number; jitterMode: JitterMode; planned: PlannedRun };

/**
 * The due time (UTC epoch ms) of each item, in order: `planned.dueMs`, except for a `spread` job's run that fires
 * (not one its calendar skips), which is placed as the header says.
 * @param keep due times to keep as they are, by job id (a re-plan of an occurrence already placed: it does not move)
 */
export async function dueTimes(
  tx: Executor,
  shard: number,
  items: readonly DueItem[],
  keep: ReadonlyMap<string, { occurrenceMs: number; dueMs: number }> = new Map(),
): Promise<number[]> {
  const due = items.map((i) => i.planned.dueMs);
  /** The items placed together: one tenant, destination, occurrence and window; `members` their indexes. */
  const groups = new Map<string, { tenantId: string; destination: string; occurrenceMs: number; jitterMs: number; members: number[] }>();
  items.forEach((i, n) => {
    const p = i.planned;
    if (i.jitterMode !== 'spread' || i.jitterMs <= 0 || p.firesAtMs !== p.dueMs) return;
    const kept = keep.get(i.jobId);
    if (kept && kept.occurrenceMs === p.occurrenceMs && kept.dueMs >= p.occurrenceMs && kept.dueMs < p.occurrenceMs + i.jitterMs) {
      due[n] = kept.dueMs;
      return;
    }
    const destination = destinationPatternOf(i.url);
    const key = JSON.stringify([i.tenantId, destination, p.occurrenceMs, i.jitterMs]);
    let group = groups.get(key);
    if (!group) {
      group = { tenantId: i.tenantId, destination, occurrenceMs: p.occurrenceMs, jitterMs: i.jitterMs, members: [] };
      groups.set(key, group);
    }
    group.members.push(n);
  });
  for (const { tenantId, destination, occurrenceMs, jitterMs, members } of groups.values()) {
    const slotMs = Math.max(1, Math.ceil(jitterMs / SPREAD_SLOTS));
    const slots = Math.ceil(jitterMs / slotMs);
    const load = new Array<number>(slots).fill(0);
    for (const row of await slotLoad(tx, shard, tenantId, destination, occurrenceMs, jitterMs, slotMs)) {
      if (row.slot >= 0 && row.slot < slots) load[row.slot] = Number(row.n);
    }
    for (const n of members) {
      let best = 0;
      for (let s = 1; s < slots; s++) if (load[s]! < load[best]!) best = s;
      load[best]!++;
      due[n] = occurrenceMs + best * slotMs;
    }
  }
  return due;
}

/** The waiting runs of the tenant to `destination` due in [occurrenceMs, occurrenceMs + jitterMs), counted per slot. */
function slotLoad(
  tx: Executor,
  shard: number,
  tenantId: string,
  destination: string,
  occurrenceMs: number,
  jitterMs: number,
  slotMs: number,
) {
  const from = new Date(occurrenceMs).toISOString();
  const to = new Date(occurrenceMs + jitterMs).toISOString();
  return query<{ slot: number; n: number | string }>(
    tx,
    sql`select floor((extract(epoch from r.next_attempt_at) * 1000 - ${occurrenceMs}::bigint) / ${slotMs}::int)::int as slot, count(*) as n
      from runs r join jobs j on j.shard = ${shard} and j.id = r.job_id
      where r.shard = ${shard} and r.status in ('scheduled', 'retrying') and r.next_attempt_at >= ${from}::timestamptz
        and r.next_attempt_at < ${to}::timestamptz and r.tenant_id = ${tenantId}
        and coalesce(lower(substring(coalesce(r.callback, j.callback)->>'url' from ${DESTINATION_PATTERN}::text)), '') = ${destination}
      group by 1`,
  );
}
