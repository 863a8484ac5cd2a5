/**
 * Migration 0013 (tenant shard key) upgrading a database in use: on each database target, a database built with the
 * migrations up to 0012 only and filled, with plain SQL in 0012's schema, as a running Chime fills it (tenants with
 * API keys, signing secrets, callback jobs in every state, a notification endpoint with its hidden job, runs waiting,
 * due, leased, retrying, succeeded, failed and dismissed, attempts, idempotency keys, a JWT key), is then migrated as
 * the service migrates at start-up (src/store/migrate.ts, the committed drizzle/ folder). Checked: no row is lost or
 * changed (same row counts, same digest of every row but its new `shard`); every tenant-owned row's `shard` is
 * `shardOf` (src/domain/shard.ts) of its tenant, an attempt's that of its run's tenant; `shard` is a NOT NULL
 * smallint; the primary keys lead with `shard` and `runs_due_idx` too; no trigger and no foreign key is left on the
 * public tables; and migrating again is a no-op.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdGenerator } from '../../src/domain/ids.ts';
import { shardOf } from '../../src/domain/shard.ts';
import { DISTRIBUTED_TABLES } from '../../src/store/citus.ts';
import { openEmbedded } from '../../src/store/embedded.ts';
import { MIGRATIONS_FOLDER, migrateEmbedded, migratePostgresUrl } from '../../src/store/migrate.ts';
import { DATABASE_TARGETS, type DatabaseTarget, type FreshDatabase, freshDatabase } from '../support/databases.ts';

/** The last migration before the shard key. */
const BEFORE_SHARD_IDX = 12;
const BEFORE_SHARD_TAG = '0012_open_jobs_index_callback';
const SHARD_TAG = '0013_tenant_shard';

/**
 * Tenant-owned tables that later migrations make (audit_log: 0015, tenant_callbacks: 0016, flow_controls: 0018,
 * calendars: 0019, open_jobs: 0020): not there at 0013.
 */
const LATER_TABLES: readonly string[] = ['audit_log', 'tenant_callbacks', 'flow_controls', 'calendars', 'open_jobs'];
/** The tables whose rows a tenant owns at 0013, each with `shard` (the list Citus distributes, less the later ones). */
const TENANT_TABLES = DISTRIBUTED_TABLES.filter((t) => !LATER_TABLES.includes(t));
/** Every table of the schema: the tenant-owned ones and the service's own JWT keys. */
const ALL_TABLES = [...TENANT_TABLES, 'jwt_keys'] as const;

/** What the database looks like from SQL, on either driver. */
type Conn = {
  rows<T>(text: string): Promise<T[]>;
  /** Runs several statements (no parameters). */
  script(text: string): Promise<void>;
  /** drizzle's migrator over `folder`, as src/store/migrate.ts runs it over drizzle/. */
  migrateFrom(folder: string): Promise<void>;
  /** The service's own migration (src/store/migrate.ts) over the committed drizzle/ folder. */
  migrateAsTheService(): Promise<void>;
  close(): Promise<void>;
};

/** Advisory lock key of src/store/migrate.ts ("chime" in ASCII). */
const MIGRATION_LOCK = 0x6368696d65;

async function connect(target: DatabaseTarget, fresh: FreshDatabase): Promise<Conn> {
  if (target.kind === 'pglite') {
    const database = await openEmbedded(fresh.dataDir!);
    const pg: PGlite = database.pg;
    return {
      rows: async <T>(text: string) => (await pg.query<T>(text)).rows,
      script: async (text) => void (await pg.exec(text)),
      migrateFrom: (folder) => migratePglite(drizzlePglite(pg), { migrationsFolder: folder }),
      migrateAsTheService: () => migrateEmbedded(pg),
      close: () => database.close(),
    };
  }
  const url = fresh.url!;
  const client = postgres(url, { max: 1, onnotice: () => {} });
  return {
    rows: async <T>(text: string) => [...(await client.unsafe(text))] as T[],
    script: async (text) => void (await client.unsafe(text).simple()),
    async migrateFrom(folder) {
      const m = postgres(url, { max: 1, onnotice: () => {} });
      try {
        await m`select pg_advisory_lock(${MIGRATION_LOCK})`;
        await migratePostgres(drizzlePostgres(m), { migrationsFolder: folder });
        await m`select pg_advisory_unlock(${MIGRATION_LOCK})`;
      } finally {
        await m.end({ timeout: 5 });
      }
    },
    migrateAsTheService: () => migratePostgresUrl(url),
    close: () => client.end({ timeout: 5 }),
  };
}

