/**
 * Notification endpoints and events (API.md "Notification endpoints"; docs/design.md invariant 11).
 *
 * An endpoint has a hidden job (`jobs.kind = 'notification'`): each event is inserted as a run of that job
 * (`trigger = 'notification'`, the event's body in `runs.payload`, its id in `runs.event_id`), so deliveries go through
 * the dispatcher exactly like callbacks: leases, the destination guard, per-destination limits, signatures, retries
 * with backoff (for 24 h: the run's relevancy window) and the attempt log, which is the delivery history.
 * `recordEvents` runs inside the transaction of the state change that causes the events, so the change and its
 * events commit together or not at all, crashes included.
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
import {
  EVENT_DELIVERY_RETRY,
  EVENT_DELIVERY_WINDOW_MS,
  type EventSeed,
  type EventType,
  MAX_NOTIFICATION_ENDPOINTS,
  redactHeaderValues,
} from '../domain/events.ts';
import { newId } from '../domain/ids.ts';
import { type CallbackSpec, DEFAULT_TIMEOUT_MS } from '../domain/job.ts';
import { shardOf } from '../domain/shard.ts';
import { JOB_STATUS, RUN_STATUS, RUN_TRIGGER } from '../domain/states.ts';
import { auditChanges } from './audit-log.ts';
import type { StoreContext } from './context.ts';
import { announceRun, type Db, type Executor } from './db.ts';
import { listRuns } from './runs.ts';
import { jobs, notificationEndpoints, runs } from './schema.ts';
import { ofTenant } from './tenant-scope.ts';
import { jobView, runView } from './views.ts';

export type NotificationEndpointRow = typeof notificationEndpoints.$inferSelect;

/** The tenant already has MAX_NOTIFICATION_ENDPOINTS endpoints. */
export class EndpointLimitError extends Error {
  override name = 'EndpointLimitError';
}

/**
 * Registers an endpoint and its hidden delivery job, with its audit entry, in one transaction.
 * @throws EndpointLimitError past MAX_NOTIFICATION_ENDPOINTS per tenant
 */
