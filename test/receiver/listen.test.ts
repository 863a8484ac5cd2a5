/**
 * `runListen` (src/listen.ts, `chime listen`) in process: real HTTP requests to it, correctly and incorrectly
 * signed (Standard Webhooks and Chime-Signature against a JWKS), and the blocks it prints.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Listener, runListen } from '../../src/listen.ts';

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

function capture() {
  let text = '';
  const out = new Writable({
    write(chunk, _enc, cb) {
      text += String(chunk);
      cb();
    },
  });
  return { out, text: () => text };
}

/** The headers of a callback as Chime sends it, signed with `secret` over `body`. */
function callbackHeaders(secret: string, body: string, o: { id?: string; attempt?: number; jwt?: string } = {}): Record<string, string> {
  const id = o.id ?? '0190c0de-0000-7000-8000-000000000001';
  const now = new Date();
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, now, body),
    'chime-attempt': String(o.attempt ?? 1),
    ...(o.jwt ? { 'chime-signature': o.jwt } : {}),
  };
}

/** The block printed for the request whose webhook-id is `id`. */
function blockOf(text: string, id: string): string {
  const block = text.split('\n\n').find((b) => b.includes(id));
  if (!block) throw new Error(`no block for ${id} in:\n${text}`);
  return block;
}

describe('chime listen', () => {
  let listener: Listener | undefined;
  afterEach(async () => {
    await listener?.close();
    listener = undefined;
  });

  it('prints method, path, webhook-id, attempt, the verdict and the pretty body, and answers 200', async () => {
    const cap = capture();
    listener = await runListen({ port: 0, secrets: [SECRET], out: cap.out });
    expect(listener.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const body = JSON.stringify({ report: 'nightly', items: [1, 2] });
    const good = await fetch(`${listener.url}/hooks/report?x=1`, {
      method: 'POST',
      headers: callbackHeaders(SECRET, body, { id: 'run-good', attempt: 3 }),
      body,
    });
    expect(good.status).toBe(200);
    const goodBlock = blockOf(cap.text(), 'run-good');
    expect(goodBlock).toMatch(/^--> POST \/hooks\/report\?x=1 /);
    expect(goodBlock).toMatch(/webhook-id: +run-good\n/);
    expect(goodBlock).toMatch(/attempt: +3\n/);
    expect(goodBlock).toMatch(/signature: +verified\n/);
    expect(goodBlock).toContain(JSON.stringify(JSON.parse(body), null, 2));
    expect(goodBlock).not.toContain('chime-signature'); // no JWKS given: not checked, not mentioned

    // Signed with another secret: printed as invalid, still answered 200.
    const other = `whsec_${randomBytes(24).toString('base64')}`;
    const bad = await fetch(`${listener.url}/hooks/report`, {
      method: 'PUT',
      headers: callbackHeaders(other, body, { id: 'run-bad' }),
      body,
    });
    expect(bad.status).toBe(200);
    const badBlock = blockOf(cap.text(), 'run-bad');
    expect(badBlock).toMatch(/^--> PUT \/hooks\/report /);
    expect(badBlock).toMatch(/signature: +INVALID \(no signature matches the secret\(s\)\)\n/);

    // Correctly signed, but the body changed on the way.
    await fetch(`${listener.url}/hooks/report`, {
      method: 'POST',
      headers: callbackHeaders(SECRET, body, { id: 'run-tampered' }),
      body: body.replace('nightly', 'hourly'),
    });
    expect(blockOf(cap.text(), 'run-tampered')).toMatch(/signature: +INVALID/);

    // Unsigned GET without a body.
    await fetch(`${listener.url}/hooks/ping`, { headers: { 'webhook-id': 'run-unsigned' } });
    const unsigned = blockOf(cap.text(), 'run-unsigned');
    expect(unsigned).toMatch(/^--> GET \/hooks\/ping /);
    expect(unsigned).toMatch(/signature: +INVALID \(missing webhook-timestamp header\)/);
    expect(unsigned).toContain('(empty body)');
  });

  it('verifies with any of several secrets (rotation) and says so when given none', async () => {
    const cap = capture();
    const newer = `whsec_${randomBytes(24).toString('base64')}`;
    listener = await runListen({ port: 0, secrets: [newer, SECRET], out: cap.out });
    const body = '{"a":1}';
    await fetch(listener.url, { method: 'POST', headers: callbackHeaders(SECRET, body, { id: 'run-old-secret' }), body });
    expect(blockOf(cap.text(), 'run-old-secret')).toMatch(/signature: +verified/);
    await listener.close();

    const cap2 = capture();
    listener = await runListen({ port: 0, secrets: [], out: cap2.out });
    await fetch(listener.url, { method: 'POST', headers: callbackHeaders(SECRET, body, { id: 'run-no-secret' }), body: 'not json' });
    const block = blockOf(cap2.text(), 'run-no-secret');
    expect(block).toMatch(/signature: +not checked/);
    expect(block).toContain('\nnot json'); // a body that is not JSON is printed as is
  });

  it('an async job: --complete-after answers 202 and reports succeeded with the token; without it, 200 and the curl to report', async () => {
    // Chime's completion route, as far as the listener sees it: records the report, answers the run.
    const reports: { path: string; authorization: string | undefined; body: string }[] = [];
    const chime = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c));
      req.on('end', () => {
        reports.push({ path: req.url!, authorization: req.headers.authorization, body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"succeeded"}');
      });
    });
    await new Promise<void>((r) => chime.listen(0, '127.0.0.1', r));
    const completionUrl = `http://127.0.0.1:${(chime.address() as AddressInfo).port}/v1/runs/run-long/completion`;
    const headers = (id: string) => ({
      ...callbackHeaders(SECRET, '{}', { id }),
      'chime-run-id': id,
      'chime-completion-url': completionUrl,
      'chime-completion-token': 'ct1.0.1.token',
    });
    try {
      const cap = capture();
      listener = await runListen({ port: 0, secrets: [SECRET], out: cap.out, completeAfterMs: 50 });
      const r = await fetch(`${listener.url}/export`, { method: 'POST', headers: headers('run-long'), body: '{}' });
      expect(r.status).toBe(202);
      expect(blockOf(cap.text(), 'run-long')).toMatch(/completion: +answered 202; reporting succeeded in 50 ms to http/);
      const deadline = Date.now() + 10_000;
      while (!cap.text().includes('<-- run run-long') && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
      expect(cap.text()).toContain('<-- run run-long: reported succeeded after 50 ms; the run is succeeded');
      expect(reports).toEqual([
        {
          path: '/v1/runs/run-long/completion',
          authorization: 'Bearer ct1.0.1.token',
          body: JSON.stringify({ status: 'succeeded', output: { completedBy: 'chime listen', afterMs: 50 } }),
        },
      ]);
      await listener.close();

      const cap2 = capture();
      listener = await runListen({ port: 0, secrets: [SECRET], out: cap2.out });
      const plain = await fetch(`${listener.url}/export`, { method: 'POST', headers: headers('run-by-hand'), body: '{}' });
      expect(plain.status).toBe(200);
      expect(blockOf(cap2.text(), 'run-by-hand')).toContain(`curl -X POST ${completionUrl} -H 'authorization: Bearer ct1.0.1.token'`);
      expect(reports).toHaveLength(1);
    } finally {
      chime.closeAllConnections();
      await new Promise<void>((r) => chime.close(() => r()));
    }
  });

  it('refuses a mistyped secret before listening', async () => {
    await expect(runListen({ port: 0, secrets: ['whsec_not base64!'], out: capture().out })).rejects.toThrow(TypeError);
  });

  describe('with a JWKS', () => {
    let jwksServer: http.Server;
    let jwksUrl: string;
    let sign: (body: string, o?: { issuer?: string; forged?: boolean }) => Promise<string>;

    beforeAll(async () => {
      const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
      const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'EdDSA', use: 'sig' };
      jwksServer = http.createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ keys: [jwk] }));
      });
      await new Promise<void>((r) => jwksServer.listen(0, '127.0.0.1', () => r()));
      jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/.well-known/jwks.json`;
      const otherKey = (await generateKeyPair('EdDSA', { crv: 'Ed25519' })).privateKey;
      sign = (body, o = {}) =>
        new SignJWT({ body: createHash('sha256').update(body).digest('base64url') })
          .setProtectedHeader({ alg: 'EdDSA', kid: 'k1', typ: 'JWT' })
          .setIssuer(o.issuer ?? 'chime')
          .setSubject('http://127.0.0.1/hook')
          .setIssuedAt()
          .setExpirationTime('5m')
          .setJti('run.1')
          .sign(o.forged ? otherKey : privateKey); // forged: the published kid, another key
    });
    afterAll(async () => {
      jwksServer.closeAllConnections();
      await new Promise<void>((r) => jwksServer.close(() => r()));
    });

    it('prints whether Chime-Signature verifies against the JWKS and matches the body', async () => {
      const cap = capture();
      listener = await runListen({ port: 0, secrets: [SECRET], out: cap.out, jwksUrl });
      const body = '{"x":"y"}';
      const post = (id: string, jwt: string | undefined, sentBody = body) =>
        fetch(listener!.url, { method: 'POST', headers: callbackHeaders(SECRET, body, { id, ...(jwt ? { jwt } : {}) }), body: sentBody });

      await post('jwt-good', await sign(body));
      expect(blockOf(cap.text(), 'jwt-good')).toMatch(/chime-signature: verified \(kid k1\)\n/);

      await post('jwt-other-body', await sign('{"x":"z"}'));
      expect(blockOf(cap.text(), 'jwt-other-body')).toMatch(/chime-signature: INVALID \(the body claim does not match the body\)/);

      await post('jwt-forged', await sign(body, { forged: true }));
      expect(blockOf(cap.text(), 'jwt-forged')).toMatch(/chime-signature: INVALID \(signature verification failed\)/);

      await post('jwt-issuer', await sign(body, { issuer: 'someone-else' }));
      expect(blockOf(cap.text(), 'jwt-issuer')).toMatch(/chime-signature: INVALID \(.*iss.*\)/);

      await post('jwt-missing', undefined);
      expect(blockOf(cap.text(), 'jwt-missing')).toMatch(/chime-signature: INVALID \(missing Chime-Signature header\)/);
    });
  });
});

describe('@chime/receiver (packages/receiver/src)', () => {
  it('stays runtime-portable: no node: (or other) imports', async () => {
    const source = await readFile(new URL('../../packages/receiver/src/index.ts', import.meta.url), 'utf8');
    expect(source).not.toMatch(/^\s*import\s/m);
    expect(source).not.toMatch(/require\(|from\s+['"]node:/);
  });
});
