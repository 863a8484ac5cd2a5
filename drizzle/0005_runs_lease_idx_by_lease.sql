DROP INDEX "runs_lease_idx";--> statement-breakpoint
CREATE INDEX "runs_lease_idx" ON "runs" USING btree ("lease_expires_at") WHERE "runs"."lease_expires_at" is not null;