CREATE TABLE "open_jobs" (
	"shard" smallint NOT NULL,
	"tenant_id" uuid NOT NULL,
	"job_id" uuid NOT NULL,
	CONSTRAINT "open_jobs_pkey" PRIMARY KEY("shard","tenant_id","job_id")
);
--> statement-breakpoint
DROP INDEX "jobs_tenant_open_idx";--> statement-breakpoint
INSERT INTO "open_jobs" ("shard", "tenant_id", "job_id")
  SELECT "shard", "tenant_id", "id" FROM "jobs" WHERE "status" IN ('active', 'paused') AND "kind" = 'callback';--> statement-breakpoint
-- Room on each page for a HOT update of every job (docs/design.md "Data model"). It applies to the pages written from
-- now on; a rewrite of the table (VACUUM FULL, pg_repack) applies it to the others.
ALTER TABLE "jobs" SET (fillfactor = 50);
