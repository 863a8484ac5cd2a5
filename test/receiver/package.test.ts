/**
 * `@chime/receiver` (packages/receiver) as a receiver uses it: `verifyWebhook` cross-checked with the Standard Webhooks
 * reference library on the same requests; `verifyChimeSignature` on tokens made by the service's own signers
 * (src/dispatch/sign.ts through jose, src/dispatch/jwt-node.ts through node:crypto) with a real Ed25519 key whose JWKS
 * is served over real HTTP on 127.0.0.1; `verifyAll`; the Hono middleware (`@chime/receiver/hono`) through
 * `app.request`; the Node/Express helper (`@chime/receiver/node`) behind a real `http.createServer`; and the
 * package's shape (no `node:` import, no runtime hono import, every export built).
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { bodyHash, verifyAll, verifyChimeSignature, verifyWebhook } from '@chime/receiver';
import { Hono } from 'hono';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChimeWebhookEnv, chimeWebhook } from '../../packages/receiver/src/hono.ts';
import { expressWebhook, type NodeRequestLike, readRawBody } from '../../packages/receiver/src/node.ts';
import { createNodeJwtSigner } from '../../src/dispatch/jwt-node.ts';
import { createJwtSigner, type JwtSigner, standardWebhookSignature } from '../../src/dispatch/sign.ts';

const PACKAGE = new URL('../../packages/receiver/', import.meta.url);
const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
const SECRET = newSecret();
const OLD_SECRET = newSecret();
const nowSec = () => Math.floor(Date.now() / 1000);
const BODY = JSON.stringify({ report: 'nightly', emoji: '⏰', n: 1 });

/** The Standard Webhooks headers of a request signed by the reference library with each of `secrets`. */
function referenceSigned(secrets: string[], o: { id?: string; ts?: number; body?: string } = {}) {
  const id = o.id ?? `run-${randomBytes(4).toString('hex')}`;
  const ts = o.ts ?? nowSec();
  const body = o.body ?? BODY;
  const signature = secrets.map((s) => new Webhook(s).sign(id, new Date(ts * 1000), body)).join(' ');
  return { headers: { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': signature }, body };
}

/** Whether the reference library accepts the request (it throws when not). */
function referenceAccepts(req: { headers: Record<string, string>; body: string }, secret: string): boolean {
  try {
    new Webhook(secret).verify(req.body, req.headers);
    return true;
  } catch {
    return false;
  }
}

describe('verifyWebhook against the standardwebhooks library', () => {
  it('verifies what the library signs, and the library verifies what Chime signs, with { ok, id, timestamp }', async () => {
    const ts = nowSec();
    const theirs = referenceSigned([SECRET], { id: 'run-1', ts });
    expect(await verifyWebhook(theirs, SECRET)).toEqual({ ok: true, id: 'run-1', timestamp: ts });
    expect(await verifyWebhook({ ...theirs, headers: new Headers(theirs.headers) }, [SECRET])).toEqual({
      ok: true,
      id: 'run-1',
      timestamp: ts,
    });

    const chime = {
      headers: {
        'webhook-id': 'run-2',
        'webhook-timestamp': String(ts),
        'webhook-signature': standardWebhookSignature([SECRET], 'run-2', ts, BODY),
      },
      body: BODY,
    };
    expect(chime.headers['webhook-signature']).toBe(new Webhook(SECRET).sign('run-2', new Date(ts * 1000), BODY));
    expect(referenceAccepts(chime, SECRET)).toBe(true);
    expect(await verifyWebhook(chime, SECRET)).toEqual({ ok: true, id: 'run-2', timestamp: ts });
  });

  it('refuses a forged body, a stale timestamp and a wrong secret, as the library does, each with its reason', async () => {
    const good = referenceSigned([SECRET]);
    const cases: { name: string; req: typeof good; secret: string; reason: RegExp }[] = [
      {
        name: 'forged body',
        req: { ...good, body: BODY.replace('nightly', 'hourly') },
        secret: SECRET,
        reason: /^no signature matches the secret\(s\)$/,
      },
      {
        name: 'stale timestamp',
        req: referenceSigned([SECRET], { ts: nowSec() - 301 }),
        secret: SECRET,
        reason: /^webhook-timestamp is too old \(30\d s ago\)$/,
      },
      { name: 'future timestamp', req: referenceSigned([SECRET], { ts: nowSec() + 400 }), secret: SECRET, reason: /too far in the future/ },
      { name: 'wrong secret', req: good, secret: newSecret(), reason: /^no signature matches the secret\(s\)$/ },
      {
        name: 'no signature',
        req: { ...good, headers: { ...good.headers, 'webhook-signature': '' } },
        secret: SECRET,
        reason: /^missing webhook-signature header$/,
      },
    ];
    for (const c of cases) {
      expect(referenceAccepts(c.req, c.secret), c.name).toBe(false);
      const r = await verifyWebhook(c.req, c.secret);
      expect(r.ok, c.name).toBe(false);
      expect(r.ok ? '' : r.reason, c.name).toMatch(c.reason);
    }
    // The tolerance is configurable, in seconds.
    expect((await verifyWebhook(referenceSigned([SECRET], { ts: nowSec() - 30 }), SECRET, { toleranceSeconds: 10 })).ok).toBe(false);
  });

  it('accepts a request during a rotation: two signatures, two secrets, either side', async () => {
    // Chime signs with both secrets (newest first); the receiver may hold the new, the old or both.
    const ts = nowSec();
    const both = {
      headers: {
        'webhook-id': 'run-rot',
        'webhook-timestamp': String(ts),
        'webhook-signature': standardWebhookSignature([SECRET, OLD_SECRET], 'run-rot', ts, BODY),
      },
      body: BODY,
    };
    expect(both.headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const s of [SECRET, OLD_SECRET]) expect(referenceAccepts(both, s)).toBe(true);
    for (const secrets of [SECRET, OLD_SECRET, [SECRET, OLD_SECRET], [OLD_SECRET, SECRET]]) {
      expect(await verifyWebhook(both, secrets), String(secrets)).toEqual({ ok: true, id: 'run-rot', timestamp: ts });
    }
    // Signed with the old secret only (the service has not rotated yet), the receiver holding both.
    expect((await verifyWebhook(referenceSigned([OLD_SECRET]), [SECRET, OLD_SECRET])).ok).toBe(true);
    // Neither of the receiver's secrets.
    expect(await verifyWebhook(both, [newSecret(), newSecret()])).toEqual({ ok: false, reason: 'no signature matches the secret(s)' });
  });

  it('agrees with the library on random requests, tampered or not, inside and outside the tolerance', async () => {
    for (let i = 0; i < 40; i++) {
      const secret = newSecret();
      const body = JSON.stringify({ i, s: randomBytes(i).toString('latin1') });
      const req = referenceSigned([secret], { id: `run-${i}`, ts: nowSec() + [-500, -100, 0, 100, 500][i % 5]!, body });
      const input = i % 3 === 0 ? { ...req, body: `${body} ` } : req;
      expect((await verifyWebhook(input, secret)).ok, `case ${i}`).toBe(referenceAccepts(input, secret));
    }
  });
});

/** A JWKS served over HTTP on 127.0.0.1, counting its requests. */
async function serveJwks(keys: JWK[]) {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`,
    hits: () => hits,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A key as the service makes one (src/store/jwt-keys.ts): Ed25519, kid = RFC 7638 thumbprint; and its JWKS entry. */
async function serviceKey() {
  const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return {
    signingJwk: { kid, alg: 'EdDSA', privateJwk: await exportJWK(privateKey), createdAtMs: Date.now() },
    jwksEntry: { ...publicJwk, kid, alg: 'EdDSA', use: 'sig' } as JWK,
    privateKey,
  };
}

const HOOK_URL = 'https://receiver.example.com/hooks/report?tenant=a';

describe("verifyChimeSignature with the service's signers and a JWKS over HTTP", () => {
  let jwks: Awaited<ReturnType<typeof serveJwks>>;
  let key: Awaited<ReturnType<typeof serviceKey>>;
  let other: Awaited<ReturnType<typeof serviceKey>>;
  let signers: [string, JwtSigner][];

  beforeAll(async () => {
    key = await serviceKey();
    other = await serviceKey();
    jwks = await serveJwks([key.jwksEntry]);
    signers = [
      ['sign.ts (jose)', await createJwtSigner(key.signingJwk)],
      ['jwt-node.ts (node:crypto)', await createNodeJwtSigner(key.signingJwk, 'node')],
    ];
  });
  afterAll(() => jwks.close());

  /** A request as Chime sends it to HOOK_URL: a run's callback with the JWT of `signer`. */
  async function callback(signer: JwtSigner, o: { body?: string; sub?: string; iatSec?: number; runId?: string; attempt?: number } = {}) {
    const body = o.body ?? BODY;
    const iatSec = o.iatSec ?? nowSec();
    const runId = o.runId ?? `0190${randomBytes(6).toString('hex')}`;
    const jwt = await signer.sign({ sub: o.sub ?? HOOK_URL, jti: `${runId}.${o.attempt ?? 1}`, body, iatSec });
    const headers: Record<string, string> = {
      'webhook-id': runId,
      'webhook-timestamp': String(iatSec),
      'webhook-signature': standardWebhookSignature([SECRET], runId, iatSec, body),
      'chime-signature': jwt,
    };
    return { headers, body, url: HOOK_URL, runId, iatSec };
  }

  it('accepts a token of either service signer: id = the run id of jti, timestamp = iat', async () => {
    for (const [name, signer] of signers) {
      const req = await callback(signer, { attempt: 3 });
      expect(await verifyChimeSignature(req, { jwksUrl: jwks.url }), name).toEqual({ ok: true, id: req.runId, timestamp: req.iatSec });
      // Headers as a fetch Headers, the URL as a URL and in another spelling of the same URL.
      const sameUrl = new URL('HTTPS://Receiver.Example.com:443/hooks/report?tenant=a');
      expect(
        (await verifyChimeSignature({ ...req, headers: new Headers(req.headers), url: sameUrl }, { jwksUrl: new URL(jwks.url) })).ok,
        name,
      ).toBe(true);
    }
    // The two signers make the same token (Ed25519 is deterministic): the receiver cannot tell them apart.
    const claims = { sub: HOOK_URL, jti: 'r.1', body: BODY, iatSec: nowSec() };
    expect(await signers[0]![1].sign(claims)).toBe(await signers[1]![1].sign(claims));
  });

  it('fetches the JWKS once for many requests (one cached key set per URL)', async () => {
    const before = jwks.hits();
    for (let i = 0; i < 5; i++) expect((await verifyChimeSignature(await callback(signers[0]![1]), { jwksUrl: jwks.url })).ok).toBe(true);
    expect(jwks.hits() - before).toBe(0);
    expect(jwks.hits()).toBeLessThanOrEqual(1);
  });

  it('refuses a JWT for another URL, a changed body, an expired token and another key, each with its reason', async () => {
    for (const [name, signer] of signers) {
      const forOther = await callback(signer, { sub: 'https://receiver.example.com/hooks/other' });
      expect(await verifyChimeSignature(forOther, { jwksUrl: jwks.url }), name).toEqual({ ok: false, reason: 'JWT for another URL' });

      const changed = await callback(signer);
      expect(await verifyChimeSignature({ ...changed, body: BODY.replace('nightly', 'hourly') }, { jwksUrl: jwks.url }), name).toEqual({
        ok: false,
        reason: 'body hash mismatch',
      });

      // exp = iat + 300; 400 s ago is past the 60 s default tolerance.
      const expired = await callback(signer, { iatSec: nowSec() - 400 });
      expect(await verifyChimeSignature(expired, { jwksUrl: jwks.url }), name).toEqual({
        ok: false,
        reason: 'signature invalid: ERR_JWT_EXPIRED ("exp" claim timestamp check failed)',
      });
      // Within a larger tolerance it passes; at the time it was sent (nowMs) too.
      expect((await verifyChimeSignature(expired, { jwksUrl: jwks.url, clockToleranceSeconds: 120 })).ok, name).toBe(true);
      expect((await verifyChimeSignature(expired, { jwksUrl: jwks.url, nowMs: expired.iatSec * 1000 })).ok, name).toBe(true);

      const future = await callback(signer, { iatSec: nowSec() + 120 });
      expect(await verifyChimeSignature(future, { jwksUrl: jwks.url }), name).toMatchObject({
        ok: false,
        reason: expect.stringMatching(/^JWT issued in the future \(1[12]\d s ahead\)$/),
      });
    }

    // Signed by another key under the published kid: the signature does not verify.
    const forged = await createJwtSigner({ ...other.signingJwk, kid: key.signingJwk.kid });
    expect(await verifyChimeSignature(await callback(forged), { jwksUrl: jwks.url })).toEqual({
      ok: false,
      reason: 'signature invalid: ERR_JWS_SIGNATURE_VERIFICATION_FAILED (signature verification failed)',
    });
    // Signed by another key under its own kid, which the JWKS does not have.
    expect(await verifyChimeSignature(await callback(await createJwtSigner(other.signingJwk)), { jwksUrl: jwks.url })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^signature invalid: ERR_JWKS_NO_MATCHING_KEY /),
    });
  });

  it('refuses a missing, malformed, unsigned, foreign-issuer or body-less token', async () => {
    const req = await callback(signers[0]![1]);
    const withToken = (jwt: string | undefined) => ({ ...req, headers: { ...req.headers, 'chime-signature': jwt } });
    const reasonOf = async (jwt: string | undefined) => {
      const r = await verifyChimeSignature(withToken(jwt), { jwksUrl: jwks.url });
      expect(r.ok).toBe(false);
      return r.ok ? '' : r.reason;
    };
    expect(await reasonOf(undefined)).toBe('missing Chime-Signature header');
    expect(await reasonOf('')).toBe('missing Chime-Signature header');
    expect(await reasonOf('not.a.jwt')).toMatch(/^signature invalid: ERR_JWS_INVALID /);
    const [h, p] = req.headers['chime-signature']!.split('.');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${p}.`;
    expect(await reasonOf(none)).toMatch(/^signature invalid: ERR_JOSE_ALG_NOT_ALLOWED /);
    expect(await reasonOf(`${h}.${p}.${Buffer.alloc(64).toString('base64url')}`)).toMatch(
      /^signature invalid: ERR_JWS_SIGNATURE_VERIFICATION_FAILED /,
    );

    const token = (claims: Record<string, unknown>, issuer = 'chime') =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'EdDSA', kid: key.signingJwk.kid, typ: 'JWT' })
        .setIssuer(issuer)
        .setSubject(HOOK_URL)
        .setIssuedAt()
        .setExpirationTime('5m')
        .setJti('run.1')
        .sign(key.privateKey);
    const bodyClaim = createHash('sha256').update(BODY).digest('base64url');
    expect(await reasonOf(await token({ body: bodyClaim }, 'someone-else'))).toMatch(
      /^signature invalid: ERR_JWT_CLAIM_VALIDATION_FAILED \(unexpected "iss" claim value\)$/,
    );
    expect(await reasonOf(await token({}))).toMatch(
      /^signature invalid: ERR_JWT_CLAIM_VALIDATION_FAILED \(missing required "body" claim\)$/,
    );
    // Control: the same token with its body claim and issuer passes.
    expect((await verifyChimeSignature(withToken(await token({ body: bodyClaim })), { jwksUrl: jwks.url })).ok).toBe(true);
  }, 10_000);

  it('encodes the body hash as Chime does: base64url SHA-256 of the UTF-8 bytes, no padding', async () => {
    for (const body of ['', BODY, '{"s":"é漢字🙂"}', 'x'.repeat(1000)]) {
      expect(await bodyHash(body)).toBe(createHash('sha256').update(body).digest('base64url'));
    }
  });

  it('takes a key set given as jwks (no fetch), binds the notification run id, and says when the JWKS is unreachable', async () => {
    const req = await callback(signers[1]![1]);
    expect((await verifyChimeSignature(req, { jwks: { keys: [key.jwksEntry] } })).ok).toBe(true);
    expect(await verifyChimeSignature(req, { jwks: { keys: [other.jwksEntry] } })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^signature invalid: /),
    });

    const closed = await serveJwks([]);
    await closed.close();
    const down = await verifyChimeSignature(req, { jwksUrl: closed.url });
    expect(down).toMatchObject({ ok: false, reason: expect.stringMatching(/^JWKS unavailable: /) });
    const empty = await serveJwks([]);
    expect(await verifyChimeSignature(req, { jwksUrl: empty.url })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^signature invalid: ERR_JWKS_NO_MATCHING_KEY/),
    });
    await empty.close();
  });

  it('throws TypeError for a configuration error only', async () => {
    const req = await callback(signers[0]![1]);
    await expect(verifyChimeSignature(req, {})).rejects.toThrow(TypeError);
    await expect(verifyChimeSignature(req, { jwksUrl: 'not a url' })).rejects.toThrow(TypeError);
    await expect(verifyChimeSignature(req, { jwksUrl: 'file:///etc/jwks.json' })).rejects.toThrow(TypeError);
    await expect(verifyChimeSignature(req, { jwksUrl: jwks.url, clockToleranceSeconds: -1 })).rejects.toThrow(TypeError);
    await expect(verifyChimeSignature({ ...req, url: '' }, { jwksUrl: jwks.url })).rejects.toThrow(TypeError);
    await expect(verifyChimeSignature({ ...req, body: JSON.parse(BODY) as unknown as string }, { jwksUrl: jwks.url })).rejects.toThrow(
      TypeError,
    );
    // A forged request never throws.
    await expect(verifyChimeSignature({ ...req, headers: { 'chime-signature': '...' } }, { jwksUrl: jwks.url })).resolves.toMatchObject({
      ok: false,
    });
  });

  it('verifyAll: both signatures, the id from webhook-id (a notification: the event id, while jti has the run id)', async () => {
    const req = await callback(signers[0]![1]);
    expect(await verifyAll(req, { secrets: SECRET, jwksUrl: jwks.url })).toEqual({ ok: true, id: req.runId, timestamp: req.iatSec });
    // Without a JWKS only the HMAC is checked.
    expect((await verifyAll({ ...req, headers: { ...req.headers, 'chime-signature': 'x' } }, { secrets: SECRET })).ok).toBe(true);
    expect(await verifyAll({ ...req, url: 'https://elsewhere.example/' }, { secrets: SECRET, jwksUrl: jwks.url })).toEqual({
      ok: false,
      reason: 'JWT for another URL',
    });
    expect(await verifyAll(req, { secrets: newSecret(), jwksUrl: jwks.url })).toEqual({
      ok: false,
      reason: 'no signature matches the secret(s)',
    });
    await expect(verifyAll({ headers: req.headers, body: req.body }, { secrets: SECRET, jwksUrl: jwks.url })).rejects.toThrow(TypeError);

    // A notification delivery: webhook-id is the event id, the JWT's jti the delivery's run id.
    const ts = nowSec();
    const jwt = await signers[0]![1].sign({ sub: HOOK_URL, jti: 'run-of-event.2', body: BODY, iatSec: ts });
    const event = {
      headers: {
        'webhook-id': 'evt-1',
        'webhook-timestamp': String(ts),
        'webhook-signature': standardWebhookSignature([SECRET], 'evt-1', ts, BODY),
        'chime-signature': jwt,
      },
      body: BODY,
      url: HOOK_URL,
    };
    expect(await verifyAll(event, { secrets: [SECRET], jwksUrl: jwks.url })).toEqual({ ok: true, id: 'evt-1', timestamp: ts });
    expect(await verifyChimeSignature(event, { jwksUrl: jwks.url })).toEqual({ ok: true, id: 'run-of-event', timestamp: ts });
  });

  describe('the Hono middleware (@chime/receiver/hono)', () => {
    function app(opts: Parameters<typeof chimeWebhook>[0]) {
      const a = new Hono<ChimeWebhookEnv>();
      a.post('/hooks/report', chimeWebhook(opts), async (c) => c.json({ verified: c.get('chimeWebhook'), payload: await c.req.json() }));
      return a;
    }

    it('passes a good request on with c.get("chimeWebhook"), the body still readable, and answers 401 { reason } otherwise', async () => {
      const a = app({ secrets: [SECRET, OLD_SECRET], jwksUrl: jwks.url, url: HOOK_URL });
      const req = await callback(signers[0]![1]);
      const ok = await a.request('http://internal:8080/hooks/report', { method: 'POST', headers: req.headers, body: req.body });
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ verified: { ok: true, id: req.runId, timestamp: req.iatSec }, payload: JSON.parse(BODY) });

      const forged = await a.request('/hooks/report', { method: 'POST', headers: req.headers, body: BODY.replace('1', '2') });
      expect(forged.status).toBe(401);
      expect(await forged.json()).toEqual({ reason: 'no signature matches the secret(s)' });

      // The HMAC is right, the JWT is for another URL.
      const elsewhere = await callback(signers[0]![1], { sub: 'https://receiver.example.com/hooks/other' });
      const r = await a.request('/hooks/report', { method: 'POST', headers: elsewhere.headers, body: elsewhere.body });
      expect(r.status).toBe(401);
      expect(await r.json()).toEqual({ reason: 'JWT for another URL' });
    });

    it("requires url with a JWKS (the Host header is the caller's), and checks only the HMAC without a JWKS", async () => {
      // Without url the Host header made the URL: a callback for another receiver, replayed with its Host, passed.
      expect(() => chimeWebhook({ secrets: SECRET, jwksUrl: jwks.url })).toThrow(
        new TypeError(
          "chimeWebhook: the url option is required with jwksUrl or jwks: the URL this route is called at, exactly as the job's callback.url (the Host header of a request cannot be trusted to say it)",
        ),
      );
      expect(() => chimeWebhook({ secrets: SECRET, jwks: { keys: [] }, url: '' })).toThrow(/url option is required/);
      const signer = signers[1]![1];
      // A callback captured on its way to receiver.example.com, replayed here with its Host header.
      const captured = await callback(signer);
      const mine = app({ secrets: SECRET, jwksUrl: jwks.url, url: 'https://mine.example.com/hooks/report?tenant=a' });
      const replayed = await mine.request(HOOK_URL, {
        method: 'POST',
        headers: { ...captured.headers, host: 'receiver.example.com' },
        body: captured.body,
      });
      expect(replayed.status).toBe(401);
      expect(await replayed.json()).toEqual({ reason: 'JWT for another URL' });
      expect(
        (await app({ secrets: SECRET }).request('/hooks/report', { method: 'POST', headers: captured.headers, body: captured.body }))
          .status,
      ).toBe(200);
    });

    it('refuses a bad configuration when made', () => {
      expect(() => chimeWebhook({ secrets: [] })).toThrow(TypeError);
      expect(() => chimeWebhook({ secrets: SECRET, jwksUrl: 'nope', url: HOOK_URL })).toThrow(TypeError);
      expect(() => chimeWebhook({ secrets: SECRET, jwksUrl: jwks.url, url: '/hooks/report' })).toThrow(
        /url option must be an absolute URL/,
      );
      expect(() => chimeWebhook({ secrets: SECRET, jwksUrl: jwks.url, url: 'ftp://example.com/hooks' })).toThrow(/http or https/);
    });
  });

  describe('the Node/Express helper (@chime/receiver/node) behind http.createServer', () => {
    let server: http.Server;
    let base: string;
    /** What each request's handler does before the middleware: nothing, or play a body parser. */
    let before: (req: http.IncomingMessage & NodeRequestLike) => Promise<void> = async () => {};
    let mw: ReturnType<typeof expressWebhook>;

    beforeAll(async () => {
      server = http.createServer((incoming, res) => {
        const req = incoming as http.IncomingMessage & NodeRequestLike;
        void before(req).then(() =>
          mw(req, res, (err) => {
            res.setHeader('content-type', 'application/json');
            if (err) {
              res.statusCode = 500;
              res.end(JSON.stringify({ error: String(err) }));
            } else {
              res.end(JSON.stringify({ verified: req.chimeWebhook, rawBody: req.rawBody }));
            }
          }),
        );
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    });

    it('accepts a good request (req.chimeWebhook, req.rawBody) and answers 401 { reason } for a bad one', async () => {
      mw = expressWebhook({ secrets: [SECRET], jwksUrl: jwks.url, url: HOOK_URL });
      before = async () => {};
      const req = await callback(signers[1]![1]);
      const ok = await fetch(`${base}/hooks`, { method: 'POST', headers: req.headers, body: req.body });
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ verified: { ok: true, id: req.runId, timestamp: req.iatSec }, rawBody: BODY });

      const changed = await fetch(`${base}/hooks`, { method: 'POST', headers: req.headers, body: `${BODY} ` });
      expect(changed.status).toBe(401);
      expect(changed.headers.get('content-type')).toBe('application/json');
      expect(await changed.json()).toEqual({ reason: 'no signature matches the secret(s)' });

      const noJwt = { ...req.headers };
      delete noJwt['chime-signature'];
      const r = await fetch(`${base}/hooks`, { method: 'POST', headers: noJwt, body: req.body });
      expect(r.status).toBe(401);
      expect(await r.json()).toEqual({ reason: 'missing Chime-Signature header' });
    });

    it('requires url with a JWKS: a callback for another host, replayed with its Host header, is refused', async () => {
      // Without url the URL was built from the Host header: this replay passed.
      expect(() => expressWebhook({ secrets: SECRET, jwksUrl: jwks.url })).toThrow(
        /^expressWebhook: the url option is required with jwksUrl or jwks/,
      );
      const signer = signers[0]![1];
      const captured = await callback(signer, { sub: 'http://receiver-a.example/hooks?x=1' });
      mw = expressWebhook({ secrets: SECRET, jwksUrl: jwks.url, url: `${base}/hooks?x=1` });
      before = async () => {};
      const replayed = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        // fetch may not set Host; http.request may.
        const r = http.request(
          `${base}/hooks?x=1`,
          { method: 'POST', headers: { ...captured.headers, host: 'receiver-a.example' } },
          (res) => {
            let text = '';
            res.on('data', (d) => (text += d)).on('end', () => resolve({ status: res.statusCode!, body: text }));
          },
        );
        r.on('error', reject);
        r.end(captured.body);
      });
      expect(replayed).toEqual({ status: 401, body: JSON.stringify({ reason: 'JWT for another URL' }) });
      // Only the HMAC without a JWKS: no url needed (none is checked).
      mw = expressWebhook({ secrets: SECRET });
      expect((await fetch(`${base}/hooks`, { method: 'POST', headers: captured.headers, body: captured.body })).status).toBe(200);
    });

    it('checks the configured url; uses a Buffer left by express.raw(); refuses a parsed body; 413 past limitBytes', async () => {
      mw = expressWebhook({ secrets: SECRET, jwksUrl: jwks.url, url: `${base}/hooks?x=1` });
      const signer = signers[0]![1];
      const here = await callback(signer, { sub: `${base}/hooks?x=1` });
      before = async () => {};
      expect((await fetch(`${base}/hooks?x=1`, { method: 'POST', headers: here.headers, body: here.body })).status).toBe(200);
      const there = await callback(signer, { sub: `${base}/hooks?x=2` });
      expect((await fetch(`${base}/hooks?x=2`, { method: 'POST', headers: there.headers, body: there.body })).status).toBe(401);

      before = async (req) => {
        req.body = Buffer.from(await readRawBody(req)); // as express.raw() leaves it
      };
      expect((await fetch(`${base}/hooks?x=1`, { method: 'POST', headers: here.headers, body: here.body })).status).toBe(200);

      before = async (req) => {
        req.body = JSON.parse(await readRawBody(req)); // as express.json() leaves it: too late to verify
      };
      const parsed = await fetch(`${base}/hooks?x=1`, { method: 'POST', headers: here.headers, body: here.body });
      expect(parsed.status).toBe(500);
      expect(((await parsed.json()) as { error: string }).error).toMatch(/TypeError: expressWebhook: the body was already read/);

      before = async () => {};
      mw = expressWebhook({ secrets: SECRET, limitBytes: 16 });
      const big = await fetch(`${base}/hooks`, { method: 'POST', headers: here.headers, body: here.body });
      expect(big.status).toBe(413);
      expect(await big.json()).toEqual({ reason: 'request body larger than 16 bytes' });
    });

    it('readRawBody keeps a character split across chunks, and a byte order mark', async () => {
      const stream = new PassThrough();
      const text = '\uFEFF{"t":"⏰🙂"}';
      const bytes = Buffer.from(text);
      const reading = readRawBody(stream);
      for (let i = 0; i < bytes.length; i += 3) stream.write(bytes.subarray(i, i + 3));
      stream.end();
      expect(await reading).toBe(text);
    });

    it('refuses a bad configuration when made', () => {
      expect(() => expressWebhook({ secrets: 'whsec_not base64!' })).toThrow(TypeError);
      expect(() => expressWebhook({ secrets: SECRET, jwks: { keys: 'no' } as never, url: HOOK_URL })).toThrow(TypeError);
      expect(() => expressWebhook({ secrets: SECRET, jwks: { keys: [] } })).toThrow(/url option is required/);
      expect(() => expressWebhook({ secrets: SECRET, jwks: { keys: [] }, url: 'not a url' })).toThrow(/url option must be an absolute URL/);
    });
  });
});

