ALTER TABLE "attempts" ADD COLUMN "response_headers" jsonb;--> statement-breakpoint
ALTER TABLE "attempts" ADD COLUMN "completed_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "attempts" ADD COLUMN "reported_status" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "completion" jsonb;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "on_success" jsonb;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "on_failure" jsonb;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "callback" jsonb;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "result_of" uuid;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "awaiting_completion" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "completion_deadline" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "heartbeat_deadline" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "last_heartbeat_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "progress" jsonb;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "output" jsonb;--> statement-breakpoint
CREATE INDEX "runs_awaiting_idx" ON "runs" USING btree ("shard",least("completion_deadline", "heartbeat_deadline")) WHERE "runs"."awaiting_completion";