import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CallbackRequest,
  classifyError,
  createCallbackAgent,
  createDeliver,
  RESPONSE_DRAIN_LIMIT_BYTES,
  RESPONSE_EXCERPT_BYTES,
} from '../../src/dispatch/deliver.ts';
import { ERROR_CLASS, type HttpResult } from '../../src/domain/attempt-outcome.ts';
import { freePort } from '../support/chime-process.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { selfSignedLocalhost } from '../support/tls.ts';

/** A certificate and its key, PEM. */
type Cert = { cert: string; key: string };

type TlsServer = { port: number; requests: number; close(): Promise<void> };

/** A real HTTPS server on 127.0.0.1 answering 200; counts the requests that got through the handshake. */
async function startHttpsServer(cert: Cert): Promise<TlsServer> {
  const state = { requests: 0 };
  const server = https.createServer({ ...cert }, (_req, res) => {
    state.requests++;
    res.end('ok');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    get requests() {
      return state.requests;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const request = (url: string, o: Partial<CallbackRequest> = {}): CallbackRequest => ({
  url,
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: '{"hello":"world"}',
  timeoutMs: 5_000,
  ...o,
});

type ErrorResult = Extract<HttpResult, { kind: 'error' }>;

function expectError(r: HttpResult): ErrorResult {
  expect(r.kind, JSON.stringify(r)).toBe('error');
  return r as ErrorResult;
}

describe('callback delivery error classes', () => {
  let dir: string;
  let cert: Cert;
  let tls: TlsServer;
  let receiver: Receiver;
  /** The production agent with private destinations allowed (all the servers here are on 127.0.0.1). */
  let open: Agent;
  /** The production agent with the SSRF guard on. */
  let guarded: Agent;
  /** An agent that trusts the test certificate, to tell a trusted handshake from a failed one. */
  let trusting: Agent;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'chime-tls-'));
    cert = selfSignedLocalhost(dir);
    tls = await startHttpsServer(cert);
    receiver = await startReceiver();
    open = createCallbackAgent({ allowPrivate: true });
    guarded = createCallbackAgent({ allowPrivate: false });
    trusting = new Agent({ connect: { ca: cert.cert } });
  });
  afterAll(async () => {
    await Promise.all([open?.destroy(), guarded?.destroy(), trusting?.destroy()]);
    await tls?.close();
    await receiver?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a host name that does not resolve is errorClass dns, nothing sent (with and without the SSRF guard)', async () => {
    for (const [name, agent] of [
      ['open', open],
      ['guarded', guarded],
    ] as const) {
      const e = expectError(await createDeliver(agent)(request('http://nonexistent.invalid/callback'), Date.now));
      expect(e.errorClass, name).toBe(ERROR_CLASS.dns);
      expect(e.maybeSent, name).toBe(false);
      expect(e.message, name).toMatch(/ENOTFOUND|EAI_AGAIN/);
    }
  });

  it('a trusted certificate answers: the server itself works', async () => {
    const r = await createDeliver(trusting)(request(`https://localhost:${tls.port}/trusted`), Date.now);
    expect(r).toMatchObject({ kind: 'response', status: 200, bodyExcerpt: 'ok' });
  });

  it('a self-signed certificate is errorClass tls, and no request reaches the server', async () => {
    const before = tls.requests;
    const e = expectError(await createDeliver(open)(request(`https://localhost:${tls.port}/self-signed`), Date.now));
    expect(e.errorClass).toBe(ERROR_CLASS.tls);
    expect(e.maybeSent).toBe(false);
    expect(e.message).toMatch(/self[- ]signed/i);
    expect(tls.requests).toBe(before);
  });

  it('a certificate for another name is errorClass tls, even when its issuer is trusted', async () => {
    const before = tls.requests;
    // Trusted certificate, for `localhost` only: 127.0.0.1 is not among its names.
    const e = expectError(await createDeliver(trusting)(request(`https://127.0.0.1:${tls.port}/wrong-name`), Date.now));
    expect(e.errorClass).toBe(ERROR_CLASS.tls);
    expect(e.maybeSent).toBe(false);
    expect(e.message).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID|altnames/i);
    expect(tls.requests).toBe(before);
  });

  it('https to a plaintext HTTP port is errorClass tls', async () => {
    const port = new URL(receiver.url).port;
    const before = receiver.received.length;
    const e = expectError(await createDeliver(open)(request(`https://127.0.0.1:${port}/plaintext`), Date.now));
    expect(e.errorClass).toBe(ERROR_CLASS.tls);
    expect(e.maybeSent).toBe(false);
    expect(receiver.received.length).toBe(before);
  });

  it('a closed port is errorClass connection_refused, nothing sent', async () => {
    const port = await freePort();
    const e = expectError(await createDeliver(open)(request(`http://127.0.0.1:${port}/closed`), Date.now));
    expect(e).toMatchObject({ errorClass: ERROR_CLASS.connectionRefused, maybeSent: false });
    expect(e.message).toMatch(/ECONNREFUSED/);
  });

  it('no answer within timeoutMs is errorClass timeout, and the request may have been received', async () => {
    receiver.respond = () => ({ status: 200, hang: true });
    const started = Date.now();
    const e = expectError(await createDeliver(open)(request(`${receiver.url}/hang`, { timeoutMs: 300 }), Date.now));
    expect(e).toMatchObject({ errorClass: ERROR_CLASS.timeout, maybeSent: true });
    expect(e.message).toMatch(/^timed out/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(receiver.received.filter((r) => r.path === '/hang')).toHaveLength(1);
  });

  it('a connection cut after the request arrived is errorClass connection_error, maybe sent', async () => {
    receiver.respond = () => ({ status: 200, reset: true });
    const e = expectError(await createDeliver(open)(request(`${receiver.url}/reset`), Date.now));
    expect(e).toMatchObject({ errorClass: ERROR_CLASS.connection, maybeSent: true });
    expect(receiver.received.filter((r) => r.path === '/reset')).toHaveLength(1);
  });

  it('a body past the drain limit keeps the status and the first RESPONSE_EXCERPT_BYTES, and the connection is dropped', async () => {
    const big = http.createServer((_req, res) => {
      res.writeHead(503, { 'retry-after': '7' });
      res.end('é'.repeat(RESPONSE_DRAIN_LIMIT_BYTES)); // two bytes each: twice the drain limit
    });
    await new Promise<void>((r) => big.listen(0, '127.0.0.1', () => r()));
    try {
      const r = await createDeliver(open)(request(`http://127.0.0.1:${(big.address() as AddressInfo).port}/big`), Date.now);
      expect(r).toMatchObject({ kind: 'response', status: 503, retryAfterMs: 7_000 });
      const excerpt = (r as Extract<HttpResult, { kind: 'response' }>).bodyExcerpt;
      expect(Buffer.byteLength(excerpt)).toBeLessThanOrEqual(RESPONSE_EXCERPT_BYTES);
      expect(excerpt.startsWith('é'.repeat(500))).toBe(true);
    } finally {
      big.closeAllConnections();
      await new Promise<void>((r) => big.close(() => r()));
    }
  });

  it('reports the response headers, and keeps the body to keepBodyBytes when asked (successBody, result routing)', async () => {
    const body = 'ab'.repeat(40_000); // 80,000 bytes: past the 64 KiB kept
    const srv = http.createServer((_req, res) => {
      res.setHeader('Set-Cookie', ['a=1', 'b=2']);
      res.setHeader('X-Receipt', 'r1');
      res.writeHead(200, { 'Chime-Control': 'complete' });
      res.end(body);
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    try {
      const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/h`;
      const plain = (await createDeliver(open)(request(url), Date.now)) as Extract<HttpResult, { kind: 'response' }>;
      expect(plain.headers).toMatchObject({ 'x-receipt': 'r1', 'chime-control': 'complete', 'set-cookie': 'a=1, b=2' });
      expect(plain.body).toBeUndefined();
      expect(plain.bodyExcerpt).toBe(body.slice(0, RESPONSE_EXCERPT_BYTES));
      const kept = (await createDeliver(open)(request(url, { keepBodyBytes: 65_536 }), Date.now)) as Extract<
        HttpResult,
        { kind: 'response' }
      >;
      expect(Buffer.from(kept.body!).toString()).toBe(body.slice(0, 65_536));
      expect(kept.bodyTruncated).toBe(true);
    } finally {
      srv.closeAllConnections();
      await new Promise<void>((r) => srv.close(() => r()));
    }
  });

  it('the timeout counts from the call: a request still waiting for a connection when it is up ends then, as a timeout that sent nothing', async () => {
    receiver.respond = () => ({ status: 200, hang: true });
    // One connection per origin: the second request queues behind the hanging first one.
    const single = new Agent({ connections: 1 });
    try {
      const deliver = createDeliver(single);
      const first = deliver(request(`${receiver.url}/hang-first`, { timeoutMs: 2_000 }), Date.now);
      const started = Date.now();
      const queued = expectError(await deliver(request(`${receiver.url}/queued`, { timeoutMs: 300 }), Date.now));
      expect(queued).toMatchObject({ errorClass: ERROR_CLASS.timeout, maybeSent: false });
      expect(Date.now() - started).toBeLessThan(1_900);
      expect(receiver.received.filter((r) => r.path === '/queued')).toHaveLength(0);
      expectError(await first);
      // The queue is first in, first out: once a later request got through, the queued one had its turn, and was
      // dropped then rather than sent.
      receiver.respond = () => ({ status: 200 });
      expect(await deliver(request(`${receiver.url}/after`), Date.now)).toMatchObject({ kind: 'response', status: 200 });
      expect(receiver.received.filter((r) => r.path === '/queued')).toHaveLength(0);
    } finally {
      await single.destroy();
    }
  });

  it('classifyError reads the code on the error or on its cause (fetch wraps undici errors)', () => {
    const wrapped = new TypeError('fetch failed', {
      cause: Object.assign(new Error('getaddrinfo ENOTFOUND x.invalid'), { code: 'ENOTFOUND' }),
    });
    expect(classifyError(wrapped)).toMatchObject({ errorClass: ERROR_CLASS.dns, maybeSent: false });
    const tlsCause = new TypeError('fetch failed', {
      cause: Object.assign(new Error('certificate has expired'), { code: 'CERT_HAS_EXPIRED' }),
    });
    expect(classifyError(tlsCause)).toMatchObject({ errorClass: ERROR_CLASS.tls, maybeSent: false });
    expect(classifyError('not an error')).toMatchObject({ errorClass: ERROR_CLASS.connection, maybeSent: true });
  });
});