type Journal = { entries: { idx: number; tag: string }[] } & Record<string, unknown>;

/** A copy of drizzle/ whose journal ends at migration `lastIdx`; returns its path. */
async function migrationsUpTo(lastIdx: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'chime-migrations-'));
  await cp(MIGRATIONS_FOLDER, dir, { recursive: true });
  const file = join(dir, 'meta', '_journal.json');
  const journal = JSON.parse(await readFile(file, 'utf8')) as Journal;
  journal.entries = journal.entries.filter((e) => e.idx <= lastIdx);
  await writeFile(file, JSON.stringify(journal, null, 2));
  return dir;
}

// ---------------------------------------------------------------------------------------------------------------
// The data, as rows of 0012's schema, written as plain SQL.

type Row = Record<string, unknown>;

/** A SQL literal for `v` (objects and arrays as JSON text). */
function literal(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v instanceof Date) return `'${v.toISOString()}'`;
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return `'${s.replaceAll("'", "''")}'`;
}

/** One INSERT of `rows` (all with the same columns) into `table`. */
function insert(table: string, rows: readonly Row[]): string {
  if (rows.length === 0) return '';
  const cols = Object.keys(rows[0]!);
  for (const r of rows) expect(Object.keys(r)).toEqual(cols);
  const values = rows.map((r) => `(${cols.map((c) => literal(r[c])).join(', ')})`).join(',\n  ');
  return `insert into "${table}" (${cols.map((c) => `"${c}"`).join(', ')}) values\n  ${values};\n`;
}

/** Now, for the data: 2031-03-01T12:00:00Z. */
const NOW = Date.UTC(2031, 2, 1, 12);
const at = (minutes: number) => new Date(NOW + minutes * 60_000);
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

type Data = { [table in (typeof ALL_TABLES)[number]]: Row[] };

function emptyData(): Data {
  return Object.fromEntries(ALL_TABLES.map((t) => [t, []])) as unknown as Data;
}

function tenant(d: Data, id: string, name: string): void {
  d.tenants.push({ id, name, created_at: at(-100_000) });
}

function apiKey(d: Data, tenantId: string, o: Partial<Row> = {}): void {
  const prefix = `chime_${randomBytes(6).toString('hex')}`;
  d.api_keys.push({
    id: randomUUID(),
    tenant_id: tenantId,
    name: 'default',
    prefix,
    key_hash: sha256(`${prefix}.${randomBytes(24).toString('base64url')}`),
    created_at: at(-90_000),
    expires_at: null,
    last_used_at: null,
    revoked_at: null,
    ...o,
  });
}

function signingSecret(d: Data, tenantId: string, o: Partial<Row> = {}): void {
  d.signing_secrets.push({
    id: randomUUID(),
    tenant_id: tenantId,
    secret_enc: `v1.${randomBytes(12).toString('base64url')}.${randomBytes(48).toString('base64url')}`,
    created_at: at(-90_000),
    expires_at: null,
    ...o,
  });
}

const RETRY = { strategy: 'exponential', maxAttempts: 5, initialDelayMs: 1000, maxDelayMs: 3_600_000, multiplier: 2, jitter: true };
const callback = (url: string) => ({ url, method: 'POST', headers: { 'x-env': 'prod' }, successStatusCodes: ['2xx'], timeoutMs: 10_000 });

