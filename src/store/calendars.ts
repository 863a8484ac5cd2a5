/**
 * Calendars, per tenant (API.md "Richer schedules"): create or replace, read, list, delete, and the re-plan of the jobs
 * that use one when it changes. The arithmetic is src/domain/calendar.ts; the planner applies it (src/domain/plan.ts).
 * Every statement names the tenant's bucket; each change writes its audit entry in its own transaction
 * (docs/design.md invariant 11).
 */
import { and, asc, eq, gt, sql } from 'drizzle-orm';
import type { Calendar } from '../domain/calendar.ts';
import { newId } from '../domain/ids.ts';
import { replanAfterMs } from '../domain/plan.ts';
import { shardOf } from '../domain/shard.ts';
import { auditChanges } from './audit-log.ts';
import type { StoreContext } from './context.ts';
import { type Db, type Executor, epochMs, query } from './db.ts';
import { replanJobs } from './job-lifecycle.ts';
import { openJobsNaming } from './open-jobs.ts';
import { calendars } from './schema.ts';
import { ofTenant } from './tenant-scope.ts';

/** A calendar as the API shows it; times are ISO 8601 UTC. */
export type CalendarView = Calendar & {
  key: string;
  name: string | null;
  /** Open jobs (active or paused) of the tenant that use it. */
  jobs: number;
  createdAt: string;
  updatedAt: string;
};

/** What a `PUT /v1/calendars/:key` sets: everything (absent `name`: none). */
export type CalendarSpec = Calendar & { name: string | null };

type CalendarRow = typeof calendars.$inferSelect;

/** Jobs re-planned per transaction when a calendar changes. */
export const REPLAN_BATCH = 500;

/** A calendar is still used by open jobs of its tenant (`jobs` of them): it cannot be deleted. */
export class CalendarInUseError extends Error {
  override name = 'CalendarInUseError';
  constructor(readonly jobs: number) {
    super(`${jobs} job(s) use this calendar; change their calendar first`);
  }
}

/**
 * Creates the tenant's calendar `key`, or replaces it (PUT semantics: absent `name` is none), then re-plans the
 * pending scheduled run of every active job that uses it (`replanCalendarJobs`), in batches of REPLAN_BATCH jobs, one
 * transaction each. The calendar's change is committed first: a claim from then on judges and plans by it, so a job
 * whose batch is not yet re-planned (or whose re-plan a crash cut short) keeps only its one pending run as planned
 * before, and the claim of that run plans the next by the new calendar.
 * @returns the calendar as shown, and whether it was created
 */
export async function putCalendar(
  ctx: StoreContext,
  tenantId: string,
  key: string,
  spec: CalendarSpec,
): Promise<{ calendar: CalendarView; created: boolean }> {
  const shard = shardOf(tenantId);
  const now = new Date(ctx.clock.now());
  const values = { name: spec.name, timezone: spec.timezone, weekendDays: spec.weekendDays, holidays: spec.holidays, updatedAt: now };
  const { row, created, changed } = await (ctx.db as Db).transaction(async (tx) => {
    const [before] = await tx
      .select()
      .from(calendars)
      .where(and(ofTenant(calendars, tenantId), eq(calendars.key, key)))
      .for('update');
    if (before) {
      const [row] = (await tx
        .update(calendars)
        .set(values)
        .where(and(eq(calendars.shard, shard), eq(calendars.id, before.id)))
        .returning()) as [CalendarRow];
      const changes = changedFields(before, row);
      if (changes.length > 0) {
        await auditChanges(tx, ctx, tenantId, [{ action: 'calendar.updated', target: { type: 'calendar', id: key }, changes }]);
      }
      return { row, created: false, changed: changes.some((c) => c !== 'name') };
    }
    const [row] = (await tx
      .insert(calendars)
      .values({ shard, id: newId(), tenantId, key, ...values, createdAt: now })
      .onConflictDoUpdate({ target: [calendars.shard, calendars.tenantId, calendars.key], set: values })
      .returning()) as [CalendarRow];
    await auditChanges(tx, ctx, tenantId, [{ action: 'calendar.created', target: { type: 'calendar', id: key } }]);
    // A job may name a calendar before it exists only through a race with its deletion; re-plan those too.
    return { row, created: true, changed: true };
  });
  if (changed) await replanCalendarJobs(ctx, tenantId, key);
  const [calendar] = await withJobs(ctx.db, tenantId, [row]);
  return { calendar: calendar!, created };
}

/**
 * Re-plans the pending scheduled run of every active job of the tenant that uses calendar `key`, REPLAN_BATCH jobs per
 * transaction (each locks its jobs `FOR UPDATE`, as every change of a job does), each from `replanAfterMs`: its last
 * claimed occurrence, or the earlier of now and its pending occurrence, so no occurrence already fired comes again and
 * none still ahead is lost (test/domain/plan.property.test.ts).
 * @returns how many jobs were re-planned
 */
