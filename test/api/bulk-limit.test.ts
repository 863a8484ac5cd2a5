/**
 * The bound of `POST /v1/jobs/bulk` (API.md "Tenant operations": at most 10,000 jobs per call, more → 400): a filter
 * matching more jobs than the bound answers a 400 problem naming `filter` and changes nothing; at the bound it acts.
 * The bound is lowered through `config.maxBulkJobs` to keep the data small; the default is checked once with 10,001
 * jobs written by SQL. In process, on each database target.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BULK_JOBS } from '../../src/store/bulk.ts';
import { query } from '../../src/store/db.ts';
import type { TestTenant } from '../support/api.ts';
import { apiClient, startTestApp, TEST_APP_URL, type TestApp } from '../support/app.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';

const job = (team: string) => ({
  schedule: { type: 'delay', delayMs: 3_600_000 },
  callback: { url: 'http://127.0.0.1:9/hook' },
  metadata: { team },
});

describe.each(DATABASE_TARGETS)('the bulk bound ($kind)', (target) => {
  let app: TestApp;
  let tenant: TestTenant;

  beforeAll(async () => {
    app = await startTestApp({ maxBulkJobs: 3 }, { target });
    tenant = await app.tenant('bulk-bound');
  });
  afterAll(() => app?.close());

  const statuses = async () => ((await tenant.api.get('/v1/jobs?limit=100')).body.jobs as { status: string }[]).map((j) => j.status).sort();

  it('more matching jobs than the bound → 400 naming filter, nothing changed; at the bound the action applies', async () => {
    for (let i = 0; i < 4; i++) expect((await tenant.api.post('/v1/jobs', job('ops'))).status).toBe(201);
    const over = await tenant.api.post('/v1/jobs/bulk', { action: 'pause', filter: { metadata: { team: 'ops' } } });
    expect(over.status).toBe(400);
    expect(over.headers.get('content-type')).toBe('application/problem+json');
    expect(over.body).toMatchObject({ type: 'urn:chime:problem:validation', status: 400 });
    expect(over.body.errors).toEqual([
      { path: 'filter', message: expect.stringMatching(/matches 4 jobs; at most 3 per call.*nothing was changed/) },
    ]);
    expect(await statuses()).toEqual(['active', 'active', 'active', 'active']);

    // One job fewer matches (it is canceled, and the filter asks for active ones): exactly the bound is allowed.
    const first = (await tenant.api.get('/v1/jobs')).body.jobs[0].jobId as string;
    expect((await tenant.api.request('DELETE', `/v1/jobs/${first}`)).status).toBe(204);
    const at = await tenant.api.post('/v1/jobs/bulk', { action: 'pause', filter: { metadata: { team: 'ops' }, status: 'active' } });
    expect(at.status, JSON.stringify(at.body)).toBe(200);
    expect(at.body).toEqual({ matched: 3, changed: 3 });
    expect(await statuses()).toEqual(['canceled', 'paused', 'paused', 'paused']);
  });

  it(`without maxBulkJobs the bound is API.md's ${MAX_BULK_JOBS.toLocaleString('en')}`, async () => {
    expect(MAX_BULK_JOBS).toBe(10_000);
    // The same database under an app configured without the option.
    const plain = apiClient(TEST_APP_URL, tenant.apiKey, (await app.another({ maxBulkJobs: undefined })).fetch);
    const created = await plain.post('/v1/jobs', job('many'));
    expect(created.status).toBe(201);
    // 10,000 copies of it under new ids, by SQL: through the API this would take minutes. In statements of 1,000, so
    // that none comes near the connection's statement_timeout on a loaded machine.
    for (let copied = 0; copied < MAX_BULK_JOBS; copied += 1_000) {
      await app.database.db.execute(sql`insert into jobs
        select (jsonb_populate_record(null::jobs, to_jsonb(j) || jsonb_build_object('id', gen_random_uuid()))).*
        from jobs j, generate_series(1, ${Math.min(1_000, MAX_BULK_JOBS - copied)}) where j.id = ${created.body.jobId}`);
    }
    const over = await plain.post('/v1/jobs/bulk', { action: 'pause', filter: { metadata: { team: 'many' } } });
    expect(over.status).toBe(400);
    expect(over.body.errors).toEqual([
      { path: 'filter', message: expect.stringContaining(`matches ${MAX_BULK_JOBS + 1} jobs; at most ${MAX_BULK_JOBS} per call`) },
    ]);
    const [changed] = await query<{ n: number }>(
      app.database.db,
      sql`select count(*)::int as n from jobs where metadata->>'team' = 'many' and status <> 'active'`,
    );
    expect(changed!.n).toBe(0);
  }, 120_000);
});
