-- The attempt log on the finish hot path: no surrogate key, no foreign key (see schema.ts, attempts).
-- The (run_id, attempt) unique index becomes the primary key as it is, without a rebuild.
ALTER TABLE "attempts" DROP CONSTRAINT "attempts_run_id_runs_id_fk";--> statement-breakpoint
ALTER TABLE "attempts" DROP COLUMN "id";--> statement-breakpoint
ALTER TABLE "attempts" ADD CONSTRAINT "attempts_pkey" PRIMARY KEY USING INDEX "attempts_run_attempt_idx";--> statement-breakpoint
-- Deleting runs (retention, a job's cascade) deletes their attempts, once per statement, as ON DELETE CASCADE did.
CREATE FUNCTION "runs_delete_attempts"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "attempts" a USING gone g WHERE a.run_id = g.id;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "runs_delete_attempts" AFTER DELETE ON "runs" REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION "runs_delete_attempts"();
