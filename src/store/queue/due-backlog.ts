/** The due backlog: how many waiting runs are already due, the first thing to alert on (README "Operating"). */
import { sql } from 'drizzle-orm';
import { query, type Db } from '../db.ts';

/**
 * Runs waiting (`scheduled` or `retrying`) whose `next_attempt_at` ≤ `nowMs` (epoch ms), counted up to `cap` so the
 * count stays cheap on the partial due index whatever the backlog.
 */
export async function countDueRuns(db: Db, nowMs: number, cap = 1_000_000): Promise<number> {
  const [row] = await query<{ n: number | string }>(
    db,
    sql`select count(*) as n from (select 1 from runs
          where status in ('scheduled', 'retrying') and next_attempt_at <= ${new Date(nowMs).toISOString()}::timestamptz
          limit ${cap}) due`,
  );
  return Number(row?.n ?? 0);
}