export async function replanCalendarJobs(ctx: StoreContext, tenantId: string, key: string): Promise<number> {
  const shard = shardOf(tenantId);
  let cursor = '00000000-0000-0000-0000-000000000000';
  let done = 0;
  for (;;) {
    const n = await (ctx.db as Db).transaction(async (tx) => {
      const batch = await query<{ id: string; last_run_at: Date | string | null; pending_at: Date | string | null }>(
        tx,
        sql`select j.id, j.last_run_at,
              (select min(r.scheduled_for) from runs r where r.shard = ${shard} and r.job_id = j.id and r.status = 'scheduled'
                 and r.trigger = 'schedule' and not r.buffered) as pending_at
            from jobs j
            where j.shard = ${shard} and j.tenant_id = ${tenantId} and j.calendar_key = ${key} and j.status = 'active'
              and j.kind = 'callback' and j.id > ${cursor}::uuid
            order by j.id limit ${REPLAN_BATCH} for update of j`,
      );
      if (batch.length === 0) return 0;
      cursor = batch[batch.length - 1]!.id;
      const now = ctx.clock.now();
      const afterMs = new Map(
        batch.map((b) => [
          b.id,
          replanAfterMs(b.last_run_at === null ? null : epochMs(b.last_run_at), b.pending_at === null ? null : epochMs(b.pending_at), now),
        ]),
      );
      await replanJobs(
        tx,
        tenantId,
        batch.map((b) => b.id),
        now,
        { afterMs },
      );
      return batch.length;
    });
    done += n;
    if (n < REPLAN_BATCH) return done;
  }
}

/** The tenant's calendar `key`, or null. */
export async function getCalendar(ctx: StoreContext, tenantId: string, key: string): Promise<CalendarView | null> {
  const [row] = await (ctx.db as Db)
    .select()
    .from(calendars)
    .where(and(ofTenant(calendars, tenantId), eq(calendars.key, key)));
  return row ? (await withJobs(ctx.db, tenantId, [row]))[0]! : null;
}

/**
 * The tenant's calendars by key, `limit` per page after the key `cursor`.
 * @returns the page and the cursor of the next (null: none)
 */
export async function listCalendars(
  ctx: StoreContext,
  tenantId: string,
  opts: { limit: number; cursor?: string },
): Promise<{ items: CalendarView[]; nextCursor: string | null }> {
  const rows = await (ctx.db as Db)
    .select()
    .from(calendars)
    .where(and(ofTenant(calendars, tenantId), opts.cursor === undefined ? undefined : gt(calendars.key, opts.cursor)))
    .orderBy(asc(calendars.key))
    .limit(opts.limit + 1);
  const items = await withJobs(ctx.db, tenantId, rows.slice(0, opts.limit));
  return { items, nextCursor: rows.length > opts.limit ? items[items.length - 1]!.key : null };
}

/**
 * Deletes the tenant's calendar `key`.
 * @returns false when there is none
 * @throws CalendarInUseError while open jobs (active or paused) use it (nothing deleted)
 */
export async function deleteCalendar(ctx: StoreContext, tenantId: string, key: string): Promise<boolean> {
  const shard = shardOf(tenantId);
  return (ctx.db as Db).transaction(async (tx) => {
    const [row] = await tx
      .select({ id: calendars.id })
      .from(calendars)
      .where(and(ofTenant(calendars, tenantId), eq(calendars.key, key)))
      .for('update');
    if (!row) return false;
    const using = (await openJobsNaming(tx, tenantId, 'calendar_key', [key])).get(key) ?? 0;
    if (using > 0) throw new CalendarInUseError(using);
    await tx.delete(calendars).where(and(eq(calendars.shard, shard), eq(calendars.id, row.id)));
    await auditChanges(tx, ctx, tenantId, [{ action: 'calendar.deleted', target: { type: 'calendar', id: key } }]);
    return true;
  });
}

/**
 * The tenant's calendars among `keys`, by key (for planning jobs that name them); a key with none is absent.
 */
export async function calendarsByKey(db: Executor, tenantId: string, keys: readonly string[]): Promise<Map<string, Calendar>> {
  const wanted = [...new Set(keys)];
  if (wanted.length === 0) return new Map();
  const rows = await query<{ key: string; timezone: string; weekend_days: number[]; holidays: string[] }>(
    db,
    sql`select key, timezone, weekend_days, holidays from calendars where shard = ${shardOf(tenantId)} and tenant_id = ${tenantId}
        and key in (select value from jsonb_array_elements_text(${JSON.stringify(wanted)}::jsonb))`,
  );
  return new Map(rows.map((r) => [r.key, { timezone: r.timezone, weekendDays: r.weekend_days, holidays: r.holidays }]));
}

/** The calendars of one tenant as shown, each with the count of open jobs using it (one statement for the counts). */
async function withJobs(db: Executor, tenantId: string, rows: readonly CalendarRow[]): Promise<CalendarView[]> {
  if (rows.length === 0) return [];
  const using = await openJobsNaming(
    db,
    tenantId,
    'calendar_key',
    rows.map((r) => r.key),
  );
  return rows.map((row) => ({
    key: row.key,
    name: row.name,
    timezone: row.timezone,
    weekendDays: row.weekendDays as number[],
    holidays: row.holidays as string[],
    jobs: using.get(row.key) ?? 0,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }));
}

/** The fields a replacement changed, by their API names. */
function changedFields(a: CalendarRow, b: CalendarRow): string[] {
  const same = (x: unknown, y: unknown) => JSON.stringify(x) === JSON.stringify(y);
  return (['name', 'timezone', 'weekendDays', 'holidays'] as const).filter((f) => !same(a[f], b[f]));
}
