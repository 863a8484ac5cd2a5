CREATE TABLE "calendars" (
	"shard" smallint NOT NULL,
	"id" uuid NOT NULL,
	"tenant_id" uuid NOT NULL,
	"key" text NOT NULL,
	"name" text,
	"timezone" text NOT NULL,
	"weekend_days" jsonb NOT NULL,
	"holidays" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "calendars_pkey" PRIMARY KEY("shard","id")
);
--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "calendar_key" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "calendar_roll" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "max_runs" integer;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "scheduled_runs" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "jitter_mode" text DEFAULT 'stable' NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "then_jobs" jsonb;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "buffered" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "upstream" jsonb;--> statement-breakpoint
CREATE UNIQUE INDEX "calendars_tenant_key_idx" ON "calendars" USING btree ("shard","tenant_id","key");--> statement-breakpoint
CREATE INDEX "jobs_calendar_idx" ON "jobs" USING btree ("tenant_id","shard","calendar_key") WHERE "jobs"."calendar_key" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "runs_backfill_idx" ON "runs" USING btree ("shard","job_id","scheduled_for") WHERE "runs"."trigger" = 'backfill';--> statement-breakpoint
CREATE INDEX "runs_buffered_idx" ON "runs" USING btree ("shard","job_id","scheduled_for") WHERE "runs"."buffered" and "runs"."status" = 'scheduled';