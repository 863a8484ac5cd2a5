/**
 * Migrations expand, and only a migration named `…_contract` takes anything away (docs/design.md "Upgrades"): during
 * a rolling upgrade the previous release runs on the migrated schema (test/e2e/rolling-upgrade.test.ts), so a
 * migration may not drop, rename or retype what that release reads or writes, nor add a requirement its writes would
 * break (a column NOT NULL without a default, SET NOT NULL). A contract migration ships in a later release than the
 * one that stopped using what it removes. The rule holds from the first migration after 0013 on; the earlier ones are
 * history, listed as they are.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { committedMigrations, MIGRATIONS_FOLDER } from '../../src/store/migrate.ts';

/** The last migration written before the rule. */
const LAST_BEFORE_RULE = '0013_tenant_shard';

/** What a statement does that the previous release may not survive, or null when it only expands the schema. */
function contraction(statement: string): string | null {
  const s = statement
    .replace(/--[^\n]*/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  const rules: [RegExp, string][] = [
    [/\bDROP (TABLE|COLUMN|TYPE|FUNCTION|VIEW|MATERIALIZED VIEW|SCHEMA|TRIGGER|SEQUENCE)\b/i, 'drops something'],
    [/\bRENAME\b/i, 'renames something'],
    [/\bALTER COLUMN \S+ (SET DATA )?TYPE\b/i, 'changes a column type'],
    [/\bALTER COLUMN \S+ SET NOT NULL\b/i, 'makes a column required'],
  ];
  for (const [pattern, what] of rules) if (pattern.test(s)) return what;
  for (const column of s.match(/\bADD COLUMN [^,;]*/gi) ?? []) {
    // A generated column is never written, so its expression's `is not null` requires nothing of the writes.
    if (/\bNOT NULL\b/i.test(column) && !/\bDEFAULT\b/i.test(column) && !/\bGENERATED ALWAYS AS\b/i.test(column)) {
      return 'adds a required column without a default';
    }
  }
  return null;
}

/** The statements of a migration file that contract the schema, with what each does. */
function contractions(tag: string): string[] {
  const text = readFileSync(`${MIGRATIONS_FOLDER}/${tag}.sql`, 'utf8');
  return text
    .split('--> statement-breakpoint')
    .flatMap((chunk) => chunk.split(/;\s*\n/))
    .map((st) => [st.trim(), contraction(st)] as const)
    .filter(([, what]) => what !== null)
    .map(([st, what]) => `${what}: ${st.split('\n')[0]}`);
}

describe('migrations expand; only a …_contract migration contracts', () => {
  it('tells an expanding statement from a contracting one', () => {
    const contracting = [
      'ALTER TABLE "runs" DROP COLUMN "lease_owner"',
      'DROP TABLE "attempts"',
      'ALTER TABLE "jobs" RENAME COLUMN "name" TO "title"',
      'ALTER TABLE "jobs" RENAME TO "schedules"',
      'ALTER TABLE "jobs" ALTER COLUMN "timeout_ms" TYPE bigint',
      'ALTER TABLE "jobs" ALTER COLUMN "timeout_ms" SET DATA TYPE bigint',
      'ALTER TABLE "jobs" ALTER COLUMN "key" SET NOT NULL',
      'ALTER TABLE "jobs" ADD COLUMN "flow_key" text NOT NULL',
      'DROP FUNCTION IF EXISTS "chime_shard_of"(uuid)',
    ];
    const expanding = [
      'CREATE TABLE "audit_log" ("id" uuid PRIMARY KEY NOT NULL, "at" timestamptz NOT NULL)',
      'ALTER TABLE "jobs" ADD COLUMN "flow_key" text',
      'ALTER TABLE "jobs" ADD COLUMN "max_runs" integer DEFAULT 0 NOT NULL',
      'ALTER TABLE "jobs" ADD COLUMN "kind" text NOT NULL DEFAULT \'callback\'',
      'ALTER TABLE "runs" ADD COLUMN "flow_leased" boolean GENERATED ALWAYS AS (flow_id is not null) STORED',
      'CREATE INDEX "runs_awaiting_idx" ON "runs" ("shard", "deadline_at")',
      'DROP INDEX IF EXISTS "runs_finished_idx"',
      'ALTER TABLE "jobs" DROP CONSTRAINT "jobs_tenant_id_fk"',
    ];
    for (const st of contracting) expect(contraction(st), st).not.toBeNull();
    for (const st of expanding) expect(contraction(st), st).toBeNull();
  });

  it(`every migration after ${LAST_BEFORE_RULE} only expands, unless it is named …_contract`, () => {
    const tags = committedMigrations().map((m) => m.tag);
    const ruleFrom = tags.indexOf(LAST_BEFORE_RULE) + 1;
    expect(ruleFrom, `${LAST_BEFORE_RULE} is in the journal`).toBeGreaterThan(0);
    const offending = Object.fromEntries(
      tags
        .slice(ruleFrom)
        .filter((tag) => !tag.endsWith('_contract'))
        .map((tag) => [tag, contractions(tag)] as const)
        .filter(([, found]) => found.length > 0),
    );
    expect(offending).toEqual({});
    // The history before the rule, as it is: the rolling upgrade starts from a release that has all of it applied.
    expect(tags.slice(0, ruleFrom).filter((tag) => contractions(tag).length > 0)).toEqual(['0004_attempts_hot_path', '0013_tenant_shard']);
  });
});