describe('the package', () => {
  it('imports no node: module anywhere, and hono only as types', async () => {
    const dir = new URL('src/', PACKAGE);
    for (const f of await readdir(dir)) {
      const source = await readFile(new URL(f, dir), 'utf8');
      expect(source, f).not.toMatch(/from\s+['"]node:|require\(/);
      for (const m of source.matchAll(/^import\s+(type\s+)?[^;]*?from\s+'([^']+)'/gm)) {
        const [, typeOnly, from] = m;
        expect(from!.startsWith('./') || from === 'jose' || (from === 'hono' && typeOnly !== undefined), `${f}: ${m[0]}`).toBe(true);
      }
    }
  });

  it('builds every export (npm run build ran in the global setup), the main entry without hono', async () => {
    const pkg = JSON.parse(await readFile(new URL('package.json', PACKAGE), 'utf8')) as {
      exports: Record<string, { types: string; import: string }>;
    };
    expect(Object.keys(pkg.exports)).toEqual(['.', './hono', './node']);
    for (const [sub, target] of Object.entries(pkg.exports)) {
      for (const file of [target.types, target.import]) expect(existsSync(new URL(file, PACKAGE)), `${sub}: ${file}`).toBe(true);
    }
    for (const f of await readdir(new URL('dist/', PACKAGE))) {
      if (!f.endsWith('.js')) continue;
      const js = await readFile(new URL(`dist/${f}`, PACKAGE), 'utf8');
      expect(js, f).not.toMatch(/from\s*['"](hono|node:[^'"]*)['"]/);
    }
    // The built main entry works: what `npm pack` would ship.
    const built = (await import(pathToFileURL(new URL('dist/index.js', PACKAGE).pathname).href)) as typeof import('@chime/receiver');
    const req = referenceSigned([SECRET]);
    expect(await built.verifyWebhook(req, SECRET)).toMatchObject({ ok: true, id: req.headers['webhook-id'] });
  });
});
