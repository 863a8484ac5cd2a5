/**
 * @chime/client against the real API over HTTP (`startTestApp().listen()`, @hono/node-server), on each database
 * target: every method once with its effect checked through the client or by SQL, pagination across pages, errors
 * as ChimeError, idempotency keys, and the bounded retries of 429/503 (a fetch wrapper that answers in the server's
 * stead, and the real per-tenant rate limit).
 */

import {
  type ChimeClient,
  ChimeError,
  createChimeClient,
  type FetchLike,
  type JobInput,
  parseRetryAfter,
  type RetryOptions,
} from '@chime/client';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCipher } from '../../src/store/cipher.ts';
import { completionToken } from '../../src/store/completion-token.ts';
import { query } from '../../src/store/db.ts';
import type { TestTenant } from '../support/api.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { ADMIN_TOKEN } from '../support/chime-process.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A job that never fires during the test (no dispatcher runs anyway). */
const jobBody = (extra: Partial<JobInput> = {}): JobInput => ({
  schedule: { type: 'delay', delayMs: 3_600_000 },
  callback: { url: 'http://127.0.0.1:9/hook' },
  ...extra,
});

/** The rejection of `p`, which must be a ChimeError. */
async function chimeError(p: Promise<unknown>): Promise<ChimeError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ChimeError);
  return err as ChimeError;
}

/** A fetch that records every request it passes to the real one. */
function recordingFetch(): { fetch: FetchLike; requests: Request[] } {
  const requests: Request[] = [];
  return {
    requests,
    fetch: (req) => {
      requests.push(req.clone());
      return fetch(req);
    },
  };
}

const problemResponse = (status: number, headers: Record<string, string> = {}) =>
  new Response(
    JSON.stringify({
      type: `urn:chime:problem:${status === 429 ? 'rate_limited' : 'unavailable'}`,
      title: 'busy',
      status,
      detail: 'try later',
    }),
    {
      status,
      headers: { 'content-type': 'application/problem+json', ...headers },
    },
  );

