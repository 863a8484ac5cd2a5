/**
 * Migrations under the operator's control (README "Database roles and migrations"): on PostgreSQL `chime serve`
 * migrates only when told to (`--migrate`, `CHIME_MIGRATE=true`) and otherwise refuses a schema that is behind, naming
 * `chime migrate`; `chime migrate --status` lists each migration applied or pending; and the API and a dispatcher run
 * under a role that has only SELECT, INSERT, UPDATE and DELETE on Chime's tables (the README's GRANTs, word for word),
 * while the role that owns the schema migrates. The embedded database keeps migrating by itself.
 */
import { readFileSync } from 'node:fs';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { committedMigrations } from '../../src/store/migrate.ts';
import { createTestTenant } from '../support/api.ts';
import { type ChimeProcess, killAll, startChime } from '../support/chime-process.ts';
import { runChime } from '../support/chime-run.ts';
import { type FreshDatabase, freshDatabase, TEST_ENCRYPTION_KEY } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { startReceiver } from '../support/receiver.ts';

const ADMIN_URL = process.env.TEST_DATABASE_URL;
const TAGS = committedMigrations().map((m) => m.tag);
const show = (run: { code: number | null; stdout: string; stderr: string }) =>
  `exit ${run.code}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;

/** The SQL of README's "Database roles and migrations" block that grants the service role its privileges. */
function readmeGrants(): string {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('**Database roles and migrations.**'));
  const block = /```sql\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('README: no sql block under "Database roles and migrations"');
  return block[1]!;
}

describe('migrations on the embedded database', () => {
  const dbs: FreshDatabase[] = [];
  afterAll(async () => {
    for (const db of dbs) await db.drop();
  });

  it('serve migrates by itself; CHIME_MIGRATE=false refuses a fresh folder; --status lists every migration applied', async () => {
    const db = await freshDatabase({ kind: 'pglite' });
    dbs.push(db);
    const refused = await runChime({ ...db.env, CHIME_MIGRATE: 'false', PORT: '0' }, ['serve']);
    expect(refused.code, show(refused)).toBe(1);
    expect(refused.stderr).toMatch(/^chime: the database schema is \d+ migrations behind .*run `chime migrate`/);

    const chime = await startChime(db.env);
    expect(await chime.stop()).toBe(0);
    const status = await runChime(db.env, ['migrate', '--status']);
    expect(status.code, show(status)).toBe(0);
    expect(status.stdout).toBe(`${TAGS.map((t) => `applied  ${t}`).join('\n')}\n${TAGS.length} applied, 0 pending\n`);
  }, 120_000);
});

