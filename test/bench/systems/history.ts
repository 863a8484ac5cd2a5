/**
 * The same-work peers' history table (peers/same-work.ts) seen from the harness: created by each peer family's schema
 * install, and read after a workload so that a same-work peer's run counts as recorded only when the queue has it
 * done and the history table has its successful attempt, as a Chime run is `succeeded` with its attempt row.
 */
import { connect, type Sql } from '../db.ts';
import { HISTORY_DDL, HISTORY_TABLE } from '../peers/same-work.ts';
import type { Tally } from './types.ts';

/** Creates the history table in the (template) database at `dbUrl`. */
export async function installHistory(dbUrl: string): Promise<void> {
  const sql = connect(dbUrl);
  try {
    await sql.unsafe(HISTORY_DDL);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * `queue`'s tally with `completed` lowered to the jobs that have a successful attempt row (HTTP 2xx), and a note
 * when some done jobs have none, or when the table holds no row per attempt the queue counts.
 */
export async function withHistory(sql: Sql, queue: Tally): Promise<Tally> {
  const [row] = await sql.unsafe<{ rows: number; succeeded: number }[]>(
    `select count(*)::int as rows, count(distinct job_id) filter (where response_status between 200 and 299)::int as succeeded
     from public.${HISTORY_TABLE}`,
  );
  const notes = [...(queue.notes ?? [])];
  if (row!.succeeded < queue.completed)
    notes.push(`${queue.completed - row!.succeeded} jobs done without a successful attempt row in ${HISTORY_TABLE}`);
  const attempts = queue.completed + queue.failed + (queue.retries ?? 0);
  if (queue.retries !== null && row!.rows < attempts)
    notes.push(`${HISTORY_TABLE} holds ${row!.rows} attempt rows for ${attempts} attempts`);
  return { ...queue, completed: Math.min(queue.completed, row!.succeeded), notes };
}
