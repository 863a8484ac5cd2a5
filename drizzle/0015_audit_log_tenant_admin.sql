CREATE TABLE "audit_log" (
	"shard" smallint NOT NULL,
	"id" uuid NOT NULL,
	"tenant_id" uuid NOT NULL,
	"at" timestamp (3) with time zone NOT NULL,
	"actor_type" text NOT NULL,
	"key_id" uuid,
	"key_prefix" text,
	"reason" text,
	"action" text NOT NULL,
	"target_type" text NOT NULL,
	"target_id" text NOT NULL,
	"request_id" text,
	"changes" text[],
	CONSTRAINT "audit_log_pkey" PRIMARY KEY("shard","id")
);
--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "trace_parent" text;--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "status" text DEFAULT 'active' NOT NULL;--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "quotas" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
CREATE INDEX "audit_log_tenant_idx" ON "audit_log" USING btree ("tenant_id","shard","id");