-- Job search (GET /v1/jobs?q=&metadata.<key>=): pg_trgm for the trigram index of the search text, btree_gin so that a
-- GIN index can lead with tenant_id (uuid). Both are trusted extensions (PostgreSQL >= 13): the database owner may
-- create them without superuser. The embedded database (PGlite) loads both in embedded.ts.
CREATE EXTENSION IF NOT EXISTS pg_trgm;--> statement-breakpoint
CREATE EXTENSION IF NOT EXISTS btree_gin;--> statement-breakpoint
CREATE INDEX "jobs_search_idx" ON "jobs" USING gin ("tenant_id",(lower(coalesce("name", '') || chr(1) || coalesce("key", ''))) gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "jobs_metadata_idx" ON "jobs" USING gin ("tenant_id","metadata" jsonb_path_ops);
