CREATE TABLE "notification_endpoints" (
	"id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" uuid NOT NULL,
	"url" text NOT NULL,
	"events" jsonb NOT NULL,
	"description" text,
	"job_id" uuid NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
DROP INDEX "runs_tenant_failed_idx";--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "kind" text DEFAULT 'callback' NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "pause_after_failures" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "consecutive_failures" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "dismissed_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "payload" jsonb;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "event_id" uuid;--> statement-breakpoint
CREATE INDEX "notification_endpoints_tenant_idx" ON "notification_endpoints" USING btree ("tenant_id","id");--> statement-breakpoint
CREATE INDEX "runs_tenant_dead_idx" ON "runs" USING btree ("tenant_id","id") WHERE "runs"."status" = 'failed' and "runs"."dismissed_at" is null and "runs"."trigger" <> 'notification';--> statement-breakpoint
CREATE INDEX "runs_tenant_idx" ON "runs" USING btree ("tenant_id","id");--> statement-breakpoint
-- pausedReason becomes a code: the sentences written before (a 410, or a pause through the API) map onto it.
UPDATE "jobs" SET "paused_reason" = CASE WHEN "paused_reason" LIKE '%410%' THEN 'gone' ELSE 'manual' END WHERE "paused_reason" IS NOT NULL;
