CREATE TABLE "api_processes" (
	"id" uuid PRIMARY KEY NOT NULL,
	"seen_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tenant_callbacks" (
	"shard" smallint NOT NULL,
	"tenant_id" uuid NOT NULL,
	"day" date NOT NULL,
	"callbacks" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "tenant_callbacks_pkey" PRIMARY KEY("shard","tenant_id","day")
);
