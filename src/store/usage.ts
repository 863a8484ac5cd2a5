/**
 * A tenant's usage (`GET /v1/usage`, API.md "Tenant operations"): its runs per UTC day by outcome, the attempts made
 * each day, the fire lag of recent runs, and its open jobs. Read side only, scoped by tenant.
 *
 * A notification's delivery (a run with `trigger = 'notification'`, of a hidden job with `kind = 'notification'`) is
 * Chime telling the tenant about its jobs, not one of the tenant's runs: it counts nowhere here, and nor does its job.
 * Nor does a result delivery (`trigger = 'result'`: a run's result posted to its job's `onSuccess`/`onFailure`).
 */
import { sql } from 'drizzle-orm';
import { shardOf } from '../domain/shard.ts';
import type { StoreContext } from './context.ts';
import { query } from './db.ts';

/**
 * One UTC day's counts, for the runs of the tenant's jobs (never notification deliveries). A run counts on the day it
 * finished, under its final status; a canceled run is not counted.
 */
export type UsageDay = {
  /** The UTC day, `YYYY-MM-DD`. */
  date: string;
  /** Runs that finished this day with status `succeeded` (by `finished_at`). */
  succeeded: number;
  /** Runs that finished this day with status `failed` (retries exhausted). */
  failed: number;
  /** Runs that finished this day with status `expired` (missed their relevancy window). */
  expired: number;
  /** Runs that finished this day with status `skipped` (overlap policy). */
  skipped: number;
  /** Attempts (rows of `attempts`, one per HTTP request) that started this day, whatever their run's status. */
  attempts: number;
};

/** What `tenantUsage` answers; the body of `GET /v1/usage`. */
export type Usage = {
  /** Start of the oldest day covered: midnight UTC, RFC 3339 with ms (`2026-11-11T00:00:00.000Z`). */
  from: string;
  /** End of the span covered: now (the store's clock), RFC 3339 UTC with ms. */
  to: string;
  /** Every day from `from` to `to`, oldest first, `days` entries, days without runs or attempts as zeros. */
  daily: UsageDay[];
  /**
   * The fire lag of the runs that started in the 24 h up to `to`: a run's `started_at - scheduled_for` in ms, 0 when
   * it started early; its median and 99th percentile (continuous, rounded to whole ms). Null when no run started.
   */
  fireLagMs: { p50: number; p99: number } | null;
  /** The tenant's own jobs (`kind = 'callback'`) now `active` and now `paused`. */
  jobs: { active: number; paused: number };
};

/** A UTC day, in ms. */
const DAY_MS = 86_400_000;

/** PGlite and postgres.js answer counts (bigint) as strings or bigints: numbers here. */
type Count = number | string | bigint;

/**
 * The tenant's usage over the `days` UTC days up to now (today, so far, included), in two statements:
 * - the runs that finished in the span grouped by UTC day of `finished_at` and status, and the attempts that started in
 *   it (joined to their runs, which carry the tenant) grouped by UTC day of `started_at`: the tenant's runs are read
 *   through `runs_tenant_idx` (there is no index on `finished_at`: one would cost every finish on the hot path);
 * - the fire lag percentiles (`percentile_cont`) of the runs started in the last 24 h, and the counts of open jobs
 *   (the tenant's `open_jobs`, each job read by its primary key for its status).
 * Days the database has nothing for are filled in here, as zeros.
 * @param days how many UTC days, today included (the route allows 1..90)
 */
export async function tenantUsage(ctx: StoreContext, tenantId: string, days: number): Promise<Usage> {
  const now = ctx.clock.now();
  const fromMs = Math.floor(now / DAY_MS) * DAY_MS - (days - 1) * DAY_MS;
  const from = new Date(fromMs).toISOString();
  const to = new Date(now).toISOString();
  const dayAgo = new Date(now - DAY_MS).toISOString();

  const perDay = await query<{ day: string; succeeded: Count; failed: Count; expired: Count; skipped: Count; attempts: Count }>(
    ctx.db,
    sql`with finished as (
          select date_trunc('day', finished_at at time zone 'UTC') as day,
            count(*) filter (where status = 'succeeded') as succeeded,
            count(*) filter (where status = 'failed') as failed,
            count(*) filter (where status = 'expired') as expired,
            count(*) filter (where status = 'skipped') as skipped
          from runs
          where shard = ${shardOf(tenantId)} and tenant_id = ${tenantId} and trigger not in ('notification', 'result')
            and status in ('succeeded', 'failed', 'expired', 'skipped')
            and finished_at >= ${from}::timestamptz and finished_at <= ${to}::timestamptz
          group by 1
        ), tried as (
          select date_trunc('day', a.started_at at time zone 'UTC') as day, count(*) as attempts
          from attempts a join runs r on r.shard = a.shard and r.id = a.run_id
          where r.shard = ${shardOf(tenantId)} and tenant_id = ${tenantId} and r.trigger not in ('notification', 'result')
            and a.started_at >= ${from}::timestamptz and a.started_at <= ${to}::timestamptz
          group by 1
        )
        select to_char(coalesce(f.day, t.day), 'YYYY-MM-DD') as day,
          coalesce(f.succeeded, 0) as succeeded, coalesce(f.failed, 0) as failed, coalesce(f.expired, 0) as expired,
          coalesce(f.skipped, 0) as skipped, coalesce(t.attempts, 0) as attempts
        from finished f full join tried t on t.day = f.day`,
  );

  const [recent] = await query<{ started: Count; p50: number | string | null; p99: number | string | null; active: Count; paused: Count }>(
    ctx.db,
    sql`with lag as (
          select greatest(0, extract(epoch from (started_at - scheduled_for)) * 1000)::float8 as ms
          from runs
          where shard = ${shardOf(tenantId)} and tenant_id = ${tenantId} and trigger not in ('notification', 'result')
            and started_at > ${dayAgo}::timestamptz and started_at <= ${to}::timestamptz
        )
        select (select count(*) from lag) as started,
          (select percentile_cont(0.5) within group (order by ms) from lag) as p50,
          (select percentile_cont(0.99) within group (order by ms) from lag) as p99,
          count(*) filter (where j.status = 'active') as active,
          count(*) filter (where j.status = 'paused') as paused
        from open_jobs o join jobs j on j.shard = o.shard and j.id = o.job_id
        where o.shard = ${shardOf(tenantId)} and o.tenant_id = ${tenantId}`,
  );

  const byDay = new Map(perDay.map((r) => [r.day, r]));
  const daily: UsageDay[] = [];
  for (let i = 0; i < days; i++) {
    const date = new Date(fromMs + i * DAY_MS).toISOString().slice(0, 10);
    const row = byDay.get(date);
    daily.push({
      date,
      succeeded: Number(row?.succeeded ?? 0),
      failed: Number(row?.failed ?? 0),
      expired: Number(row?.expired ?? 0),
      skipped: Number(row?.skipped ?? 0),
      attempts: Number(row?.attempts ?? 0),
    });
  }
  const started = Number(recent?.started ?? 0);
  return {
    from,
    to,
    daily,
    fireLagMs: started > 0 ? { p50: Math.round(Number(recent!.p50)), p99: Math.round(Number(recent!.p99)) } : null,
    jobs: { active: Number(recent?.active ?? 0), paused: Number(recent?.paused ?? 0) },
  };
}