describe.each(DATABASE_TARGETS)('@chime/client over HTTP ($kind)', (target) => {
  let app: TestApp;
  let baseUrl: string;
  let tenant: TestTenant;
  let client: ChimeClient;

  beforeAll(async () => {
    app = await startTestApp({}, { target });
    baseUrl = await app.listen();
    tenant = await app.tenant('client');
    client = createChimeClient({ baseUrl, apiKey: tenant.apiKey });
  });
  afterAll(() => app?.close());

  /** Marks a run failed by SQL, as the dispatcher would after its last attempt: a dead letter. */
  const fail = (runId: string) =>
    app.database.db.execute(sql`update runs set status = 'failed', finished_at = now(), next_attempt_at = null where id = ${runId}`);

  it('tenant() is the caller’s tenant; tenants.create works with the admin token only', async () => {
    expect(await client.tenant()).toMatchObject({ tenantId: tenant.tenantId, name: 'client' });
    const admin = createChimeClient({ baseUrl, apiKey: ADMIN_TOKEN });
    const created = await admin.tenants.create('made-by-client');
    expect(created.tenant.name).toBe('made-by-client');
    expect(created.apiKey).toMatch(/^chk_/);
    expect(created.signingSecret).toMatch(/^whsec_/);
    expect(await createChimeClient({ baseUrl, apiKey: created.apiKey }).tenant()).toMatchObject({ tenantId: created.tenant.tenantId });
    const refused = await chimeError(client.tenants.create('nope'));
    expect(refused.status).toBe(401);
  });

  it('jobs.create sends a fresh Idempotency-Key each call, and honours a given one', async () => {
    const rec = recordingFetch();
    const c = createChimeClient({ baseUrl, apiKey: tenant.apiKey, fetch: rec.fetch });
    const a = await c.jobs.create(jobBody({ name: 'same body' }));
    const b = await c.jobs.create(jobBody({ name: 'same body' }));
    expect(a.jobId).not.toBe(b.jobId);
    const keys = rec.requests.map((r) => r.headers.get('idempotency-key'));
    expect(keys).toHaveLength(2);
    for (const k of keys) expect(k).toMatch(UUID);
    expect(keys[0]).not.toBe(keys[1]);
    expect(rec.requests[0]!.headers.get('authorization')).toBe(`Bearer ${tenant.apiKey}`);

    const first = await c.jobs.create(jobBody({ name: 'keyed' }), { idempotencyKey: 'client-test-key-1' });
    const again = await c.jobs.create(jobBody({ name: 'keyed' }), { idempotencyKey: 'client-test-key-1' });
    expect(again.jobId).toBe(first.jobId);
    expect(rec.requests.at(-1)!.headers.get('idempotency-key')).toBe('client-test-key-1');
    const conflict = await chimeError(c.jobs.create(jobBody({ name: 'another body' }), { idempotencyKey: 'client-test-key-1' }));
    expect(conflict).toMatchObject({ status: 409, type: 'urn:chime:problem:conflict' });
  });

  it('jobs.get, getByKey, upsertByKey (created, then replaced) and update', async () => {
    const up = await client.jobs.upsertByKey('report:eu', jobBody({ name: 'v1' }));
    expect(up).toMatchObject({ key: 'report:eu', name: 'v1', status: 'active' });
    const replaced = await client.jobs.upsertByKey(
      'report:eu',
      jobBody({ name: 'v2', schedule: { type: 'cron', expression: '0 9 * * *' } }),
    );
    expect(replaced.jobId).toBe(up.jobId);
    expect(replaced.schedule).toMatchObject({ type: 'cron', expression: '0 9 * * *' });
    expect(await client.jobs.get(up.jobId)).toMatchObject({ jobId: up.jobId, name: 'v2' });
    expect((await client.jobs.getByKey('report:eu')).jobId).toBe(up.jobId);
    const updated = await client.jobs.update(up.jobId, { name: 'v3', metadata: { team: 'ops' }, callback: { timeoutMs: 5000 } });
    expect(updated).toMatchObject({ name: 'v3', metadata: { team: 'ops' }, callback: { timeoutMs: 5000, url: 'http://127.0.0.1:9/hook' } });
    expect((await client.jobs.get(up.jobId)).name).toBe('v3');
  });

  it('jobs.list iterates every page, with filters (status, q, metadata) and a small limit', async () => {
    const made = [];
    for (let i = 0; i < 7; i++)
      made.push((await client.jobs.create(jobBody({ name: `page job ${i}`, metadata: { batch: 'paging' } }))).jobId);
    const other = await client.jobs.create(jobBody({ name: 'page job other', metadata: { batch: 'other' } }));

    const rec = recordingFetch();
    const c = createChimeClient({ baseUrl, apiKey: tenant.apiKey, fetch: rec.fetch });
    const seen: string[] = [];
    for await (const job of c.jobs.list({ status: 'active', metadata: { batch: 'paging' }, limit: 3 })) seen.push(job.jobId);
    expect(seen).toEqual([...made].reverse()); // newest first, each once
    expect(rec.requests.length).toBe(3); // 3 + 3 + 1
    const first = new URL(rec.requests[0]!.url);
    expect(first.searchParams.get('metadata.batch')).toBe('paging');
    expect(first.searchParams.get('limit')).toBe('3');
    expect(new URL(rec.requests[1]!.url).searchParams.get('cursor')).toMatch(UUID);

    const pages = [];
    for await (const page of client.jobs.list({ q: 'page job', metadata: { batch: 'paging' }, limit: 3 }).pages())
      pages.push(page.items.length);
    expect(pages).toEqual([3, 3, 1]);
    expect((await client.jobs.list({ q: 'PAGE JOB O' }).toArray()).map((j) => j.jobId)).toEqual([other.jobId]);
    expect(await client.jobs.list({ metadata: { batch: 'paging' } }).toArray(2)).toHaveLength(2);
    expect((await client.jobs.list({ metadata: { batch: 'paging' }, limit: 5 }).firstPage()).nextCursor).toMatch(UUID);
    const bad = await chimeError(client.jobs.list({ limit: 1000 }).toArray());
    expect(bad.status).toBe(400);
    expect(bad.errors.map((e) => e.path)).toContain('limit');
  });

  it('pause, resume, trigger, runs, cancel', async () => {
    const job = await client.jobs.create(jobBody({ name: 'lifecycle' }));
    expect(await client.jobs.pause(job.jobId)).toMatchObject({ status: 'paused', pausedReason: 'manual' });
    expect((await client.jobs.get(job.jobId)).status).toBe('paused');
    expect(await client.jobs.resume(job.jobId)).toMatchObject({ status: 'active', pausedReason: null });

    const { runId } = await client.jobs.trigger(job.jobId);
    expect(runId).toMatch(UUID);
    const keyed = await client.jobs.trigger(job.jobId, { idempotencyKey: 'trigger-once' });
    expect((await client.jobs.trigger(job.jobId, { idempotencyKey: 'trigger-once' })).runId).toBe(keyed.runId);
    const run = await client.runs.get(runId);
    expect(run).toMatchObject({ runId, jobId: job.jobId, trigger: 'manual', attemptLog: [] });
    const ofJob = (await client.runs.list(job.jobId).toArray()).map((r) => r.runId);
    expect(ofJob).toEqual(expect.arrayContaining([runId, keyed.runId]));
    expect(ofJob).toHaveLength(3); // the scheduled one and the two triggered
    expect((await client.jobs.runs(job.jobId, { limit: 1 }).toArray()).map((r) => r.runId).sort()).toEqual([...ofJob].sort());
    const feed = (await client.runs.feed({ jobId: job.jobId, limit: 2 }).toArray()).map((r) => r.runId);
    expect(feed.sort()).toEqual([...ofJob].sort());

    await client.jobs.cancel(job.jobId);
    expect((await client.jobs.get(job.jobId)).status).toBe('canceled');
    expect((await chimeError(client.jobs.trigger(job.jobId))).status).toBe(409);
  });

  it('createBatch answers per job; bulk pauses and resumes by filter', async () => {
    const results = await client.jobs.createBatch([
      jobBody({ name: 'batch ok', metadata: { bulk: 'yes' } }),
      { ...jobBody(), schedule: { type: 'cron', expression: 'not a cron' } },
      jobBody({ name: 'batch ok 2', metadata: { bulk: 'yes' } }),
    ]);
    expect(results.map((r) => r.status)).toEqual([201, 400, 201]);
    const second = results[1]!;
    expect('problem' in second && second.problem.errors?.map((e) => e.path)).toEqual(['schedule.expression']);

    expect(await client.jobs.bulk('pause', { metadata: { bulk: 'yes' } })).toEqual({ matched: 2, changed: 2 });
    expect((await client.jobs.list({ metadata: { bulk: 'yes' } }).toArray()).map((j) => j.status)).toEqual(['paused', 'paused']);
    expect(await client.jobs.bulk('resume', { metadata: { bulk: 'yes' }, status: 'paused' })).toEqual({ matched: 2, changed: 2 });
    const empty = await chimeError(client.jobs.bulk('cancel', {}));
    expect(empty.status).toBe(400);
    expect(empty.errors.map((e) => e.path)).toEqual(['filter']);
  });

  it('dead letters: list, replay one, dismiss, replay by filter', async () => {
    const job = await client.jobs.create(jobBody({ name: 'dead letters' }));
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push((await client.jobs.trigger(job.jobId)).runId);
    for (const r of runs) await fail(r);
    const listed = async () => (await client.deadLetters.list({ limit: 1 }).toArray()).map((r) => r.runId);
    expect((await listed()).sort()).toEqual([...runs].sort());

    const replay = await client.runs.replay(runs[0]!);
    expect((await client.runs.get(replay.runId)).trigger).toBe('replay');
    expect(await listed()).not.toContain(runs[0]);

    await client.deadLetters.dismiss(runs[1]!);
    expect(await listed()).not.toContain(runs[1]);
    expect((await client.runs.get(runs[1]!)).dismissedAt).not.toBeNull();
    expect((await chimeError(client.deadLetters.dismiss(runs[1]!))).status).toBe(404);

    const bulk = await client.deadLetters.replay({ jobId: job.jobId });
    expect(bulk).toMatchObject({ replayed: 1, remaining: 0 });
    expect(bulk.runIds).toHaveLength(1);
    expect(await listed()).toEqual([]);
    expect(await client.deadLetters.replay()).toEqual({ replayed: 0, runIds: [], remaining: 0 });
  });

  it('schedules.preview', async () => {
    const times = await client.schedules.preview({ type: 'cron', expression: '0 9 * * *' }, 3);
    expect(times).toHaveLength(3);
    for (const t of times) expect(t).toMatch(/T09:00:00\.000Z$/);
    expect(await client.schedules.preview({ type: 'interval', everyMs: 60_000 })).toHaveLength(10);
    const bad = await chimeError(client.schedules.preview({ type: 'cron', expression: '0 0 30 2 *' }));
    expect(bad.status).toBe(400);
    expect(bad.errors[0]!.path).toMatch(/^schedule/);
  });

  it('apiKeys create, list, revoke; signingSecrets.rotate', async () => {
    const key = await client.apiKeys.create({ name: 'ci' });
    expect(key.key).toMatch(/^chk_/);
    const second = createChimeClient({ baseUrl, apiKey: key.key });
    expect((await second.tenant()).tenantId).toBe(tenant.tenantId);
    const listed = await client.apiKeys.list();
    expect(listed.find((k) => k.keyId === key.keyId)).toMatchObject({ name: 'ci', prefix: key.prefix });
    expect(listed.find((k) => k.keyId === key.keyId)!.lastUsedAt).not.toBeNull();
    await client.apiKeys.revoke(key.keyId);
    const refused = await chimeError(second.tenant());
    expect(refused).toMatchObject({ status: 401, type: 'urn:chime:problem:unauthorized' });
    expect(refused.headers.get('www-authenticate')).toBe('Bearer');
    expect((await client.apiKeys.list()).map((k) => k.keyId)).not.toContain(key.keyId);
    expect((await chimeError(client.apiKeys.revoke(key.keyId))).status).toBe(404);
    const past = await chimeError(client.apiKeys.create({ name: 'old', expiresAt: '2000-01-01T00:00:00Z' }));
    expect(past.errors).toEqual([{ path: 'expiresAt', message: 'must be in the future' }]);

    const rotated = await client.signingSecrets.rotate();
    expect(rotated.signingSecret).toMatch(/^whsec_/);
    expect(rotated.signingSecret).not.toBe(tenant.signingSecret);
    expect(Date.parse(rotated.previousValidUntil)).toBeGreaterThan(Date.now());
  });

  it('usage', async () => {
    const usage = await client.usage(7);
    expect(usage.daily).toHaveLength(7);
    const active = (await client.jobs.list({ status: 'active' }).toArray()).length;
    expect(usage.jobs.active).toBe(active);
    expect((await client.usage()).daily).toHaveLength(14);
    expect((await chimeError(client.usage(91))).errors.map((e) => e.path)).toEqual(['days']);
  });

  it('flow controls: put, get, list, a job naming one, delete refused then done', async () => {
    const created = await client.flowControls.put('crm', { rate: { limit: 20, periodMs: 1000 }, parallelism: 5 });
    expect(created).toMatchObject({ key: 'crm', rate: { limit: 20, periodMs: 1000 }, parallelism: 5, paused: false, inFlight: 0 });
    expect(await client.flowControls.get('crm')).toEqual(created);
    await client.flowControls.put('other', { paused: true });
    expect((await client.flowControls.list({ limit: 1 }).toArray()).map((f) => f.key)).toEqual(['crm', 'other']);
    const job = await client.jobs.create({
      schedule: { type: 'cron', expression: '0 0 1 1 *' },
      callback: { url: 'http://127.0.0.1:9/crm' },
      flowControlKey: 'crm',
    });
    expect(job.flowControlKey).toBe('crm');
    expect((await chimeError(client.flowControls.delete('crm'))).status).toBe(409);
    await client.jobs.cancel(job.jobId);
    await client.flowControls.delete('crm');
    expect((await chimeError(client.flowControls.get('crm'))).status).toBe(404);
    expect((await chimeError(client.flowControls.put('bad key', {}))).errors.map((e) => e.path)).toEqual(['key']);
  });

  it('calendars and backfill: put, get, list, a job naming one, delete refused then done; a backfill made once', async () => {
    const cal = await client.calendars.put('de', { timezone: 'Europe/Berlin', holidays: ['2099-12-25'] });
    expect(cal).toMatchObject({ key: 'de', weekendDays: [0, 6], holidays: ['2099-12-25'], jobs: 0 });
    expect(await client.calendars.get('de')).toEqual(cal);
    await client.calendars.put('uk', { timezone: 'Europe/London', holidays: [] });
    expect((await client.calendars.list({ limit: 1 }).toArray()).map((c) => c.key)).toEqual(['de', 'uk']);
    const job = await client.jobs.create({
      schedule: { type: 'interval', everyMs: 3_600_000, startAt: new Date(Date.now() - 3 * 3_600_000 - 60_000).toISOString() },
      calendar: { key: 'de', roll: 'next' },
      callback: { url: 'http://127.0.0.1:9/de' },
    });
    expect(job.calendar).toEqual({ key: 'de', roll: 'next' });
    expect((await chimeError(client.calendars.delete('de'))).status).toBe(409);
    const range = { from: new Date(Date.now() - 4 * 3_600_000).toISOString(), to: new Date().toISOString() };
    const first = await client.jobs.backfill(job.jobId, range);
    expect(first.created).toBeGreaterThan(0);
    expect(first.runIds).toHaveLength(first.created);
    expect(await client.jobs.backfill(job.jobId, range)).toMatchObject({ created: 0, remaining: 0 });
    await client.jobs.cancel(job.jobId);
    await client.calendars.delete('de');
    expect((await chimeError(client.calendars.get('de'))).status).toBe(404);
    expect((await chimeError(client.calendars.put('uk', { timezone: 'Mars/Base', holidays: [] }))).errors.map((e) => e.path)).toEqual([
      'timezone',
    ]);
  });

  it('notification endpoints: create, list, deliveries, delete', async () => {
    const endpoint = await client.notificationEndpoints.create({
      url: 'http://127.0.0.1:9/events',
      events: ['run.failed', 'job.paused'],
      description: 'ops',
    });
    expect(endpoint).toMatchObject({ url: 'http://127.0.0.1:9/events', events: ['run.failed', 'job.paused'], description: 'ops' });
    expect((await client.notificationEndpoints.list()).map((e) => e.endpointId)).toContain(endpoint.endpointId);
    expect(await client.notificationEndpoints.deliveries(endpoint.endpointId, { limit: 5 }).toArray()).toEqual([]);
    await client.notificationEndpoints.delete(endpoint.endpointId);
    expect((await client.notificationEndpoints.list()).map((e) => e.endpointId)).not.toContain(endpoint.endpointId);
    expect((await chimeError(client.notificationEndpoints.deliveries(endpoint.endpointId).toArray())).status).toBe(404);
    const bad = await chimeError(client.notificationEndpoints.create({ url: 'http://127.0.0.1:9/e', events: ['no.such' as 'run.failed'] }));
    expect(bad.errors.map((e) => e.path)).toEqual(['events.0']);
  });

  it('a bad body is a ChimeError 400 naming the fields', async () => {
    const err = await chimeError(
      client.jobs.create({ ...jobBody(), schedule: { type: 'cron', expression: '' }, shedule: 1 } as unknown as JobInput),
    );
    expect(err).toMatchObject({
      status: 400,
      type: 'urn:chime:problem:validation',
      title: 'The request is invalid',
      operation: 'POST /v1/jobs',
    });
    expect(err.errors.map((e) => e.path).sort()).toEqual(['schedule.expression', 'shedule']);
    expect(err.detail).toContain('schedule.expression');
    expect(err.problem).toMatchObject({ status: 400, errors: err.errors });
    expect(err.message).toContain('400');
    expect(err).toBeInstanceOf(Error);
  });

  it('an async job: completion in the job; runs.heartbeat and runs.complete with the completion token, not the API key', async () => {
    const job = await client.jobs.create(jobBody({ completion: { mode: 'async', timeoutMs: 120_000, heartbeatTimeoutMs: 30_000 } }));
    expect(job.completion).toEqual({ mode: 'async', timeoutMs: 120_000, heartbeatTimeoutMs: 30_000 });
    const { runId } = await client.jobs.trigger(job.jobId);
    // As the dispatcher's finish leaves an acknowledged attempt (no dispatcher runs here): awaiting, no lease.
    const [updated] = await query<{ shard: number }>(
      app.database.db,
      sql`update runs set status = 'running', attempts = 1, awaiting_completion = true, next_attempt_at = null,
            completion_deadline = now() + interval '2 minutes' where id = ${runId} returning shard`,
    );
    // The test app's cipher (test/support/app.ts): the token the dispatcher would have sent.
    const token = await completionToken(await createCipher(new Uint8Array(32).fill(3)), runId, Number(updated!.shard), 1);

    const beat = await client.runs.heartbeat(runId, token, { done: 1 });
    expect(Date.parse(beat.heartbeatDeadline!)).toBeGreaterThan(Date.now());
    expect((await client.runs.get(runId)).progress).toEqual({ done: 1 });
    expect((await chimeError(client.runs.complete(runId, tenant.apiKey, { status: 'succeeded' }))).status).toBe(401);
    const run = await client.runs.complete(runId, token, { status: 'succeeded', output: { ok: true } });
    expect(run).toMatchObject({ runId, status: 'succeeded', output: { ok: true }, awaitingCompletion: false });
    expect((await chimeError(client.runs.complete(runId, token, { status: 'succeeded' }))).status).toBe(409);
    // The client's own key still works for the tenant's routes.
    expect((await client.runs.get(runId)).attemptLog[0]).toMatchObject({ reportedStatus: 'succeeded' });
  });

  it('an unknown id is a ChimeError 404', async () => {
    const missing = '01890000-0000-7000-8000-000000000000';
    const calls = [
      () => client.jobs.get(missing),
      () => client.runs.get(missing),
      () => client.jobs.getByKey('no-such-key'),
      () => client.jobs.cancel(missing),
      () => client.runs.replay('not-a-uuid'),
    ];
    for (const call of calls) {
      const err = await chimeError(call());
      expect(err).toMatchObject({ status: 404, type: 'urn:chime:problem:not_found', errors: [] });
    }
  });
});