function job(d: Data, tenantId: string, o: Partial<Row> = {}): string {
  const id = randomUUID();
  d.jobs.push({
    id,
    tenant_id: tenantId,
    key: null,
    name: null,
    status: 'active',
    kind: 'callback',
    paused_reason: null,
    pause_after_failures: 0,
    consecutive_failures: 0,
    schedule: { type: 'cron', expression: '*/5 * * * *', timezone: 'Europe/Paris' },
    callback: callback('https://hooks.example.com/chime'),
    auth_token_enc: null,
    payload: { hello: "it's me" },
    retry: RETRY,
    relevancy_window_ms: null,
    delivery_mode: 'at-least-once',
    overlap_policy: 'allow',
    catch_up: 'one',
    jitter_ms: 0,
    metadata: {},
    next_run_at: at(5),
    last_run_at: at(-5),
    created_at: at(-50_000),
    updated_at: at(-5),
    ...o,
  });
  return id;
}

function run(d: Data, tenantId: string, jobId: string, o: Partial<Row> = {}): string {
  const id = randomUUID();
  d.runs.push({
    id,
    tenant_id: tenantId,
    job_id: jobId,
    scheduled_for: at(0),
    trigger: 'schedule',
    status: 'scheduled',
    attempts: 0,
    next_attempt_at: null,
    lease_owner: null,
    lease_expires_at: null,
    started_at: null,
    finished_at: null,
    response_status: null,
    error: null,
    created_at: at(-60),
    dismissed_at: null,
    payload: null,
    event_id: null,
    ...o,
  });
  return id;
}

function attempt(d: Data, runId: string, n: number, o: Partial<Row> = {}): void {
  d.attempts.push({
    run_id: runId,
    attempt: n,
    started_at: at(-30 + n),
    finished_at: at(-30 + n),
    duration_ms: 120 + n,
    response_status: 200,
    response_body_excerpt: 'ok',
    error_class: null,
    error: null,
    sent: true,
    ...o,
  });
}

function idempotencyKey(d: Data, tenantId: string, key: string, o: Partial<Row> = {}): void {
  d.idempotency_keys.push({
    tenant_id: tenantId,
    key,
    request_hash: sha256(key),
    job_id: null,
    run_id: null,
    created_at: at(-120),
    ...o,
  });
}

