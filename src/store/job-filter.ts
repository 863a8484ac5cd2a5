/**
 * Which of a tenant's jobs a list (`GET /v1/jobs`) or a bulk action (`POST /v1/jobs/bulk`) means: one WHERE clause,
 * always scoped by tenant and to the tenant's own jobs (never the hidden jobs that deliver notifications), so the
 * list and the bulk action can never disagree on what a filter matches.
 */
import { and, eq, inArray, type SQL, sql } from 'drizzle-orm';
import type { JobStatus } from '../domain/states.ts';
import { jobSearchText, jobs } from './schema.ts';
import { ofTenant } from './tenant-scope.ts';

/** A filter over a tenant's jobs; every given part must match. */
export type JobFilter = {
  jobIds?: readonly string[];
  status?: JobStatus;
  /** Case-insensitive substring of the job's `name` or `key`. */
  q?: string;
  /** Pairs the job's `metadata` must hold, each with exactly this value. */
  metadata?: Readonly<Record<string, string>>;
};

/**
 * The text `q` searches: name and key, lower-cased, with a separator no query can span. The trigram index on jobs
 * (`jobs_search_idx`) is built on exactly this expression: both come from `jobSearchText` in schema.ts.
 */
export const JOB_SEARCH_TEXT = jobSearchText(jobs.name, jobs.key);

/** `s` as a LIKE pattern that matches it literally (`\` escapes `%`, `_` and itself: PostgreSQL's default escape). */
function likeLiteral(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** The WHERE condition of `filter` over the tenant's own jobs (`kind = 'callback'`). */
export function jobFilterCondition(tenantId: string, filter: JobFilter): SQL {
  return and(
    ofTenant(jobs, tenantId),
    eq(jobs.kind, 'callback'),
    filter.jobIds ? inArray(jobs.id, [...filter.jobIds]) : undefined,
    filter.status ? eq(jobs.status, filter.status) : undefined,
    // The pattern is lower-cased by the database's lower(), as the text is: JavaScript's toLowerCase folds non-ASCII
    // letters that lower() under a C locale (PGlite's) keeps, so `q=ÉTÉ` would miss a job named "ÉTÉ".
    filter.q ? sql`${JOB_SEARCH_TEXT} like lower(${`%${likeLiteral(filter.q)}%`})` : undefined,
    filter.metadata && Object.keys(filter.metadata).length > 0
      ? sql`${jobs.metadata} @> ${JSON.stringify(filter.metadata)}::jsonb`
      : undefined,
  )!;
}
