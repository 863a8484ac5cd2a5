/**
 * The two packages as a user gets them: `npm pack` each, install the tarballs into a fresh project outside this
 * repository (no workspace links), then (a) type-check a TypeScript file that calls every client method against the
 * installed declarations (and a file of misuses that must each be a type error); (b) run a script with plain `node`
 * that registers a job through `@chime/client` against the real service, receives the callback at its own HTTP
 * receiver that verifies both signatures with `@chime/receiver`, lists the runs, reads the attempt log, meets a
 * typed `ChimeError` with field errors, and sees a forged body, a stale timestamp, a wrong secret and a JWT for
 * another URL each refused with its reason; (c) run a receiver Worker under workerd (`wrangler dev`) that verifies a
 * real callback with the installed package. Runs on whichever Node runs the tests (CI: 20, 22, 24 and 26).
 */
import { execFile } from 'node:child_process';
import { lstat, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, freePort, startChime } from '../support/chime-process.ts';
import { type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { startWranglerDev, type WranglerDev } from '../worker/wrangler.ts';

const run = promisify(execFile);
const ROOT = new URL('../..', import.meta.url).pathname;
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

/** Every method of the client, as a user would write them; type-checked only (never run). */
const SAMPLE = `
import { createChimeClient, ChimeError, type Job, type Run } from '@chime/client';
import { verifyWebhook, verifyChimeSignature, completionOf, CompletionError } from '@chime/receiver';
import { chimeWebhook } from '@chime/receiver/hono';
import { expressWebhook, readRawBody } from '@chime/receiver/node';

export async function everything(): Promise<void> {
  const chime = createChimeClient({ baseUrl: 'http://localhost:8080', apiKey: 'chk_x' });
  const body = { schedule: { type: 'cron' as const, expression: '0 9 * * *', timezone: 'Europe/Paris' }, callback: { url: 'https://example.com/hook' } };
  const job: Job = await chime.jobs.create(body, { idempotencyKey: 'k' });
  await chime.jobs.get(job.jobId);
  await chime.jobs.getByKey('report');
  for await (const j of chime.jobs.list({ status: 'active', q: 'report', metadata: { team: 'ops' } })) j.jobId.toUpperCase();
  await chime.jobs.update(job.jobId, { name: 'renamed', pauseAfterFailures: 3 });
  await chime.jobs.pause(job.jobId);
  await chime.jobs.resume(job.jobId);
  const t = await chime.jobs.trigger(job.jobId);
  t.runId.toUpperCase();
  await chime.jobs.cancel(job.jobId);
  await chime.jobs.upsertByKey('report', body);
  await chime.jobs.createBatch([body, body]);
  await chime.jobs.bulk('pause', { metadata: { team: 'ops' } });
  for await (const r of chime.jobs.runs(job.jobId)) r.status;
  const run = await chime.runs.get(t.runId);
  run.attemptLog.map((a) => a.responseStatus);
  for await (const r of chime.runs.list(job.jobId, { status: 'failed' })) r.runId;
  for await (const r of chime.runs.feed({ status: 'failed' })) r.runId;
  await chime.runs.replay(t.runId);
  await chime.jobs.create({ ...body, completion: { mode: 'async', timeoutMs: 600_000, heartbeatTimeoutMs: 60_000 } });
  const beat = await chime.runs.heartbeat(t.runId, 'ct1.token', { step: 1 });
  beat.completionDeadline.toUpperCase();
  const reported = await chime.runs.complete(t.runId, 'ct1.token', { status: 'succeeded', output: { rows: 1 } });
  if (reported.awaitingCompletion) reported.completionDeadline?.toUpperCase();
  const handle = completionOf({ 'chime-completion-url': 'http://localhost:8080/v1/runs/r/completion', 'chime-completion-token': 't' });
  if (handle) {
    await handle.heartbeat({ step: 2 });
    try { await handle.complete({ status: 'failed', error: 'disk full' }); } catch (e) { if (e instanceof CompletionError) e.status.toFixed(); }
  }
  for await (const d of chime.deadLetters.list()) d.runId;
  await chime.deadLetters.dismiss(t.runId);
  await chime.deadLetters.replay({ jobId: job.jobId });
  const occurrences: string[] = await chime.schedules.preview(body.schedule, 5);
  const key = await chime.apiKeys.create({ name: 'ci' });
  await chime.apiKeys.list();
  await chime.apiKeys.revoke(key.keyId);
  await chime.signingSecrets.rotate();
  const endpoint = await chime.notificationEndpoints.create({ url: 'https://example.com/events', events: ['run.failed'] });
  await chime.notificationEndpoints.list();
  for await (const d of chime.notificationEndpoints.deliveries(endpoint.endpointId)) d.status;
  await chime.notificationEndpoints.delete(endpoint.endpointId);
  await chime.tenant();
  const created = await chime.tenants.create('acme');
  created.tenant.tenantId + created.apiKey + created.signingSecret;
  const usage = await chime.usage(14);
  usage.daily.map((d) => d.succeeded);
  const runs: Run[] = await chime.runs.feed().toArray(10);
  try { await chime.jobs.get('x'); } catch (e) { if (e instanceof ChimeError) e.errors.map((f) => f.path + e.status); }
  const ok = await verifyWebhook({ headers: {}, body: '' }, ['whsec_x']);
  if (ok.ok) ok.id.toUpperCase(); else ok.reason.toUpperCase();
  await verifyChimeSignature({ headers: {}, body: '', url: 'https://example.com/hook' }, { jwksUrl: 'http://localhost:8080/.well-known/jwks.json' });
  void [chimeWebhook, expressWebhook, readRawBody, occurrences, runs];
}
`;

/** Misuses: each line must be a type error (an unused @ts-expect-error fails the check, so types must be real). */
const MISUSES = `
import { createChimeClient } from '@chime/client';
const chime = createChimeClient({ baseUrl: 'http://localhost:8080', apiKey: 'chk_x' });
// @ts-expect-error a schedule type that does not exist
void chime.jobs.create({ schedule: { type: 'weekly' }, callback: { url: 'https://example.com' } });
// @ts-expect-error no callback
void chime.jobs.create({ schedule: { type: 'delay', delayMs: 1000 } });
// @ts-expect-error a job status that does not exist
void chime.jobs.list({ status: 'sleeping' });
// @ts-expect-error a bulk action that does not exist
void chime.jobs.bulk('delete', { status: 'active' });
// @ts-expect-error a reported status that does not exist
void chime.runs.complete('r', 't', { status: 'done' });
`;

/** The user's app, run with plain node: the whole round trip through the installed packages. */
const ROUND_TRIP = `
import http from 'node:http';
import { createChimeClient, ChimeError } from '@chime/client';
import { verifyWebhook, verifyChimeSignature, completionOf } from '@chime/receiver';
import { readRawBody } from '@chime/receiver/node';

const { CHIME_URL, API_KEY, SECRET } = process.env;
const chime = createChimeClient({ baseUrl: CHIME_URL, apiKey: API_KEY });
let received;
let longJob;
const server = http.createServer(async (req, res) => {
  const body = await readRawBody(req);
  if (req.url === '/long') {
    // A long job: acknowledge now, report later through the completion URL and token the attempt carries.
    longJob = completionOf(req.headers);
    res.statusCode = 202;
    return res.end('working');
  }
  received = { headers: req.headers, body, url: 'http://127.0.0.1:' + server.address().port + req.url };
  res.end('ok');
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = 'http://127.0.0.1:' + server.address().port + '/hook';
const jwksUrl = CHIME_URL + '/.well-known/jwks.json';

const job = await chime.jobs.create({ schedule: { type: 'delay', delayMs: 0 }, callback: { url }, payload: { hello: 'user' } });
for (let i = 0; !received && i < 300; i++) await new Promise((r) => setTimeout(r, 100));
if (!received) throw new Error('timed out waiting for the callback');
const hmac = await verifyWebhook(received, [SECRET]);
const jwt = await verifyChimeSignature(received, { jwksUrl });
let run;
for (let i = 0; i < 100; i++) {
  [run] = await chime.runs.list(job.jobId).toArray(1);
  if (run?.status === 'succeeded') break;
  await new Promise((r) => setTimeout(r, 100));
}
if (run?.status !== 'succeeded') throw new Error('timed out waiting for the run to succeed: ' + JSON.stringify(run));
const detail = await chime.runs.get(run.runId);
let problem;
try { await chime.jobs.create({ schedule: { type: 'cron', expression: 'not cron' }, callback: { url } }); }
catch (e) { problem = e instanceof ChimeError ? { status: e.status, paths: e.errors.map((f) => f.path) } : String(e); }
const stale = Number(received.headers['webhook-timestamp']) * 1000 + 3_600_000;
const refused = {
  forgedBody: (await verifyWebhook({ ...received, body: received.body + ' ' }, [SECRET])).reason,
  stale: (await verifyWebhook(received, [SECRET], { nowMs: stale })).reason,
  wrongSecret: (await verifyWebhook(received, ['whsec_' + Buffer.alloc(32, 1).toString('base64')])).reason,
  otherUrl: (await verifyChimeSignature({ ...received, url: 'https://other.example/hook' }, { jwksUrl })).reason,
};
const long = await chime.jobs.create({
  schedule: { type: 'delay', delayMs: 0 },
  callback: { url: 'http://127.0.0.1:' + server.address().port + '/long' },
  completion: { mode: 'async', timeoutMs: 600000 },
});
for (let i = 0; !longJob && i < 300; i++) await new Promise((r) => setTimeout(r, 100));
if (!longJob) throw new Error('timed out waiting for the callback of the long job');
let awaited;
for (let i = 0; i < 100; i++) {
  [awaited] = await chime.runs.list(long.jobId).toArray(1);
  if (awaited?.awaitingCompletion) break;
  await new Promise((r) => setTimeout(r, 100));
}
const beat = await longJob.heartbeat({ step: 1 });
const reported = await longJob.complete({ status: 'succeeded', output: { rows: 7 } });
const asyncRun = { awaiting: awaited?.awaitingCompletion, heartbeatDeadline: typeof beat.completionDeadline, status: reported.status, output: reported.output };
server.close();
console.log(JSON.stringify({ jobId: job.jobId, hmac, jwt, payload: JSON.parse(received.body), run: detail.status, attempts: detail.attemptLog, problem, refused, asyncRun }));
`;

/** A receiver Worker: 200 "verified <id>" when both signatures hold, else 401 with the reason. */
const WORKER = `
import { verifyWebhook, verifyChimeSignature } from '@chime/receiver';
export default {
  async fetch(request, env) {
    const body = await request.text();
    const headers = request.headers;
    const hmac = await verifyWebhook({ headers, body }, [env.SECRET]);
    if (!hmac.ok) return new Response(hmac.reason, { status: 401 });
    const jwt = await verifyChimeSignature({ headers, body, url: env.CALLBACK_URL }, { jwksUrl: env.JWKS_URL });
    if (!jwt.ok) return new Response(jwt.reason, { status: 401 });
    return new Response('verified ' + hmac.id);
  },
};
`;

describe('@chime/client and @chime/receiver installed from their tarballs', () => {
  let project: string;
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let tenant: TestTenant;

  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'chime-user-app-'));
    const tarballs: Record<string, string> = {};
    for (const name of ['client', 'receiver']) {
      // The global setup ran `npm run build` (every workspace package included): pack what it built.
      const { stdout } = await run('npm', ['pack', '--silent', '--pack-destination', project], { cwd: join(ROOT, 'packages', name) });
      tarballs[`@chime/${name}`] = `file:${join(project, stdout.trim().split('\n').pop()!)}`;
    }
    // hono: the app framework of a user of @chime/receiver/hono (an optional peer dependency of the package).
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({ name: 'chime-user-app', private: true, type: 'module', dependencies: { ...tarballs, hono: '^4' } }),
    );
    await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: project, timeout: 180_000 });
    db = await freshDatabase({ kind: 'pglite' });
    chime = await startChime(db.env);
    tenant = await createTestTenant(chime.url, 'user-app');
  }, 240_000);
  afterAll(async () => {
    await chime?.stop();
    await db?.drop();
    if (project) await rm(project, { recursive: true, force: true });
  });

  it('installs real copies (no links into this repository) with only what the packages list', async () => {
    for (const name of ['client', 'receiver']) {
      const dir = join(project, 'node_modules/@chime', name);
      expect((await lstat(dir)).isSymbolicLink(), name).toBe(false);
      const files = await readdir(dir);
      expect(files.sort(), name).toEqual(['LICENSE', 'README.md', 'dist', 'package.json']);
    }
  });

  it('type-checks every client method against the installed declarations, and refuses misuses', async () => {
    await writeFile(join(project, 'everything.ts'), SAMPLE);
    await writeFile(join(project, 'misuses.ts'), MISUSES);
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          lib: ['ES2023', 'DOM'],
          types: [],
          skipLibCheck: false,
        },
        files: ['everything.ts', 'misuses.ts'],
      }),
    );
    const r = await run(process.execPath, [TSC, '-p', project], { cwd: project }).then(
      () => ({ code: 0, out: '' }),
      (err: { code: number; stdout: string }) => ({ code: err.code, out: err.stdout }),
    );
    expect(r.out).toBe('');
    expect(r.code).toBe(0);
  }, 120_000);

  it('runs a whole round trip with plain node: register, receive, verify both signatures, read the run, meet a ChimeError, complete a long job', async () => {
    await writeFile(join(project, 'round-trip.mjs'), ROUND_TRIP);
    const { stdout } = await run(process.execPath, ['round-trip.mjs'], {
      cwd: project,
      env: { PATH: process.env.PATH, CHIME_URL: chime.url, API_KEY: tenant.apiKey, SECRET: tenant.signingSecret },
      timeout: 60_000,
    });
    const out = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(out.hmac).toMatchObject({ ok: true, id: expect.any(String), timestamp: expect.any(Number) });
    expect(out.jwt).toMatchObject({ ok: true, id: out.hmac.id });
    expect(out.payload).toEqual({ hello: 'user' });
    expect(out.run).toBe('succeeded');
    expect(out.attempts).toEqual([expect.objectContaining({ attempt: 1, responseStatus: 200 })]);
    expect(out.problem).toEqual({ status: 400, paths: ['schedule.expression'] });
    expect(out.refused.forgedBody).toMatch(/no signature matches/);
    expect(out.refused.stale).toMatch(/too old/);
    expect(out.refused.wrongSecret).toMatch(/no signature matches/);
    expect(out.refused.otherUrl).toMatch(/another URL/);
    // A long job through @chime/receiver's completion handle: awaited after its 202, then reported.
    expect(out.asyncRun).toEqual({ awaiting: true, heartbeatDeadline: 'string', status: 'succeeded', output: { rows: 7 } });
  }, 90_000);

  it('verifies a real callback in a Worker under workerd (wrangler dev)', async () => {
    const port = await freePort();
    const callbackUrl = `http://127.0.0.1:${port}/hook`;
    await writeFile(join(project, 'worker.mjs'), WORKER);
    await writeFile(
      join(project, 'wrangler.toml'),
      `name = "user-receiver"\nmain = "worker.mjs"\ncompatibility_date = "2026-04-20"\nsend_metrics = false\n`,
    );
    let dev: WranglerDev | undefined;
    try {
      dev = await startWranglerDev({
        port,
        inspectorPort: await freePort(),
        cwd: project,
        env: {},
        vars: { SECRET: tenant.signingSecret, CALLBACK_URL: callbackUrl, JWKS_URL: `${chime.url}/.well-known/jwks.json` },
      });
      // The Worker answers 401 with the reason to a forged request...
      const forged = await fetch(callbackUrl, {
        method: 'POST',
        headers: { 'webhook-id': 'x', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' },
        body: '{}',
      });
      expect(forged.status).toBe(401);
      expect(await forged.text()).toMatch(/no signature matches/);
      // ...and "verified" to Chime's real callback.
      const job = await tenant.api.post('/v1/jobs', {
        schedule: { type: 'delay', delayMs: 0 },
        callback: { url: callbackUrl },
        retry: { strategy: 'none' },
      });
      expect(job.status).toBe(201);
      const runs = await eventually(
        async () => {
          const r = (await tenant.api.get(`/v1/jobs/${job.body.jobId}/runs`)).body.runs;
          return r[0] && ['succeeded', 'failed'].includes(r[0].status) ? r : undefined;
        },
        { what: 'the callback to the Worker', timeoutMs: 30_000 },
      );
      const detail = (await tenant.api.get(`/v1/runs/${runs[0].runId}`)).body;
      expect(detail.attemptLog[0]).toMatchObject({ responseStatus: 200, responseBodyExcerpt: `verified ${runs[0].runId}` });
    } finally {
      await dev?.stop();
    }
  }, 180_000);
});
