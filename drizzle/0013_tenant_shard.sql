-- The tenant shard key (src/domain/shard.ts): every tenant-owned row carries its tenant's bucket, first in its
-- primary key and in its unique and due indexes. Existing rows get their bucket here; no row is lost or rewritten
-- otherwise. Foreign keys to tenants and the statement triggers of 0004 and 0006 go: a distributed PostgreSQL refuses
-- statement triggers, and deleting a tenant (tenants.ts, deleteTenant) and retention delete dependents explicitly.
-- chime_shard_of is shardOf in SQL (the low 32 bits of the UUID modulo 64; the 64 is fixed from here on).
CREATE FUNCTION "chime_shard_of"(id uuid) RETURNS smallint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT ((('x' || right(id::text, 8))::bit(32)::bigint) % 64)::smallint
$$;--> statement-breakpoint
DROP TRIGGER IF EXISTS "tenants_delete_jobs" ON "tenants";--> statement-breakpoint
DROP TRIGGER IF EXISTS "jobs_delete_runs" ON "jobs";--> statement-breakpoint
DROP TRIGGER IF EXISTS "runs_delete_attempts" ON "runs";--> statement-breakpoint
DROP FUNCTION IF EXISTS "tenants_delete_jobs"();--> statement-breakpoint
DROP FUNCTION IF EXISTS "jobs_delete_runs"();--> statement-breakpoint
DROP FUNCTION IF EXISTS "runs_delete_attempts"();--> statement-breakpoint
ALTER TABLE "api_keys" DROP CONSTRAINT "api_keys_tenant_id_tenants_id_fk";--> statement-breakpoint
ALTER TABLE "idempotency_keys" DROP CONSTRAINT "idempotency_keys_tenant_id_tenants_id_fk";--> statement-breakpoint
ALTER TABLE "notification_endpoints" DROP CONSTRAINT "notification_endpoints_tenant_id_tenants_id_fk";--> statement-breakpoint
ALTER TABLE "signing_secrets" DROP CONSTRAINT "signing_secrets_tenant_id_tenants_id_fk";--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "shard" smallint;--> statement-breakpoint
UPDATE "tenants" SET "shard" = "chime_shard_of"("id");--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "shard" smallint;--> statement-breakpoint
UPDATE "api_keys" SET "shard" = "chime_shard_of"("tenant_id");--> statement-breakpoint
ALTER TABLE "signing_secrets" ADD COLUMN "shard" smallint;--> statement-breakpoint
UPDATE "signing_secrets" SET "shard" = "chime_shard_of"("tenant_id");--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD COLUMN "shard" smallint;--> statement-breakpoint
UPDATE "idempotency_keys" SET "shard" = "chime_shard_of"("tenant_id");--> statement-breakpoint
ALTER TABLE "notification_endpoints" ADD COLUMN "shard" smallint;--> statement-breakpoint
UPDATE "notification_endpoints" SET "shard" = "chime_shard_of"("tenant_id");--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "shard" smallint;--> statement-breakpoint
UPDATE "jobs" SET "shard" = "chime_shard_of"("tenant_id");--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "shard" smallint;--> statement-breakpoint
UPDATE "runs" SET "shard" = "chime_shard_of"("tenant_id");--> statement-breakpoint
ALTER TABLE "attempts" ADD COLUMN "shard" smallint;--> statement-breakpoint
-- An attempt whose run is gone (none should be: runs were deleted with their attempts) keeps a bucket all the same.
UPDATE "attempts" a SET "shard" = coalesce((SELECT r."shard" FROM "runs" r WHERE r."id" = a."run_id"), 0);--> statement-breakpoint
ALTER TABLE "tenants" ALTER COLUMN "shard" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ALTER COLUMN "shard" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "signing_secrets" ALTER COLUMN "shard" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ALTER COLUMN "shard" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "notification_endpoints" ALTER COLUMN "shard" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ALTER COLUMN "shard" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "runs" ALTER COLUMN "shard" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "attempts" ALTER COLUMN "shard" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "tenants" DROP CONSTRAINT "tenants_pkey";--> statement-breakpoint
ALTER TABLE "tenants" ADD CONSTRAINT "tenants_pkey" PRIMARY KEY("shard","id");--> statement-breakpoint
ALTER TABLE "api_keys" DROP CONSTRAINT "api_keys_pkey";--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_pkey" PRIMARY KEY("shard","id");--> statement-breakpoint
ALTER TABLE "signing_secrets" DROP CONSTRAINT "signing_secrets_pkey";--> statement-breakpoint
ALTER TABLE "signing_secrets" ADD CONSTRAINT "signing_secrets_pkey" PRIMARY KEY("shard","id");--> statement-breakpoint
ALTER TABLE "notification_endpoints" DROP CONSTRAINT "notification_endpoints_pkey";--> statement-breakpoint
ALTER TABLE "notification_endpoints" ADD CONSTRAINT "notification_endpoints_pkey" PRIMARY KEY("shard","id");--> statement-breakpoint
ALTER TABLE "jobs" DROP CONSTRAINT "jobs_pkey";--> statement-breakpoint
ALTER TABLE "jobs" ADD CONSTRAINT "jobs_pkey" PRIMARY KEY("shard","id");--> statement-breakpoint
ALTER TABLE "runs" DROP CONSTRAINT "runs_pkey";--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_pkey" PRIMARY KEY("shard","id");--> statement-breakpoint
ALTER TABLE "attempts" DROP CONSTRAINT "attempts_pkey";--> statement-breakpoint
ALTER TABLE "attempts" ADD CONSTRAINT "attempts_pkey" PRIMARY KEY("shard","run_id","attempt");--> statement-breakpoint
DROP INDEX "api_keys_prefix_idx";--> statement-breakpoint
DROP INDEX "idempotency_keys_pk";--> statement-breakpoint
DROP INDEX "jobs_tenant_key_idx";--> statement-breakpoint
DROP INDEX "runs_occurrence_idx";--> statement-breakpoint
DROP INDEX "runs_due_idx";--> statement-breakpoint
DROP INDEX "runs_lease_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_shard_prefix_idx" ON "api_keys" USING btree ("shard","prefix");--> statement-breakpoint
CREATE INDEX "api_keys_prefix_idx" ON "api_keys" USING btree ("prefix");--> statement-breakpoint
CREATE UNIQUE INDEX "idempotency_keys_pk" ON "idempotency_keys" USING btree ("shard","tenant_id","key");--> statement-breakpoint
CREATE UNIQUE INDEX "jobs_tenant_key_idx" ON "jobs" USING btree ("shard","tenant_id","key") WHERE "jobs"."key" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "runs_occurrence_idx" ON "runs" USING btree ("shard","job_id","scheduled_for") WHERE "runs"."trigger" = 'schedule';--> statement-breakpoint
CREATE INDEX "runs_due_idx" ON "runs" USING btree ("shard","next_attempt_at") WHERE "runs"."status" in ('scheduled', 'retrying');--> statement-breakpoint
CREATE INDEX "runs_lease_idx" ON "runs" USING btree ("shard","lease_expires_at") WHERE "runs"."lease_expires_at" is not null;--> statement-breakpoint
DROP INDEX "jobs_tenant_idx";--> statement-breakpoint
DROP INDEX "jobs_tenant_open_idx";--> statement-breakpoint
DROP INDEX "runs_job_idx";--> statement-breakpoint
DROP INDEX "runs_tenant_dead_idx";--> statement-breakpoint
DROP INDEX "runs_tenant_idx";--> statement-breakpoint
CREATE INDEX "jobs_tenant_idx" ON "jobs" USING btree ("tenant_id","shard","id");--> statement-breakpoint
CREATE INDEX "jobs_tenant_open_idx" ON "jobs" USING btree ("tenant_id","shard") WHERE "jobs"."status" in ('active', 'paused') and "jobs"."kind" = 'callback';--> statement-breakpoint
CREATE INDEX "runs_job_idx" ON "runs" USING btree ("job_id","shard","id");--> statement-breakpoint
CREATE INDEX "runs_tenant_dead_idx" ON "runs" USING btree ("tenant_id","shard","id") WHERE "runs"."status" = 'failed' and "runs"."dismissed_at" is null and "runs"."trigger" <> 'notification';--> statement-breakpoint
CREATE INDEX "runs_tenant_idx" ON "runs" USING btree ("tenant_id","shard","id");