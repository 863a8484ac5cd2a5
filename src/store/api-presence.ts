/**
 * Which API processes share this database, so that each can give a tenant its share of the request rate
 * (src/api/rate-limit.ts): every API process on PostgreSQL writes its row of `api_processes` every API_HEARTBEAT_MS
 * (the database's clock, `clock_timestamp()`, so hosts' clocks do not matter) and counts the rows seen within
 * API_PROCESS_TTL_MS, itself included. A write every few seconds per process, never one per request.
 *
 * How stale the count may be: a process that starts counts the others at once (its first heartbeat is written and
 * read before it serves), and they count it from their next heartbeat (≤ API_HEARTBEAT_MS later); a process that stops
 * deletes its row, and one that dies is no longer counted API_PROCESS_TTL_MS after its last heartbeat. While the
 * database cannot be reached, the last count stands. Rows silent for an hour are deleted by whoever heartbeats.
 */
import { sql } from 'drizzle-orm';
import { newId } from '../domain/ids.ts';
import { type Executor, query } from './db.ts';

/** How often an API process writes its row, in ms. */
export const API_HEARTBEAT_MS = 2_000;
/** A process whose row is older than this (ms) is no longer counted: three heartbeats missed. */
export const API_PROCESS_TTL_MS = 3 * API_HEARTBEAT_MS;

export interface ApiPresence {
  /** This process's id (its row). */
  readonly id: string;
  /** API processes alive as last counted, this one included (≥ 1). */
  readonly processes: number;
  /** Writes the first heartbeat and counts (a failure goes to `onError`; the count stays 1), then heartbeats on a timer. */
  start(): Promise<void>;
  /** Stops heartbeating and deletes this process's row (a failure to delete is only reported: the row ages out). */
  stop(): Promise<void>;
}

/**
 * A stopped presence on `db`.
 * @param o.heartbeatMs how often to heartbeat (default API_HEARTBEAT_MS)
 * @param o.ttlMs how old a row may be and still count (default API_PROCESS_TTL_MS)
 * @param o.onError called with a failed heartbeat's error (the last count stands)
 */
export function createApiPresence(
  db: Executor,
  o: { heartbeatMs?: number; ttlMs?: number; onError?: (err: unknown) => void } = {},
): ApiPresence {
  const id = newId();
  const heartbeatMs = o.heartbeatMs ?? API_HEARTBEAT_MS;
  const ttlMs = o.ttlMs ?? API_PROCESS_TTL_MS;
  let processes = 1;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let running = false;
  let beating: Promise<void> = Promise.resolve();

  async function beat(): Promise<void> {
    await query(
      db,
      sql`insert into api_processes (id, seen_at) values (${id}, clock_timestamp())
          on conflict (id) do update set seen_at = excluded.seen_at`,
    );
    const [row] = await query<{ n: number | string }>(
      db,
      sql`select count(*) as n from api_processes
          where id <> ${id} and seen_at > clock_timestamp() - ${ttlMs}::int * interval '1 millisecond'`,
    );
    processes = 1 + Number(row?.n ?? 0);
    await query(db, sql`delete from api_processes where seen_at < clock_timestamp() - interval '1 hour'`);
  }

  function schedule(): void {
    if (!running) return;
    timer = setTimeout(() => {
      beating = beat()
        .catch((err: unknown) => o.onError?.(err))
        .finally(schedule);
    }, heartbeatMs);
    timer.unref?.();
  }

  return {
    id,
    get processes() {
      return processes;
    },
    async start() {
      if (running) return;
      await beat().catch((err: unknown) => o.onError?.(err));
      running = true;
      schedule();
    },
    async stop() {
      running = false;
      if (timer) clearTimeout(timer);
      await beating;
      await query(db, sql`delete from api_processes where id = ${id}`).catch((err: unknown) => o.onError?.(err));
    },
  };
}