describe.runIf(ADMIN_URL)('migrations on PostgreSQL, by the operator', () => {
  const suffix = `${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const owner = `chime_owner_${suffix}`;
  const service = `chime_service_${suffix}`;
  const database = `chime_roles_${suffix}`;
  const procs: [string, ChimeProcess][] = [];
  let fresh: FreshDatabase | undefined;
  const admin = postgres(ADMIN_URL ?? '', { max: 1, onnotice: () => {} });
  const urlOf = (user: string, db: string) => {
    const u = new URL(ADMIN_URL!);
    u.username = user;
    u.password = '';
    u.pathname = `/${db}`;
    return u.toString();
  };

  afterAll(async () => {
    await killAll(procs);
    await fresh?.drop();
    await admin.unsafe(`drop database if exists ${database} with (force)`);
    await admin.unsafe(`drop role if exists ${service}`);
    await admin.unsafe(`drop role if exists ${owner}`);
    await admin.end();
  });

  it('serve refuses a schema that is behind, naming chime migrate; --status lists the pending; after chime migrate it starts', async () => {
    fresh = await freshDatabase({ kind: 'postgres' });
    const env = { DATABASE_URL: fresh.url!, CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, PORT: '0' };
    const refused = await runChime(env, ['serve', '--role', 'dispatcher']);
    expect(refused.code, show(refused)).toBe(1);
    expect(refused.stderr).toBe(
      `chime: the database schema is ${TAGS.length} migrations behind this version of Chime (pending: ${TAGS.join(', ')}); ` +
        'run `chime migrate` as the role that owns the schema, or start with --migrate\n',
    );

    const before = await runChime(env, ['migrate', '--status']);
    expect(before.stdout, show(before)).toBe(
      `${TAGS.map((t) => `pending  ${t}`).join('\n')}\n0 applied, ${TAGS.length} pending: run \`chime migrate\`\n`,
    );
    // --status changes nothing: serve still refuses.
    expect((await runChime(env, ['serve'])).code).toBe(1);

    const migrated = await runChime(env, ['migrate']);
    expect(migrated.code, show(migrated)).toBe(0);
    const after = await runChime(env, ['migrate', '--status']);
    expect(after.stdout, show(after)).toBe(`${TAGS.map((t) => `applied  ${t}`).join('\n')}\n${TAGS.length} applied, 0 pending\n`);
    const chime = await startChime(env, ['serve', '--role', 'dispatcher']);
    procs.push(['dispatcher on the migrated database', chime]);
    expect(await chime.stop()).toBe(0);
    procs.pop();

    // A database that also has a migration of a later version (expand / contract): this version runs on it.
    const sql = postgres(fresh.url!, { max: 1, onnotice: () => {} });
    await sql`insert into drizzle.__drizzle_migrations (hash, created_at) values ('later', ${Date.UTC(2100, 0, 1)})`;
    await sql.end();
    const newer = await runChime(env, ['migrate', '--status']);
    expect(newer.stdout).toContain(`${TAGS.length} applied, 0 pending; the database also has 1 migration(s) of a later version of Chime`);
    const onNewer = await startChime(env, ['serve', '--role', 'dispatcher']);
    procs.push(['dispatcher on a newer schema', onNewer]);
    expect(await onNewer.stop()).toBe(0);
    procs.pop();
  }, 120_000);

  it('serve --migrate applies the migrations of a fresh database and starts', async () => {
    const other = await freshDatabase({ kind: 'postgres' });
    try {
      const env = { DATABASE_URL: other.url!, CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY };
      const chime = await startChime(env, ['serve', '--role', 'dispatcher', '--migrate']);
      procs.push(['dispatcher with --migrate', chime]);
      expect(await chime.stop()).toBe(0);
      procs.pop();
      const status = await runChime(env, ['migrate', '--status']);
      expect(status.stdout).toMatch(new RegExp(`\\n${TAGS.length} applied, 0 pending\\n$`));
    } finally {
      await other.drop();
    }
  }, 60_000);

  it('the API and a dispatcher run under a role with only SELECT/INSERT/UPDATE/DELETE, granted as the README says', async () => {
    await admin.unsafe(`create role ${owner} login`);
    await admin.unsafe(`create role ${service} login`);
    await admin.unsafe(`create database ${database} owner ${owner}`);
    const ownerEnv = { DATABASE_URL: urlOf(owner, database), CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY };
    const migrated = await runChime(ownerEnv, ['migrate']);
    expect(migrated.code, show(migrated)).toBe(0);

    // The README's GRANTs, run by the owner with the README's role names replaced by this test's.
    const grants = readmeGrants()
      .replaceAll('chime_owner', owner)
      .replaceAll('chime_service', service)
      .replaceAll('DATABASE chime', `DATABASE ${database}`);
    const asOwner = postgres(ownerEnv.DATABASE_URL, { max: 1, onnotice: () => {} });
    await asOwner.unsafe(grants);
    await asOwner.end();
    // The service role can create nothing: the least privilege is real.
    const asService = postgres(urlOf(service, database), { max: 1, onnotice: () => {} });
    await expect(asService.unsafe('create table intruder (id int)')).rejects.toMatchObject({ code: '42501' });
    await asService.end();

    const env = { DATABASE_URL: urlOf(service, database), CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, CHIME_REAP_INTERVAL_MS: '500' };
    const api = await startChime(env, ['serve', '--role', 'api']);
    procs.push(['api (service role)', api]);
    const dispatcher = await startChime(env, ['serve', '--role', 'dispatcher']);
    procs.push(['dispatcher (service role)', dispatcher]);

    const receiver = await startReceiver((r) => ({ status: r.path.startsWith('/fail') ? 500 : 200 }));
    try {
      const tenant = await createTestTenant(api.url, 'least-privilege');
      const ok = await tenant.api.post('/v1/jobs', {
        schedule: { type: 'interval', everyMs: 1000 },
        callback: { url: `${receiver.url}/ok`, authToken: 'sealed-token' },
      });
      expect(ok.status, JSON.stringify(ok.body)).toBe(201);
      const failing = await tenant.api.post('/v1/jobs', {
        schedule: { type: 'delay', delayMs: 0 },
        callback: { url: `${receiver.url}/fail` },
        retry: { strategy: 'none' },
      });
      expect(failing.status, JSON.stringify(failing.body)).toBe(201);
      await eventually(async () => receiver.received.filter((r) => r.path === '/ok').length >= 2 || undefined, { what: 'two callbacks' });
      await eventually(async () => ((await tenant.api.get('/v1/dead-letters')).body.runs?.length ?? 0) > 0 || undefined, {
        what: 'a dead letter',
      });
      // The other writes of a tenant's day: pause, trigger, key and secret rotation, bulk, cancel.
      expect((await tenant.api.request('PATCH', `/v1/jobs/${ok.body.jobId}`, { paused: true })).status).toBe(200);
      expect((await tenant.api.post(`/v1/jobs/${ok.body.jobId}/trigger`, {})).status).toBe(202);
      expect((await tenant.api.post('/v1/api-keys', { name: 'ci' })).status).toBe(201);
      expect((await tenant.api.post('/v1/signing-secrets/rotate', {})).status).toBe(201);
      expect((await tenant.api.post('/v1/jobs/bulk', { action: 'resume', filter: { jobIds: [ok.body.jobId] } })).status).toBe(200);
      expect((await tenant.api.request('DELETE', `/v1/jobs/${ok.body.jobId}`)).status).toBe(204);
      for (const [name, proc] of procs.splice(0)) expect(await proc.stop(), `${name}\n${proc.output()}`).toBe(0);
      for (const out of [api.output(), dispatcher.output()]) expect(out).not.toMatch(/permission denied|42501/);
    } finally {
      await receiver.close();
    }
  }, 120_000);
});