/** A tenant as a busy one has it: every kind of row, runs in every state. */
function fullTenant(d: Data, tenantId: string, name: string): void {
  tenant(d, tenantId, name);
  apiKey(d, tenantId, { last_used_at: at(-1) });
  apiKey(d, tenantId, { name: 'old', revoked_at: at(-1000) });
  apiKey(d, tenantId, { name: 'ci', expires_at: at(100_000) });
  signingSecret(d, tenantId);
  signingSecret(d, tenantId, { created_at: at(-95_000), expires_at: at(60) }); // rotated out, still signing

  const cron = job(d, tenantId, { key: 'nightly-report', name: 'Nightly report', metadata: { team: 'billing', env: 'prod' } });
  const once = job(d, tenantId, {
    key: 'welcome-mail',
    status: 'completed',
    schedule: { type: 'once', at: at(-30).toISOString() },
    next_run_at: null,
    auth_token_enc: `v1.${randomBytes(40).toString('base64url')}`,
    delivery_mode: 'at-most-once',
  });
  const paused = job(d, tenantId, {
    name: 'Flaky',
    status: 'paused',
    paused_reason: 'consecutive_failures',
    pause_after_failures: 3,
    consecutive_failures: 3,
    schedule: { type: 'interval', everyMs: 60_000, startAt: at(-1000).toISOString() },
    next_run_at: null,
    overlap_policy: 'skip',
    catch_up: 'none',
    jitter_ms: 500,
    relevancy_window_ms: 300_000,
  });
  const canceled = job(d, tenantId, { status: 'canceled', next_run_at: null, payload: null });
  const hidden = job(d, tenantId, {
    kind: 'notification',
    schedule: { type: 'dates', dates: [] },
    callback: callback('https://alerts.example.com/chime'),
    retry: { ...RETRY, maxAttempts: 8 },
    payload: null,
    next_run_at: null,
    last_run_at: null,
  });
  d.notification_endpoints.push({
    id: randomUUID(),
    tenant_id: tenantId,
    url: 'https://alerts.example.com/chime',
    events: ['run.failed', 'job.paused'],
    description: 'on-call',
    job_id: hidden,
    created_at: at(-40_000),
  });

  // Waiting: due now, due later, retrying after a failure.
  run(d, tenantId, cron, { scheduled_for: at(-1), next_attempt_at: at(-1) });
  run(d, tenantId, cron, { scheduled_for: at(5), next_attempt_at: at(5) });
  const retrying = run(d, tenantId, cron, {
    scheduled_for: at(-10),
    status: 'retrying',
    attempts: 1,
    next_attempt_at: at(1),
    started_at: at(-10),
    response_status: 503,
    error: 'HTTP 503',
  });
  attempt(d, retrying, 1, { response_status: 503, response_body_excerpt: 'unavailable', error_class: 'http', error: 'HTTP 503' });
  // Running under a lease, its attempt not finished yet.
  const running = run(d, tenantId, cron, {
    scheduled_for: at(-15),
    status: 'running',
    attempts: 1,
    lease_owner: 'dispatcher-7f3a',
    lease_expires_at: at(1),
    started_at: at(-1),
  });
  attempt(d, running, 1, { started_at: at(-1), finished_at: null, duration_ms: null, response_status: null, response_body_excerpt: null });
  // Finished: succeeded, dead letter (failed), dismissed dead letter, expired, skipped, canceled.
  const succeeded = run(d, tenantId, cron, {
    scheduled_for: at(-20),
    status: 'succeeded',
    attempts: 1,
    started_at: at(-20),
    finished_at: at(-20),
    response_status: 200,
  });
  attempt(d, succeeded, 1);
  const dead = run(d, tenantId, paused, {
    scheduled_for: at(-300),
    status: 'failed',
    attempts: 3,
    started_at: at(-300),
    finished_at: at(-200),
    response_status: 500,
    error: 'HTTP 500: internal error',
  });
  for (const n of [1, 2, 3])
    attempt(d, dead, n, { response_status: 500, response_body_excerpt: "{'error': 'boom'}", error_class: 'http', error: 'HTTP 500' });
  const dismissed = run(d, tenantId, paused, {
    scheduled_for: at(-400),
    status: 'failed',
    attempts: 1,
    started_at: at(-400),
    finished_at: at(-399),
    error: 'connect ECONNREFUSED',
    dismissed_at: at(-100),
  });
  attempt(d, dismissed, 1, { response_status: null, response_body_excerpt: null, error_class: 'network', error: 'connect ECONNREFUSED' });
  run(d, tenantId, paused, { scheduled_for: at(-500), status: 'expired', finished_at: at(-490) });
  run(d, tenantId, paused, { scheduled_for: at(-510), status: 'skipped', finished_at: at(-510) });
  run(d, tenantId, canceled, { scheduled_for: at(30), status: 'canceled', finished_at: at(-2) });
  const once1 = run(d, tenantId, once, {
    scheduled_for: at(-30),
    status: 'succeeded',
    attempts: 1,
    started_at: at(-30),
    finished_at: at(-30),
    response_status: 204,
  });
  attempt(d, once1, 1, { response_status: 204, response_body_excerpt: '', sent: true });
  // Triggered by hand and replayed: runs outside the schedule.
  const manual = run(d, tenantId, cron, { scheduled_for: at(-20), trigger: 'manual', next_attempt_at: at(-20), payload: { by: 'hand' } });
  run(d, tenantId, cron, { scheduled_for: at(-300), trigger: 'replay', next_attempt_at: at(-2) });
  // The notification endpoint's deliveries.
  const delivered = run(d, tenantId, hidden, {
    trigger: 'notification',
    status: 'succeeded',
    scheduled_for: at(-199),
    attempts: 1,
    started_at: at(-199),
    finished_at: at(-199),
    response_status: 200,
    payload: { type: 'run.failed', data: { runId: dead } },
    event_id: randomUUID(),
  });
  attempt(d, delivered, 1);
  run(d, tenantId, hidden, {
    trigger: 'notification',
    status: 'retrying',
    scheduled_for: at(-3),
    attempts: 2,
    next_attempt_at: at(2),
    payload: { type: 'job.paused', data: { jobId: paused } },
    event_id: randomUUID(),
  });

  idempotencyKey(d, tenantId, 'create-nightly-report', { job_id: cron });
  idempotencyKey(d, tenantId, 'trigger-2031-03-01', { run_id: manual });
  idempotencyKey(d, tenantId, 'create-welcome', { job_id: once, created_at: at(-2000) });
}

