-- The claim and a lease's renewal change no indexed column of runs, so both are HOT updates (docs/design.md "Data
-- model"): no index names `status` or a lease column; leased runs keep their attempt's due time in runs_due_idx, where
-- the reaper finds expired leases (runs_lease_idx goes).
DROP INDEX "runs_lease_idx";--> statement-breakpoint
DROP INDEX "runs_buffered_idx";--> statement-breakpoint
DROP INDEX "runs_due_idx";--> statement-breakpoint
DROP INDEX "runs_tenant_dead_idx";--> statement-breakpoint
DROP INDEX "runs_flow_lease_idx";--> statement-breakpoint
-- One statement, one rewrite of the table for the generated columns.
ALTER TABLE "runs" ADD COLUMN "dead_letter" boolean GENERATED ALWAYS AS (status = 'failed' and dismissed_at is null and trigger <> 'notification') STORED,
  ADD COLUMN "buffer_waiting" boolean GENERATED ALWAYS AS (buffered and status = 'scheduled') STORED,
  ADD COLUMN "flow_leased" boolean GENERATED ALWAYS AS (flow_id is not null and lease_expires_at is not null) STORED,
  ADD COLUMN "lease_without_due" boolean GENERATED ALWAYS AS (lease_expires_at is not null and next_attempt_at is null) STORED;--> statement-breakpoint
-- Runs leased before this migration had their due time cleared at the claim: any past time puts them where the reaper
-- looks (a run awaiting a receiver's report holds no lease and stays out).
UPDATE "runs" SET "next_attempt_at" = coalesce("started_at", "created_at")
  WHERE "status" = 'running' AND "lease_expires_at" IS NOT NULL AND "next_attempt_at" IS NULL;--> statement-breakpoint
CREATE INDEX "runs_buffered_idx" ON "runs" USING btree ("shard","job_id","scheduled_for") WHERE "runs"."buffer_waiting";--> statement-breakpoint
CREATE INDEX "runs_due_idx" ON "runs" USING btree ("shard","next_attempt_at") WHERE "runs"."next_attempt_at" is not null;--> statement-breakpoint
-- Leases the previous release takes while this one rolls out: its claim clears the due time (lease_without_due).
CREATE INDEX "runs_lease_without_due_idx" ON "runs" USING btree ("shard") WHERE "runs"."lease_without_due";--> statement-breakpoint
CREATE INDEX "runs_tenant_dead_idx" ON "runs" USING btree ("tenant_id","shard","id") WHERE "runs"."dead_letter";--> statement-breakpoint
CREATE INDEX "runs_flow_lease_idx" ON "runs" USING btree ("shard","flow_id") WHERE "runs"."flow_leased";--> statement-breakpoint
-- Room on each page for the claim's and the renewals' HOT updates, as for jobs (0020). It applies to the pages written
-- from now on; a rewrite of the table (VACUUM FULL, pg_repack) applies it to the others.
ALTER TABLE "runs" SET (fillfactor = 50);
