/**
 * Chime on a Citus cluster (a coordinator and two workers, started here with ../shared/citus): `chime migrate`
 * distributes the tenant tables by the shard key and makes `jwt_keys` a reference table, twice without harm; the real
 * process (every role) serves the main flow against the coordinator (a tenant, a job, its callback delivered with
 * both signatures verifiable, the run history); and the claim statement is routed to one shard.
 * Runs with CHIME_TEST_CITUS=1 (.ci/run sets it where ../shared/citus is there and installs it); elsewhere it
 * skips, saying so.
 */
import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardOf } from '../../src/domain/shard.ts';
import { DISTRIBUTED_TABLES, REFERENCE_TABLES } from '../../src/store/citus.ts';
import { query, queryPlanned } from '../../src/store/db.ts';
import { openPostgres } from '../../src/store/postgres.ts';
import { CLAIM_PLAN, claimStatement } from '../../src/store/queue/claim-runs.ts';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { spawnChime } from '../support/build.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { CITUS_TESTS, type CitusCluster, startCitusCluster } from '../support/citus.ts';
import { TEST_ENCRYPTION_KEY } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

if (!CITUS_TESTS) console.warn('test/citus: skipped, CHIME_TEST_CITUS is not 1 (set it to start a Citus cluster with ../shared/citus)');

/** Runs `chime migrate` with `env`; resolves with its exit code and output. */
function migrate(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const child = spawnChime(['migrate'], env);
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out })));
}

describe.runIf(CITUS_TESTS)('Chime on a Citus cluster (coordinator + 2 workers)', () => {
  let cluster: CitusCluster;
  let env: Record<string, string>;
  let chime: ChimeProcess;
  let receiver: Receiver;
  let tenant: TestTenant;

  beforeAll(async () => {
    cluster = await startCitusCluster(2);
    env = { DATABASE_URL: cluster.url, CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, CHIME_MIGRATE: 'true' };
    receiver = await startReceiver(() => ({ status: 200 }));
  }, 180_000);
  afterAll(async () => {
    const code = await chime?.stop();
    await receiver?.close();
    await cluster?.stop();
    if (chime) expect(code).toBe(0);
  });

  it('migrates twice: tenant tables distributed by shard and colocated, jwt_keys a reference table', async () => {
    for (let i = 0; i < 2; i++) {
      const { code, out } = await migrate(env);
      expect(code, out).toBe(0);
    }
    const database = openPostgres(cluster.url, { max: 1 });
    try {
      const tables = await query<{
        table_name: string;
        citus_table_type: string;
        distribution_column: string;
        colocation_id: number;
        shard_count: number;
      }>(
        database.db,
        sql`select table_name::text, citus_table_type, distribution_column, colocation_id::int, shard_count::int from citus_tables`,
      );
      const byName = new Map(tables.map((t) => [t.table_name, t]));
      const colocation = byName.get('tenants')?.colocation_id;
      for (const t of DISTRIBUTED_TABLES) {
        expect(byName.get(t), t).toMatchObject({
          citus_table_type: 'distributed',
          distribution_column: 'shard',
          colocation_id: colocation,
          shard_count: 32,
        });
      }
      for (const t of REFERENCE_TABLES) expect(byName.get(t), t).toMatchObject({ citus_table_type: 'reference' });
      expect(tables).toHaveLength(DISTRIBUTED_TABLES.length + REFERENCE_TABLES.length);
    } finally {
      await database.close();
    }
  }, 120_000);

  it('serves the main flow from the coordinator: tenant, job, signed delivery, run history', async () => {
    chime = await startChime(env);
    tenant = await createTestTenant(chime.url, 'acme');
    const at = new Date(Date.now() + 1500).toISOString();
    const created = await tenant.api.post('/v1/jobs', {
      name: 'report',
      schedule: { type: 'once', at },
      callback: { url: `${receiver.url}/ok/once`, authToken: 's3cr3t' },
      payload: { report: 'nightly' },
    });
    expect(created.status).toBe(201);
    const jobId = created.body.jobId;

    const runs = await eventually(
      async () => {
        const r = await tenant.api.get(`/v1/jobs/${jobId}/runs`);
        return r.body.runs[0]?.status === 'succeeded' ? r.body.runs : undefined;
      },
      { what: 'the run to succeed', timeoutMs: 20_000 },
    );
    const hits = receiver.received.filter((r) => r.path === '/ok/once');
    expect(hits).toHaveLength(1);
    const hit = hits[0]!;
    expect(hit.at).toBeGreaterThanOrEqual(Date.parse(at));
    expect(JSON.parse(hit.body)).toEqual({ report: 'nightly' });
    expect(hit.headers.authorization).toBe('Bearer s3cr3t');
    expect(hit.headers['webhook-id']).toBe(runs[0].runId);

    // Standard Webhooks with the tenant's secret, and Chime-Signature with the published JWKS (jwt_keys, a reference table).
    expect(() => new Webhook(tenant.signingSecret).verify(hit.body, hit.headers as Record<string, string>)).not.toThrow();
    const jwks = createRemoteJWKSet(new URL(`${chime.url}/.well-known/jwks.json`));
    const { payload } = await jwtVerify(hit.headers['chime-signature'] as string, jwks, {
      issuer: 'chime',
      subject: `${receiver.url}/ok/once`,
    });
    expect(payload.body).toBe(createHash('sha256').update(hit.body).digest('base64url'));

    const detail = await tenant.api.get(`/v1/runs/${runs[0].runId}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(detail.body.attemptLog).toHaveLength(1);
    expect(detail.body.attemptLog[0]).toMatchObject({ attempt: 1, responseStatus: 200 });
    expect((await tenant.api.get(`/v1/jobs/${jobId}`)).body.status).toBe('completed');
  }, 60_000);

  it('routes the claim statement to one shard (EXPLAIN: Task Count: 1)', async () => {
    const database = openPostgres(cluster.url, { max: 1 });
    try {
      const shard = shardOf(tenant.tenantId);
      const plan = await database.db.transaction(async (tx) => {
        const statement = claimStatement({ owner: 'explain', limit: 100, nowMs: Date.now(), leaseMarginMs: 30_000, shard });
        return queryPlanned<{ 'QUERY PLAN': string }>(tx, CLAIM_PLAN, sql`explain ${statement}`);
      });
      const text = plan.map((r) => r['QUERY PLAN']).join('\n');
      expect(text, text).toMatch(/Task Count: 1\b/);
      expect(text, text).not.toMatch(/Task Count: (?!1\b)\d+/);
    } finally {
      await database.close();
    }
  });
});
