-- The active-jobs quota counts the tenant's own open jobs (kind = 'callback'): with the kind in the predicate the
-- count reads this index alone again, as before notification endpoints' hidden jobs existed.
DROP INDEX "jobs_tenant_open_idx";--> statement-breakpoint
CREATE INDEX "jobs_tenant_open_idx" ON "jobs" USING btree ("tenant_id") WHERE "jobs"."status" in ('active', 'paused') and "jobs"."kind" = 'callback';