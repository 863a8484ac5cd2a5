/**
 * The main job end to end, as a new user meets it: the real process (`npm start`'s command), real HTTP, a real
 * receiver on 127.0.0.1, on the embedded database and on PostgreSQL.
 */
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { type FreshDatabase, freshDatabase, WITH_CITUS } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

describe.each(WITH_CITUS)('walking skeleton on $kind', (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let receiver: Receiver;
  let tenant: TestTenant;

  beforeAll(async () => {
    db = await freshDatabase(target);
    chime = await startChime(db.env);
    receiver = await startReceiver((r) => (r.path.startsWith('/fail') ? { status: 500, body: 'boom' } : { status: 200 }));
    tenant = await createTestTenant(chime.url, 'acme');
  });
  afterAll(async () => {
    const code = await chime?.stop();
    await receiver?.close();
    await db?.drop();
    expect(code).toBe(0); // SIGTERM drains and exits 0
  });

  it('fires a once job one time, at its time, with both signatures verifiable by receivers', async () => {
    const at = new Date(Date.now() + 1500).toISOString();
    const created = await tenant.api.post('/v1/jobs', {
      name: 'report',
      schedule: { type: 'once', at },
      callback: { url: `${receiver.url}/ok/once`, authToken: 's3cr3t', headers: { 'X-Team': 'ops' } },
      payload: { report: 'nightly' },
    });
    expect(created.status).toBe(201);
    expect(created.body.callback).toMatchObject({ hasAuthToken: true });
    expect(created.body.callback.authToken).toBeUndefined();
    expect(created.body.nextRunAt).toBe(at);
    const jobId = created.body.jobId;

    const runs = await eventually(
      async () => {
        const r = await tenant.api.get(`/v1/jobs/${jobId}/runs`);
        return r.body.runs[0]?.status === 'succeeded' ? r.body.runs : undefined;
      },
      { what: 'the run to succeed' },
    );
    const hits = receiver.received.filter((r) => r.path === '/ok/once');
    expect(hits).toHaveLength(1);
    const hit = hits[0]!;
    expect(hit.at).toBeGreaterThanOrEqual(Date.parse(at));
    expect(JSON.parse(hit.body)).toEqual({ report: 'nightly' });
    expect(hit.headers.authorization).toBe('Bearer s3cr3t');
    expect(hit.headers['x-team']).toBe('ops');
    expect(hit.headers['webhook-id']).toBe(runs[0].runId);
    expect(hit.headers['chime-job-id']).toBe(jobId);
    expect(hit.headers['chime-scheduled-for']).toBe(at);

    // Standard Webhooks, with the receivers' own library.
    const wh = new Webhook(tenant.signingSecret);
    expect(() => wh.verify(hit.body, hit.headers as Record<string, string>)).not.toThrow();
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(hit.body, hit.headers as Record<string, string>),
    ).toThrow();

    // Chime-Signature, with jose and the published JWKS.
    const jwks = createRemoteJWKSet(new URL(`${chime.url}/.well-known/jwks.json`));
    const { payload, protectedHeader } = await jwtVerify(hit.headers['chime-signature'] as string, jwks, {
      issuer: 'chime',
      subject: `${receiver.url}/ok/once`,
    });
    expect(protectedHeader.alg).toBe('EdDSA');
    expect(payload.body).toBe(createHash('sha256').update(hit.body).digest('base64url'));

    const job = await tenant.api.get(`/v1/jobs/${jobId}`);
    expect(job.body.status).toBe('completed');

    // The success is the one entry of the run's attempt log, timed to the millisecond.
    const detail = (await tenant.api.get(`/v1/runs/${runs[0].runId}`)).body;
    expect(detail.attemptLog).toEqual([
      expect.objectContaining({ attempt: 1, responseStatus: 200, errorClass: null, error: null, finishedAt: detail.finishedAt }),
    ]);
    const [a] = detail.attemptLog;
    expect(Date.parse(a.finishedAt) - Date.parse(a.startedAt)).toBe(a.durationMs);
    expect(Date.parse(a.startedAt)).toBeGreaterThanOrEqual(Date.parse(at));
  });

  it('retries a failing receiver with backoff, then dead-letters the run with every attempt logged', async () => {
    const created = await tenant.api.post('/v1/jobs', {
      schedule: { type: 'delay', delayMs: 0 },
      callback: { url: `${receiver.url}/fail/retry` },
      retry: { strategy: 'exponential', maxAttempts: 3, initialDelayMs: 300, multiplier: 2, jitter: false },
    });
    expect(created.status).toBe(201);
    const jobId = created.body.jobId;
    const run = await eventually(
      async () => {
        const r = await tenant.api.get(`/v1/jobs/${jobId}/runs`);
        return r.body.runs[0]?.status === 'failed' ? r.body.runs[0] : undefined;
      },
      { what: 'the run to fail' },
    );

    const hits = receiver.received.filter((r) => r.path === '/fail/retry');
    expect(hits).toHaveLength(3);
    expect(new Set(hits.map((h) => h.headers['webhook-id']))).toEqual(new Set([run.runId]));
    expect(hits.map((h) => h.headers['chime-attempt'])).toEqual(['1', '2', '3']);
    // Spaced by the backoff: 300 ms, then 600 ms (no jitter).
    expect(hits[1]!.at - hits[0]!.at).toBeGreaterThanOrEqual(300 - 5);
    expect(hits[2]!.at - hits[1]!.at).toBeGreaterThanOrEqual(600 - 5);

    const detail = await tenant.api.get(`/v1/runs/${run.runId}`);
    expect(detail.status).toBe(200);
    expect(detail.body.status).toBe('failed');
    expect(detail.body.attempts).toBe(3);
    expect(detail.body.attemptLog).toHaveLength(3);
    for (const [i, a] of detail.body.attemptLog.entries()) {
      expect(a).toMatchObject({ attempt: i + 1, responseStatus: 500, responseBodyExcerpt: 'boom', errorClass: 'bad_status' });
      expect(a.durationMs).toBeGreaterThanOrEqual(0);
    }
    const dead = await tenant.api.get('/v1/dead-letters');
    expect(dead.body.runs.map((r: { runId: string }) => r.runId)).toContain(run.runId);
  });

  it("answers 404 to another tenant's job, runs and run, and lists none of them", async () => {
    const created = await tenant.api.post('/v1/jobs', {
      schedule: { type: 'delay', delayMs: 3_600_000 },
      callback: { url: `${receiver.url}/ok/isolated` },
    });
    const jobId = created.body.jobId;
    const runs = await tenant.api.get(`/v1/jobs/${jobId}/runs`);
    const runId = runs.body.runs[0].runId;

    const other = await createTestTenant(chime.url, 'other');
    for (const path of [`/v1/jobs/${jobId}`, `/v1/jobs/${jobId}/runs`, `/v1/runs/${runId}`]) {
      const r = await other.api.get(path);
      expect(r.status, path).toBe(404);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
    }
    expect((await other.api.get('/v1/jobs')).body.jobs).toEqual([]);
    expect((await tenant.api.get(`/v1/jobs/${jobId}`)).status).toBe(200);
  });

  it('refuses a request without a valid API key with 401 problem+json', async () => {
    const r = await fetch(`${chime.url}/v1/jobs`, { headers: { authorization: 'Bearer chk_nope' } });
    expect(r.status).toBe(401);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(await r.json()).toMatchObject({ status: 401, type: 'urn:chime:problem:unauthorized' });
  });
});
