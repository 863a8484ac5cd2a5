CREATE TABLE "flow_controls" (
	"shard" smallint NOT NULL,
	"id" uuid NOT NULL,
	"tenant_id" uuid NOT NULL,
	"key" text NOT NULL,
	"rate_limit" integer,
	"rate_period_ms" integer,
	"parallelism" integer,
	"paused" boolean DEFAULT false NOT NULL,
	"starts" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "flow_controls_pkey" PRIMARY KEY("shard","id")
);
--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "flow_control_key" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "auth_secret_enc" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "body" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "flow_id" uuid;--> statement-breakpoint
CREATE UNIQUE INDEX "flow_controls_tenant_key_idx" ON "flow_controls" USING btree ("shard","tenant_id","key");--> statement-breakpoint
CREATE INDEX "jobs_flow_control_idx" ON "jobs" USING btree ("tenant_id","shard","flow_control_key") WHERE "jobs"."flow_control_key" is not null;--> statement-breakpoint
CREATE INDEX "runs_flow_lease_idx" ON "runs" USING btree ("shard","flow_id") WHERE "runs"."flow_id" is not null and "runs"."lease_expires_at" is not null;