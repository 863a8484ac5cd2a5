-- Registration's hot path: no foreign keys from jobs to tenants and from runs to jobs (see schema.ts, jobs).
ALTER TABLE "jobs" DROP CONSTRAINT "jobs_tenant_id_tenants_id_fk";
--> statement-breakpoint
ALTER TABLE "runs" DROP CONSTRAINT "runs_job_id_jobs_id_fk";
--> statement-breakpoint
-- Deleting tenants deletes their jobs, and deleting jobs their runs (and so, by runs_delete_attempts, the attempts),
-- once per statement, as ON DELETE CASCADE did.
CREATE FUNCTION "jobs_delete_runs"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "runs" r USING gone g WHERE r.job_id = g.id;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "jobs_delete_runs" AFTER DELETE ON "jobs" REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION "jobs_delete_runs"();--> statement-breakpoint
CREATE FUNCTION "tenants_delete_jobs"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "jobs" j USING gone g WHERE j.tenant_id = g.id;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "tenants_delete_jobs" AFTER DELETE ON "tenants" REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION "tenants_delete_jobs"();