describe('@chime/client retries', () => {
  let app: TestApp;
  let baseUrl: string;
  let tenant: TestTenant;

  beforeAll(async () => {
    app = await startTestApp();
    baseUrl = await app.listen();
    tenant = await app.tenant('retries');
  });
  afterAll(() => app?.close());

  /**
   * A fetch that answers `script[i]` to the i-th request (a status: that answer instead of the server's; 'pass': the
   * server's; 'after': the server's effect, then a 503 in its stead), then passes everything through.
   */
  function scripted(script: (number | 'pass' | 'after')[], headers: Record<string, string> = { 'retry-after': '0' }, retry?: RetryOptions) {
    const requests: Request[] = [];
    const fetchFn: FetchLike = async (req) => {
      requests.push(req.clone());
      const step = script[requests.length - 1] ?? 'pass';
      if (step === 'pass') return fetch(req);
      if (step === 'after') {
        await (await fetch(req)).arrayBuffer();
        return problemResponse(503, headers);
      }
      return problemResponse(step, headers);
    };
    return { requests, client: createChimeClient({ baseUrl, apiKey: tenant.apiKey, fetch: fetchFn, ...(retry ? { retry } : {}) }) };
  }

  it('retries 429 after Retry-After: two 429s, then the answer (3 requests)', async () => {
    const s = scripted([429, 429]);
    expect((await s.client.tenant()).tenantId).toBe(tenant.tenantId);
    expect(s.requests).toHaveLength(3);
  });

  it('gives up on a persistent 503 after 3 retries with ChimeError 503', async () => {
    const s = scripted([503, 503, 503, 503, 503, 503]);
    const err = await chimeError(s.client.jobs.list().toArray());
    expect(err).toMatchObject({ status: 503, type: 'urn:chime:problem:unavailable', detail: 'try later' });
    expect(err.headers.get('retry-after')).toBe('0');
    expect(s.requests).toHaveLength(4);
  });

  it('keeps the default bound for a bound given as undefined, and refuses one that is not a finite number ≥ 0', async () => {
    const s = scripted([503, 503, 503, 503, 503, 503], undefined, { maxRetries: undefined });
    expect((await chimeError(s.client.tenant())).status).toBe(503);
    expect(s.requests).toHaveLength(4);
    for (const retry of [{ maxRetries: Number.NaN }, { maxRetries: -1 }, { maxDelayMs: Number.POSITIVE_INFINITY }]) {
      expect(() => createChimeClient({ baseUrl, apiKey: 'k', retry })).toThrow(TypeError);
    }
  });

  it('does not retry a POST without Idempotency-Key', async () => {
    for (const call of [
      (c: ChimeClient) => c.apiKeys.create({ name: 'x' }),
      (c: ChimeClient) => c.jobs.createBatch([jobBody()]),
      (c: ChimeClient) => c.signingSecrets.rotate(),
      (c: ChimeClient) => c.notificationEndpoints.create({ url: 'http://127.0.0.1:9/e', events: ['run.failed'] }),
    ]) {
      const s = scripted([503]);
      expect((await chimeError(call(s.client))).status).toBe(503);
      expect(s.requests).toHaveLength(1);
      expect(s.requests[0]!.headers.has('idempotency-key')).toBe(false);
    }
    // PATCH is not retried either (pause, resume, update).
    const job = await createChimeClient({ baseUrl, apiKey: tenant.apiKey }).jobs.create(jobBody());
    const s = scripted([429]);
    expect((await chimeError(s.client.jobs.pause(job.jobId))).status).toBe(429);
    expect(s.requests).toHaveLength(1);
  });

  it('retries jobs.create (it always has a key): a 503 after the job was made still makes one job', async () => {
    const s = scripted(['after']);
    const job = await s.client.jobs.create(jobBody({ metadata: { retried: 'create' } }));
    expect(s.requests).toHaveLength(2);
    const keys = s.requests.map((r) => r.headers.get('idempotency-key'));
    expect(keys[0]).toMatch(UUID);
    expect(keys[1]).toBe(keys[0]);
    expect(await s.requests[1]!.text()).toBe(await s.requests[0]!.text());
    const all = await createChimeClient({ baseUrl, apiKey: tenant.apiKey })
      .jobs.list({ metadata: { retried: 'create' } })
      .toArray();
    expect(all.map((j) => j.jobId)).toEqual([job.jobId]);
  });

  it('retries a trigger with an Idempotency-Key (one run), not one without', async () => {
    const job = await createChimeClient({ baseUrl, apiKey: tenant.apiKey }).jobs.create(jobBody());
    const s = scripted(['after']);
    const { runId } = await s.client.jobs.trigger(job.jobId, { idempotencyKey: 'retried-trigger' });
    expect(s.requests).toHaveLength(2);
    const runs = await s.client.runs.list(job.jobId, { status: 'scheduled' }).toArray();
    expect(runs.filter((r) => r.trigger === 'manual').map((r) => r.runId)).toEqual([runId]);
    const t = scripted([503]);
    expect((await chimeError(t.client.jobs.trigger(job.jobId))).status).toBe(503);
    expect(t.requests).toHaveLength(1);
  });

  it('retries idempotent methods (GET, PUT, DELETE) and the schedule preview', async () => {
    const job = await createChimeClient({ baseUrl, apiKey: tenant.apiKey }).jobs.create(jobBody());
    const cases: [string, (c: ChimeClient) => Promise<unknown>][] = [
      ['GET', (c) => c.jobs.get(job.jobId)],
      ['PUT', (c) => c.jobs.upsertByKey('retried-put', jobBody())],
      ['DELETE', (c) => c.jobs.cancel(job.jobId)],
      ['POST', (c) => c.schedules.preview({ type: 'delay', delayMs: 1000 })],
    ];
    for (const [method, call] of cases) {
      const s = scripted([503, 429]);
      await call(s.client);
      expect(
        s.requests.map((r) => r.method),
        method,
      ).toEqual([method, method, method]);
    }
  });

  it('waits what Retry-After asks, and does not wait longer than maxDelayMs', async () => {
    const s = scripted([429], { 'retry-after': '1' });
    const t0 = Date.now();
    await s.client.tenant();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(950);
    expect(s.requests).toHaveLength(2);

    const long = scripted([429], { 'retry-after': '120' });
    const err = await chimeError(long.client.tenant());
    expect(err.status).toBe(429);
    expect(long.requests).toHaveLength(1);
  });

  it('retry options: retry: false, and maxRetries', async () => {
    let n = 0;
    const always503: FetchLike = async () => {
      n++;
      return problemResponse(503, { 'retry-after': '0' });
    };
    expect((await chimeError(createChimeClient({ baseUrl, apiKey: 'k', fetch: always503, retry: false }).tenant())).status).toBe(503);
    expect(n).toBe(1);
    n = 0;
    await chimeError(createChimeClient({ baseUrl, apiKey: 'k', fetch: always503, retry: { maxRetries: 1 } }).tenant());
    expect(n).toBe(2);
  });

  it('retries the real rate limit’s 429 after its Retry-After', async () => {
    const limited = await startTestApp({ limits: { ratePerSecond: 2, burst: 1, maxActiveJobs: 0 } });
    try {
      const url = await limited.listen();
      const t = await limited.tenant('limited');
      const rec = recordingFetch();
      const c = createChimeClient({ baseUrl: url, apiKey: t.apiKey, fetch: rec.fetch });
      await c.tenant();
      expect((await c.tenant()).tenantId).toBe(t.tenantId);
      expect(rec.requests).toHaveLength(3); // the second call met a 429 with Retry-After: 1, then passed
      const noRetry = createChimeClient({ baseUrl: url, apiKey: t.apiKey, retry: false });
      const err = await chimeError(noRetry.tenant());
      expect(err).toMatchObject({ status: 429, type: 'urn:chime:problem:rate_limited' });
      expect(err.headers.get('retry-after')).toBe('1');
    } finally {
      await limited.close();
    }
  });

  it('parseRetryAfter reads delay-seconds and HTTP dates', () => {
    expect(parseRetryAfter(null)).toBeNull();
    expect(parseRetryAfter('0')).toBe(0);
    expect(parseRetryAfter('2')).toBe(2000);
    expect(parseRetryAfter('soon')).toBeNull();
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
  });

  it('a non-problem error body still becomes a ChimeError', async () => {
    const html: FetchLike = async () =>
      new Response('<html>Bad gateway</html>', { status: 502, statusText: 'Bad Gateway', headers: { 'content-type': 'text/html' } });
    const err = await chimeError(createChimeClient({ baseUrl, apiKey: 'k', fetch: html }).tenant());
    expect(err).toMatchObject({ status: 502, type: 'about:blank', title: 'Bad Gateway', detail: '<html>Bad gateway</html>', errors: [] });
  });

  it('refuses an empty id without a request, and a client without baseUrl or apiKey', async () => {
    const s = scripted([]);
    await expect(s.client.jobs.get('')).rejects.toThrow(TypeError);
    expect(s.requests).toHaveLength(0);
    expect(() => createChimeClient({ baseUrl: '', apiKey: 'k' })).toThrow(TypeError);
    expect(() => createChimeClient({ baseUrl, apiKey: '' })).toThrow(TypeError);
  });
});