export async function createNotificationEndpoint(
  ctx: StoreContext,
  tenantId: string,
  input: { url: string; events: EventType[]; description: string | null },
): Promise<NotificationEndpointRow> {
  return (ctx.db as Db).transaction(async (tx) => {
    // Serializes concurrent creations of one tenant, so the limit holds.
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext('chime:notification-endpoints'), hashtext(${tenantId}))`);
    const [{ n } = { n: 0 }] = await tx
      .select({ n: sql<number>`count(*)::int` })
      .from(notificationEndpoints)
      .where(ofTenant(notificationEndpoints, tenantId));
    if (n >= MAX_NOTIFICATION_ENDPOINTS)
      throw new EndpointLimitError(`a tenant has at most ${MAX_NOTIFICATION_ENDPOINTS} notification endpoints`);
    const now = new Date(ctx.clock.now());
    const jobId = newId();
    const callback = eventDeliveryCallback(input.url);
    await tx.insert(jobs).values({
      shard: shardOf(tenantId),
      id: jobId,
      tenantId,
      kind: 'notification',
      name: `notification endpoint ${input.url}`,
      status: JOB_STATUS.active,
      // Never scheduled: its only runs are event deliveries.
      schedule: { type: 'dates', dates: [] },
      callback,
      retry: EVENT_DELIVERY_RETRY,
      relevancyWindowMs: EVENT_DELIVERY_WINDOW_MS,
      deliveryMode: 'at-least-once',
      overlapPolicy: 'allow',
      catchUp: 'one',
      createdAt: now,
      updatedAt: now,
    });
    const [row] = await tx
      .insert(notificationEndpoints)
      .values({
        shard: shardOf(tenantId),
        id: newId(),
        tenantId,
        url: input.url,
        events: input.events,
        description: input.description,
        jobId,
        createdAt: now,
      })
      .returning();
    await auditChanges(tx, ctx, tenantId, [
      { action: 'notification_endpoint.created', target: { type: 'notification_endpoint', id: row!.id } },
    ]);
    return row!;
  });
}

/** The tenant's endpoints, oldest first (at most MAX_NOTIFICATION_ENDPOINTS). */
export async function listNotificationEndpoints(ctx: StoreContext, tenantId: string): Promise<NotificationEndpointRow[]> {
  return ctx.db.select().from(notificationEndpoints).where(ofTenant(notificationEndpoints, tenantId)).orderBy(notificationEndpoints.id);
}

/** The tenant's endpoint, or null (also for another tenant's id). */
export async function getNotificationEndpoint(
  ctx: StoreContext,
  tenantId: string,
  endpointId: string,
): Promise<NotificationEndpointRow | null> {
  const [row] = await ctx.db
    .select()
    .from(notificationEndpoints)
    .where(and(ofTenant(notificationEndpoints, tenantId), eq(notificationEndpoints.id, endpointId)));
  return row ?? null;
}

/**
 * Deletes an endpoint: its hidden job is canceled with its waiting deliveries (deliveries in flight finish), with the
 * audit entry, in one transaction.
 * @returns false when the tenant has no such endpoint
 */
export async function deleteNotificationEndpoint(ctx: StoreContext, tenantId: string, endpointId: string): Promise<boolean> {
  return (ctx.db as Db).transaction(async (tx) => {
    const [row] = await tx
      .delete(notificationEndpoints)
      .where(and(ofTenant(notificationEndpoints, tenantId), eq(notificationEndpoints.id, endpointId)))
      .returning();
    if (!row) return false;
    const nowIso = new Date(ctx.clock.now()).toISOString();
    await tx.execute(
      sql`update jobs set status = 'canceled', updated_at = ${nowIso}::timestamptz where shard = ${row.shard} and id = ${row.jobId}`,
    );
    await tx.execute(sql`update runs set status = 'canceled', finished_at = ${nowIso}::timestamptz, next_attempt_at = null,
        error = 'notification endpoint deleted'
      where shard = ${row.shard} and job_id = ${row.jobId} and status in ('scheduled', 'retrying')`);
    await auditChanges(tx, ctx, tenantId, [
      { action: 'notification_endpoint.deleted', target: { type: 'notification_endpoint', id: endpointId } },
    ]);
    return true;
  });
}

/**
 * An endpoint's deliveries (runs of its hidden job), newest first, `limit` at a time after `cursor` (`listRuns`).
 * @returns the page of delivery runs and the cursor of the next one (null at the end)
 */
export function listDeliveries(ctx: StoreContext, endpoint: NotificationEndpointRow, opts: { limit: number; cursor?: string }) {
  return listRuns(ctx, endpoint.tenantId, endpoint.jobId, opts);
}

/**
 * The endpoints of the events' tenants (all of them, whatever they subscribe to), for `recordEvents`: one indexed read.
 * A caller may send it beside the statements that precede `recordEvents` in its transaction (it does not depend on them).
 */
export function endpointsOfEvents(tx: Executor, seeds: readonly EventSeed[]): PromiseLike<NotificationEndpointRow[]> {
  if (seeds.length === 0) return Promise.resolve([]);
  const tenantIds = [...new Set(seeds.map((s) => s.tenantId))];
  // One bucket when called on the hot path (claim, finish, reap run per bucket).
  const shards = [...new Set(tenantIds.map(shardOf))];
  // The query itself, not started: `pipelined` starts it in its place among the claim's statements.
  return tx
    .select()
    .from(notificationEndpoints)
    .where(and(inArray(notificationEndpoints.shard, shards), inArray(notificationEndpoints.tenantId, tenantIds)));
}

/**
 * Records events in the caller's transaction `tx`: for each event, one delivery run per endpoint of its tenant that
 * subscribes to its type, due now, carrying `{ type, eventId, occurredAt, data: { job, run?, reason? } }` with the job
 * and run as the API shows them at this moment, but for the values of the job's custom callback headers, which are
 * redacted (`eventJobView`). Costs one indexed read when no tenant of the events has an endpoint.
 * @param nowMs the events' time (epoch ms)
 * @param endpoints the events' tenants' endpoints, when already read (`endpointsOfEvents`) in this transaction
 * @returns how many deliveries were made
 */
export async function recordEvents(
  tx: Executor,
  seeds: readonly EventSeed[],
  nowMs: number,
  endpoints?: readonly NotificationEndpointRow[],
): Promise<number> {
  if (seeds.length === 0) return 0;
  endpoints ??= await endpointsOfEvents(tx, seeds);
  const shards = [...new Set(seeds.map((s) => shardOf(s.tenantId)))];
  const wanted = seeds.filter((s) => endpoints.some((e) => e.tenantId === s.tenantId && (e.events as string[]).includes(s.type)));
  if (wanted.length === 0) return 0;

  const jobIds = [...new Set(wanted.map((s) => s.jobId))];
  const runIds = [...new Set(wanted.flatMap((s) => (s.runId ? [s.runId] : [])))];
  const jobRows = new Map(
    (
      await tx
        .select()
        .from(jobs)
        .where(and(inArray(jobs.shard, shards), inArray(jobs.id, jobIds)))
    ).map((j) => [j.id, j]),
  );
  const runRows = new Map(
    runIds.length
      ? (
          await tx
            .select()
            .from(runs)
            .where(and(inArray(runs.shard, shards), inArray(runs.id, runIds)))
        ).map((r) => [r.id, r])
      : [],
  );
  const now = new Date(nowMs);
  const deliveries: (typeof runs.$inferInsert)[] = [];
  for (const seed of wanted) {
    const job = jobRows.get(seed.jobId);
    if (!job) continue;
    const run = seed.runId ? runRows.get(seed.runId) : undefined;
    const eventId = newId();
    const body = {
      type: seed.type,
      eventId,
      occurredAt: now.toISOString(),
      data: { job: eventJobView(job), ...(run ? { run: runView(run) } : {}), ...(seed.reason ? { reason: seed.reason } : {}) },
    };
    for (const e of endpoints) {
      if (e.tenantId !== seed.tenantId || !(e.events as string[]).includes(seed.type)) continue;
      deliveries.push({
        shard: e.shard,
        id: newId(),
        tenantId: e.tenantId,
        jobId: e.jobId,
        scheduledFor: now,
        trigger: RUN_TRIGGER.notification,
        status: RUN_STATUS.scheduled,
        nextAttemptAt: now,
        createdAt: now,
        payload: body,
        eventId,
      });
    }
  }
  if (deliveries.length === 0) return 0;
  await tx.insert(runs).values(deliveries);
  await announceRun(tx, nowMs, nowMs);
  return deliveries.length;
}

/**
 * The callback of an event's delivery to `url`: a POST with Chime's own headers only, any 2xx a success, the default
 * timeout. A notification endpoint's hidden job and a result delivery (receiver-effects.ts) send with it.
 */
export function eventDeliveryCallback(url: string): CallbackSpec {
  return { url, method: 'POST', headers: {}, successStatusCodes: ['2xx'], timeoutMs: DEFAULT_TIMEOUT_MS };
}

/** A job as an event carries it: the API's Job with the values of `callback.headers` redacted (they are often keys). */
export function eventJobView(row: typeof jobs.$inferSelect) {
  const job = jobView(row);
  return { ...job, callback: { ...job.callback, headers: redactHeaderValues(job.callback.headers) } };
}