/** A smaller tenant: a key, a secret, two jobs with a few runs and attempts. */
function smallTenant(d: Data, tenantId: string, i: number): void {
  tenant(d, tenantId, `tenant ${i}`);
  apiKey(d, tenantId);
  signingSecret(d, tenantId);
  for (let j = 0; j < 2; j++) {
    const jobId = job(d, tenantId, { key: `job-${j}`, metadata: { i, j } });
    const ok = run(d, tenantId, jobId, { scheduled_for: at(-10), status: 'succeeded', attempts: 1, finished_at: at(-10) });
    attempt(d, ok, 1);
    const failed = run(d, tenantId, jobId, {
      scheduled_for: at(-20),
      status: 'failed',
      attempts: 2,
      finished_at: at(-18),
      error: 'timeout',
    });
    attempt(d, failed, 1, { response_status: null, error_class: 'timeout', error: 'timeout' });
    attempt(d, failed, 2, { response_status: null, error_class: 'timeout', error: 'timeout' });
    run(d, tenantId, jobId, { scheduled_for: at(j), next_attempt_at: at(j) });
  }
  idempotencyKey(d, tenantId, `k-${i}`);
}

/**
 * The data: three busy tenants whose ids put them in buckets 63, 42 and 0 (the last two with the high bit of their
 * last 32 bits set, which a signed 32-bit cast in SQL would get wrong), and 13 more with v7 and v4 ids.
 */
function buildData(): Data {
  const d = emptyData();
  fullTenant(d, '0190f4c2-0000-7000-8000-0000000000ff', 'Acme');
  fullTenant(d, '0190f4c2-0001-7000-8000-00008000002a', "O'Brien & Co");
  fullTenant(d, '0190f4c2-0002-4000-8000-0000ffffffc0', 'Globex');
  const gen = new IdGenerator();
  for (let i = 0; i < 13; i++) smallTenant(d, i % 2 === 0 ? gen.next() : randomUUID(), i);
  d.jwt_keys.push({
    kid: 'k-2031-01',
    alg: 'EdDSA',
    public_jwk: { kty: 'OKP', crv: 'Ed25519', x: randomBytes(32).toString('base64url') },
    private_jwk_enc: `v1.${randomBytes(64).toString('base64url')}`,
    created_at: at(-80_000),
    retired_at: null,
  });
  return d;
}

// ---------------------------------------------------------------------------------------------------------------
// What is compared before and after.

/**
 * Per table: its columns, row count and the sorted digests of its rows (md5 of the row as JSON, without `shard`).
 * With `before`, the digests leave out the columns `before` did not have: the ones later migrations add (filled by
 * their defaults), so that the rows of 0012 are compared column for column; and a leased run's `next_attempt_at`,
 * which 0021_claim_hot sets (checked on its own below).
 */
type Contents = Record<string, { columns: string[]; count: number; digests: string[] }>;

async function contents(conn: Conn, before?: Contents): Promise<Contents> {
  const out: Contents = {};
  for (const table of ALL_TABLES) {
    const columns = (
      await conn.rows<{ c: string }>(
        `select column_name as c from information_schema.columns where table_schema = 'public' and table_name = '${table}' order by 1`,
      )
    ).map((r) => r.c);
    const added = before ? columns.filter((c) => c !== 'shard' && !before[table]!.columns.includes(c)) : [];
    const without = ['shard', ...added].map((c) => `'${c}'`).join(', ');
    const [c] = await conn.rows<{ n: number }>(`select count(*)::int as n from "${table}"`);
    const placed = table === 'runs' ? ` - (case when t.status = 'running' then 'next_attempt_at' else '' end)` : '';
    const ds = await conn.rows<{ d: string }>(
      `select md5((to_jsonb(t) - array[${without}]${placed})::text) as d from "${table}" t order by 1`,
    );
    out[table] = { columns, count: Number(c!.n), digests: ds.map((r) => r.d) };
  }
  return out;
}

