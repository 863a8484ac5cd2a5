/**
 * `@chime/receiver`'s side of async completion (packages/receiver/src/completion.ts) against a real Chime process:
 * an Express-style receiver (`@chime/receiver/node`, behind `http.createServer` on 127.0.0.1) verifies the callback of
 * an async job, answers 202 and gets `req.chimeCompletion` (the URL and token Chime sent); the Hono middleware gives the
 * same handle as `c.get('chimeCompletion')`; `heartbeat(progress)` and `complete(result)` reach Chime with the token
 * alone and change the run; Chime's refusals (a second report, a wrong token) reject with `CompletionError` and its
 * status; a request without the headers has no handle, and half of them is a TypeError.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ChimeCompletion, CompletionError, completionOf } from '@chime/receiver';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChimeWebhookEnv, chimeWebhook } from '../../packages/receiver/src/hono.ts';
import { expressWebhook, type NodeRequestLike } from '../../packages/receiver/src/node.ts';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';

type Received = { headers: Record<string, string | string[] | undefined>; body: string; completion: ChimeCompletion | null };

describe.each(DATABASE_TARGETS)('@chime/receiver completion handle against Chime on $kind', (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let tenant: TestTenant;
  let server: http.Server;
  let receiverUrl: string;
  const received: Received[] = [];

  beforeAll(async () => {
    db = await freshDatabase(target);
    chime = await startChime(db.env);
    tenant = await createTestTenant(chime.url, 'receiver');
    const verify = expressWebhook({ secrets: [tenant.signingSecret] });
    server = http.createServer((req, res) => {
      const r = req as unknown as NodeRequestLike;
      void verify(r, res, (err) => {
        if (err) {
          res.statusCode = 500;
          res.end(String(err));
          return;
        }
        received.push({ headers: r.headers, body: r.rawBody!, completion: r.chimeCompletion ?? null });
        // Acknowledge at once: the work goes on after the response.
        res.statusCode = r.chimeCompletion ? 202 : 200;
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 60_000);
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    if (chime) expect(await chime.stop()).toBe(0);
    await db?.drop();
  });

  const createJob = async (path: string, completion?: unknown) => {
    const r = await tenant.api.post('/v1/jobs', {
      schedule: { type: 'delay', delayMs: 0 },
      callback: { url: `${receiverUrl}${path}` },
      ...(completion ? { completion } : {}),
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.jobId as string;
  };
  const nth = (n: number) =>
    eventually(() => received[n - 1], { timeoutMs: 30_000, what: `callback ${n} at the receiver (got ${received.length})` });

  it('hands the receiver the URL and token; heartbeat and complete change the run; refusals reject with CompletionError', async () => {
    await createJob('/async', { mode: 'async', timeoutMs: 60_000, heartbeatTimeoutMs: 10_000 });
    const got = await nth(1);
    const runId = String(got.headers['chime-run-id']);
    const completion = got.completion!;
    expect(completion.url).toBe(`http://localhost:${chime.port}/v1/runs/${runId}/completion`);
    expect(completion.token).toBe(got.headers['chime-completion-token']);
    await eventually(async () => (await tenant.api.get(`/v1/runs/${runId}`)).body.awaitingCompletion === true, {
      timeoutMs: 30_000,
      what: 'the run to await its report',
    });

    // The Hono middleware gives the same handle, from the same signed request.
    const app = new Hono<ChimeWebhookEnv>();
    app.post('/async', chimeWebhook({ secrets: [tenant.signingSecret] }), async (c) => {
      const handle = c.get('chimeCompletion')!;
      return c.json({ url: handle.url, token: handle.token, beat: await handle.heartbeat({ via: 'hono' }) });
    });
    const headers = Object.fromEntries(Object.entries(got.headers).filter((e): e is [string, string] => typeof e[1] === 'string'));
    const viaHono = await app.request('/async', { method: 'POST', headers, body: got.body });
    expect(viaHono.status).toBe(200);
    const answer = (await viaHono.json()) as { url: string; token: string; beat: { heartbeatDeadline: string } };
    expect(answer).toMatchObject({ url: completion.url, token: completion.token });
    expect(Date.parse(answer.beat.heartbeatDeadline)).toBeGreaterThan(Date.now());
    expect((await tenant.api.get(`/v1/runs/${runId}`)).body.progress).toEqual({ via: 'hono' });

    const wrong = completionOf({ 'chime-completion-url': completion.url, 'chime-completion-token': `${completion.token.slice(0, -2)}xx` });
    const refused = await wrong!.complete({ status: 'succeeded' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(CompletionError);
    expect(refused).toMatchObject({ status: 401 });

    const run = await completion.complete({ status: 'succeeded', output: { rows: 7 } });
    expect(run).toMatchObject({ runId, status: 'succeeded', output: { rows: 7 } });
    const again = await completion.complete({ status: 'failed', error: 'twice' }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(CompletionError);
    expect(again).toMatchObject({ status: 409 });
    expect((again as CompletionError).detail).toMatch(/already reported succeeded/);
    expect((await tenant.api.get(`/v1/runs/${runId}`)).body).toMatchObject({ status: 'succeeded', output: { rows: 7 } });
  });

  it('a job whose response decides the run sends no completion headers: no handle', async () => {
    await createJob('/plain');
    const got = await eventually(() => received.find((r) => String(r.headers['chime-run-id']) && r.completion === null), {
      timeoutMs: 30_000,
      what: 'the plain callback',
    });
    expect(got.headers['chime-completion-url']).toBeUndefined();
    expect(completionOf(new Headers())).toBeNull();
    expect(() => completionOf({ 'chime-completion-url': 'http://localhost:1/v1/runs/x/completion' })).toThrow(TypeError);
    expect(() => completionOf({ 'chime-completion-url': 'ftp://x/y', 'chime-completion-token': 't' })).toThrow(TypeError);
  });
});