/** Primary key constraint name → its table and columns in key order (from pg_constraint and pg_index). */
async function primaryKeys(conn: Conn): Promise<Record<string, string>> {
  const rows = await conn.rows<{ name: string; tbl: string; cols: string }>(`
    select c.conname as name, c.conrelid::regclass::text as tbl,
           (select string_agg(a.attname, ',' order by k.ord)
              from unnest(i.indkey) with ordinality as k(attnum, ord)
              join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum) as cols
      from pg_constraint c
      join pg_index i on i.indexrelid = c.conindid and i.indisprimary
     where c.contype = 'p' and c.connamespace = 'public'::regnamespace`);
  return Object.fromEntries(rows.map((r) => [r.name, `${r.tbl}(${r.cols})`]));
}

/** Non-internal triggers on public tables. */
const triggers = (conn: Conn) =>
  conn.rows<{ tgname: string }>(`
    select t.tgname from pg_trigger t join pg_class c on c.oid = t.tgrelid
     where c.relnamespace = 'public'::regnamespace and not t.tgisinternal order by 1`);

/** Foreign keys on public tables. */
const foreignKeys = (conn: Conn) =>
  conn.rows<{ conname: string }>(
    `select conname from pg_constraint where contype = 'f' and connamespace = 'public'::regnamespace order by 1`,
  );

/** The functions of the public schema that migrations made (not those of extensions: pg_trgm, btree_gin). */
const OWN_FUNCTIONS = `
  select p.proname from pg_proc p
   where p.pronamespace = 'public'::regnamespace
     and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')`;

/** Every index definition and constraint of the public schema: what a no-op migration must leave as it was. */
const catalog = (conn: Conn) =>
  conn.rows<{ def: string }>(`
    select indexdef as def from pg_indexes where schemaname = 'public'
    union all
    select conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) from pg_constraint where connamespace = 'public'::regnamespace
    union all
    select 'function ' || proname from (${OWN_FUNCTIONS}) f
    order by 1`);

const appliedMigrations = async (conn: Conn) =>
  Number((await conn.rows<{ n: number }>(`select count(*)::int as n from drizzle.__drizzle_migrations`))[0]!.n);

// Chime runs on Citus from 0013 on: a 0012 database has the foreign keys and triggers Citus refuses.
describe.each(DATABASE_TARGETS.filter((t) => t.kind !== 'citus'))(
  'migration 0013 (tenant shard key) on a filled 0012 database, on $kind',
  (target) => {
    let fresh: FreshDatabase;
    let conn: Conn;
    let folder: string;
    let journalLength: number;
    let before: Contents;
    let after: Contents;
    let catalogBefore: {
      primaryKeys: Record<string, string>;
      triggers: string[];
      foreignKeys: string[];
      shardColumns: number;
      migrations: number;
    };

    beforeAll(async () => {
      const journal = JSON.parse(await readFile(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as Journal;
      journalLength = journal.entries.length;
      expect(journal.entries.find((e) => e.idx === BEFORE_SHARD_IDX)?.tag).toBe(BEFORE_SHARD_TAG);
      expect(journal.entries.find((e) => e.idx === BEFORE_SHARD_IDX + 1)?.tag).toBe(SHARD_TAG);

      folder = await migrationsUpTo(BEFORE_SHARD_IDX);
      fresh = await freshDatabase(target);
      conn = await connect(target, fresh);
      await conn.migrateFrom(folder);

      const data = buildData();
      await conn.script(ALL_TABLES.map((t) => insert(t, data[t])).join('\n'));

      before = await contents(conn);
      catalogBefore = {
        primaryKeys: await primaryKeys(conn),
        triggers: (await triggers(conn)).map((r) => r.tgname),
        foreignKeys: (await foreignKeys(conn)).map((r) => r.conname),
        shardColumns: (await conn.rows(`select 1 from information_schema.columns where table_schema = 'public' and column_name = 'shard'`))
          .length,
        migrations: await appliedMigrations(conn),
      };
      // Every row went in: the data is what the checks below run over.
      for (const t of ALL_TABLES) expect({ t, n: before[t]!.count }).toEqual({ t, n: data[t].length });

      await conn.migrateAsTheService();
      after = await contents(conn, before);
    });

    afterAll(async () => {
      await conn?.close();
      await fresh?.drop();
      if (folder) await rm(folder, { recursive: true, force: true });
    });

    it('starts from 0012 as it was: 13 migrations applied, no shard column, primary keys on id, the cascade triggers and foreign keys in place', () => {
      expect(catalogBefore.migrations).toBe(BEFORE_SHARD_IDX + 1);
      expect(catalogBefore.shardColumns).toBe(0);
      expect(catalogBefore.primaryKeys).toMatchObject({
        runs_pkey: 'runs(id)',
        attempts_pkey: 'attempts(run_id,attempt)',
        tenants_pkey: 'tenants(id)',
      });
      expect(catalogBefore.triggers).toEqual(['jobs_delete_runs', 'runs_delete_attempts', 'tenants_delete_jobs']);
      expect(catalogBefore.foreignKeys).toEqual([
        'api_keys_tenant_id_tenants_id_fk',
        'idempotency_keys_tenant_id_tenants_id_fk',
        'notification_endpoints_tenant_id_tenants_id_fk',
        'signing_secrets_tenant_id_tenants_id_fk',
      ]);
    });

    it('applies every migration of the journal', async () => {
      expect(await appliedMigrations(conn)).toBe(journalLength);
    });

    it('loses no row: every table has as many rows as before', () => {
      expect(Object.fromEntries(ALL_TABLES.map((t) => [t, after[t]!.count]))).toEqual(
        Object.fromEntries(ALL_TABLES.map((t) => [t, before[t]!.count])),
      );
    });

    it('changes no row: every row but its new shard column is as it was', () => {
      for (const t of ALL_TABLES) expect({ t, digests: after[t]!.digests }).toEqual({ t, digests: before[t]!.digests });
    });

    it('adds shard as a NOT NULL smallint to every tenant-owned table, and to no other', async () => {
      const rows = await conn.rows<{ table_name: string; data_type: string; is_nullable: string }>(`
      select table_name, data_type, is_nullable from information_schema.columns
       where table_schema = 'public' and column_name = 'shard' order by table_name`);
      expect(rows.map((r) => ({ ...r }))).toEqual(
        // After every migration: the later tenant-owned tables carry shard too.
        [...DISTRIBUTED_TABLES].sort().map((table_name) => ({ table_name, data_type: 'smallint', is_nullable: 'NO' })),
      );
    });

    it("sets every tenant-owned row's shard to shardOf(its tenant id), computed in JS", async () => {
      const wrong: unknown[] = [];
      let checked = 0;
      const tenantShards = new Set<number>();
      for (const t of TENANT_TABLES) {
        const rows =
          t === 'attempts'
            ? await conn.rows<{ tenant: string | null; shard: number; row: string }>(
                `select r.tenant_id::text as tenant, a.shard, a.run_id || '#' || a.attempt as row
                 from attempts a left join runs r on r.id = a.run_id`,
              )
            : await conn.rows<{ tenant: string; shard: number; row: string }>(
                `select ${t === 'tenants' ? 'id' : 'tenant_id'}::text as tenant, shard, ctid::text as row from "${t}"`,
              );
        for (const r of rows) {
          checked++;
          if (r.tenant === null || Number(r.shard) !== shardOf(r.tenant)) wrong.push({ table: t, ...r });
          if (t === 'tenants') tenantShards.add(Number(r.shard));
        }
      }
      expect(wrong).toEqual([]);
      expect(checked).toBe(TENANT_TABLES.reduce((n, t) => n + before[t]!.count, 0));
      // The data covers several buckets, the three chosen ones among them.
      expect([63, 42, 0].every((s) => tenantShards.has(s))).toBe(true);
      expect(tenantShards.size).toBeGreaterThanOrEqual(5);
    });

    it('makes the primary keys (shard, id), and (shard, run_id, attempt) for attempts', async () => {
      expect(await primaryKeys(conn)).toEqual({
        tenants_pkey: 'tenants(shard,id)',
        api_keys_pkey: 'api_keys(shard,id)',
        signing_secrets_pkey: 'signing_secrets(shard,id)',
        notification_endpoints_pkey: 'notification_endpoints(shard,id)',
        jobs_pkey: 'jobs(shard,id)',
        runs_pkey: 'runs(shard,id)',
        attempts_pkey: 'attempts(shard,run_id,attempt)',
        jwt_keys_pkey: 'jwt_keys(kid)',
        // Made by later migrations (0015, 0016, 0018), shard first as every tenant-owned table's.
        audit_log_pkey: 'audit_log(shard,id)',
        tenant_callbacks_pkey: 'tenant_callbacks(shard,tenant_id,day)',
        flow_controls_pkey: 'flow_controls(shard,id)',
        calendars_pkey: 'calendars(shard,id)',
        open_jobs_pkey: 'open_jobs(shard,tenant_id,job_id)',
        api_processes_pkey: 'api_processes(id)',
      });
    });

    it('lists in open_jobs (0020) exactly the jobs that were active or paused, of kind callback', async () => {
      const listed = await conn.rows<{ shard: number; tenant_id: string; job_id: string }>(
        'select shard, tenant_id::text, job_id::text from open_jobs order by job_id',
      );
      const open = await conn.rows<{ shard: number; tenant_id: string; job_id: string }>(
        `select shard, tenant_id::text, id::text as job_id from jobs where status in ('active', 'paused') and kind = 'callback' order by id`,
      );
      expect(open.length).toBeGreaterThan(0);
      expect(listed.map((r) => ({ ...r, shard: Number(r.shard) }))).toEqual(open.map((r) => ({ ...r, shard: Number(r.shard) })));
    });

    it('puts the leased run where the reaper looks: due at its start (0021_claim_hot)', async () => {
      const leased = await conn.rows<{ due: string | null; started: string }>(
        `select next_attempt_at::text as due, started_at::text as started from runs where status = 'running' and lease_expires_at is not null`,
      );
      expect(leased.length).toBeGreaterThan(0);
      for (const r of leased) expect(r.due).toBe(r.started);
    });

    it('leads runs_due_idx with shard, over waiting and leased runs (a due time)', async () => {
      const [idx] = await conn.rows<{ lead: string; cols: string; partial: boolean; def: string }>(`
      select (select a.attname from pg_attribute a where a.attrelid = i.indrelid and a.attnum = i.indkey[0]) as lead,
             (select string_agg(a.attname, ',' order by k.ord)
                from unnest(i.indkey) with ordinality as k(attnum, ord)
                join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum) as cols,
             i.indpred is not null as partial, pg_get_indexdef(i.indexrelid) as def
        from pg_index i where i.indexrelid = 'public.runs_due_idx'::regclass`);
      expect(idx).toBeDefined();
      expect({ lead: idx!.lead, cols: idx!.cols, partial: idx!.partial }).toEqual({
        lead: 'shard',
        cols: 'shard,next_attempt_at',
        partial: true,
      });
      expect(idx!.def).toMatch(/WHERE \(next_attempt_at IS NOT NULL\)/);
    });

    it('leaves no trigger and no foreign key on the public tables, and drops the trigger functions', async () => {
      expect(await triggers(conn)).toEqual([]);
      expect(await foreignKeys(conn)).toEqual([]);
      const functions = await conn.rows<{ proname: string }>(`${OWN_FUNCTIONS} order by 1`);
      expect(functions.map((f) => f.proname)).toEqual(['chime_shard_of']);
    });

    it('is a no-op when migrated again: no migration recorded, catalog and rows unchanged', async () => {
      const catalogAfter = await catalog(conn);
      await conn.migrateAsTheService();
      expect(await appliedMigrations(conn)).toBe(journalLength);
      expect(await catalog(conn)).toEqual(catalogAfter);
      expect(await contents(conn, before)).toEqual(after);
      const shards = await conn.rows<{ n: number }>(`select count(*)::int as n from runs where shard <> chime_shard_of(tenant_id)`);
      expect(Number(shards[0]!.n)).toBe(0);
    });
  },
);
