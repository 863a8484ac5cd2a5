/**
 * `verifyWebhook` (src/receiver.ts) against the Standard Webhooks reference library (`standardwebhooks`): what one
 * signs the other verifies, both ways; secret rotation; and every way a request must be refused.
 */
import { randomBytes } from 'node:crypto';
import { decodeSigningSecret, verifyWebhook } from '@chime/receiver';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { standardWebhookSignature } from '../../src/dispatch/sign.ts';

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
const SECRET = newSecret();
const OTHER = newSecret();
const NOW_MS = Date.UTC(2030, 0, 1, 12, 0, 0, 250);
const NOW_SEC = Math.floor(NOW_MS / 1000);
const ID = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
const BODY = JSON.stringify({ report: 'nightly', emoji: '⏰', n: 1 });

/** A request signed by the reference library with `secrets` (one `v1,` entry each, space-separated). */
function signed(secrets: string[], o: { id?: string; timestampSec?: number; body?: string } = {}) {
  const id = o.id ?? ID;
  const ts = o.timestampSec ?? NOW_SEC;
  const body = o.body ?? BODY;
  const signature = secrets.map((s) => new Webhook(s).sign(id, new Date(ts * 1000), body)).join(' ');
  return { headers: { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': signature }, body };
}

describe('verifyWebhook', () => {
  it('accepts what the standardwebhooks library signs, and returns the id and timestamp', async () => {
    expect(await verifyWebhook(signed([SECRET]), SECRET, { nowMs: NOW_MS })).toEqual({ ok: true, id: ID, timestamp: NOW_SEC });
    // Also with a fetch Headers object, with the real clock and with the secret given without its prefix.
    const live = signed([SECRET], { timestampSec: Math.floor(Date.now() / 1000) });
    expect((await verifyWebhook({ headers: new Headers(live.headers), body: live.body }, SECRET)).ok).toBe(true);
    expect((await verifyWebhook(live, SECRET.slice('whsec_'.length))).ok).toBe(true);
  });

  it('produces nothing the standardwebhooks library would refuse, and refuses what it refuses (random cases)', async () => {
    for (let i = 0; i < 50; i++) {
      const secret = newSecret();
      const body = JSON.stringify({ i, s: randomBytes(i).toString('latin1') });
      const ts = Math.floor(Date.now() / 1000) + [-600, -200, 0, 200, 600][i % 5]!; // inside and outside the 5 min tolerance
      const req = signed([secret], { id: `run-${i}`, timestampSec: ts, body });
      const wrongBody = i % 3 === 0;
      const input = wrongBody ? { ...req, body: `${body} ` } : req;
      let theirs = true;
      try {
        new Webhook(secret).verify(input.body, input.headers);
      } catch {
        theirs = false;
      }
      const ours = await verifyWebhook(input, secret);
      expect(ours.ok, `case ${i} (ts offset ${ts - Math.floor(Date.now() / 1000)} s, wrong body ${wrongBody})`).toBe(theirs);
    }
  });

  it("signs like the library verifies: Chime's own signer, checked by both", async () => {
    // The dispatcher's signer (src/dispatch/sign.ts) is what real callbacks carry.
    const ts = Math.floor(Date.now() / 1000);
    const sig = standardWebhookSignature([SECRET], ID, ts, BODY);
    const req = { headers: { 'webhook-id': ID, 'webhook-timestamp': String(ts), 'webhook-signature': sig }, body: BODY };
    expect(() => new Webhook(SECRET).verify(req.body, req.headers)).not.toThrow();
    expect(await verifyWebhook(req, SECRET)).toMatchObject({ ok: true });
  });

  it('accepts any matching signature of any secret during a rotation', async () => {
    const both = signed([OTHER, SECRET]);
    for (const secrets of [SECRET, OTHER, [SECRET, OTHER], [newSecret(), OTHER]]) {
      expect((await verifyWebhook(both, secrets, { nowMs: NOW_MS })).ok, String(secrets)).toBe(true);
    }
    // One signature, two candidate secrets (the receiver rotates first).
    expect((await verifyWebhook(signed([SECRET]), [OTHER, SECRET], { nowMs: NOW_MS })).ok).toBe(true);
    // A repeated header (array value) counts as a list of signatures too, and so does a ", "-combined one.
    const [a, b] = both.headers['webhook-signature'].split(' ');
    const asArray = { ...both, headers: { ...both.headers, 'webhook-signature': [a!, b!] } };
    expect((await verifyWebhook(asArray, SECRET, { nowMs: NOW_MS })).ok).toBe(true);
    const combined = { ...both, headers: { ...both.headers, 'webhook-signature': `${a}, ${b}` } };
    expect((await verifyWebhook(combined, SECRET, { nowMs: NOW_MS })).ok).toBe(true);
    // No secret of the receiver's matches.
    expect(await verifyWebhook(both, [newSecret(), newSecret()], { nowMs: NOW_MS })).toEqual({
      ok: false,
      reason: 'no signature matches the secret(s)',
    });
  });

  it('refuses a tampered body, id or timestamp', async () => {
    const req = signed([SECRET]);
    const tampered = [
      { ...req, body: BODY.replace('nightly', 'hourly') },
      { ...req, body: `${BODY}\n` },
      { ...req, headers: { ...req.headers, 'webhook-id': `${ID}x` } },
      { ...req, headers: { ...req.headers, 'webhook-timestamp': String(NOW_SEC + 1) } },
    ];
    for (const t of tampered)
      expect(await verifyWebhook(t, SECRET, { nowMs: NOW_MS })).toEqual({ ok: false, reason: 'no signature matches the secret(s)' });
  });

  it('refuses a signature made with another secret', async () => {
    expect(await verifyWebhook(signed([OTHER]), SECRET, { nowMs: NOW_MS })).toMatchObject({ ok: false });
    // Same key bytes in a different version slot, or a truncated signature, do not pass either.
    const good = signed([SECRET]).headers['webhook-signature'];
    for (const sig of [good.replace('v1,', 'v1a,'), good.slice(0, -4), 'v1,', 'v1', `v2,${good.slice(3)}`, 'garbage']) {
      const r = await verifyWebhook({ ...signed([SECRET]), headers: { ...signed([SECRET]).headers, 'webhook-signature': sig } }, SECRET, {
        nowMs: NOW_MS,
      });
      expect(r.ok, sig).toBe(false);
    }
  });

  it('refuses stale and future timestamps beyond the tolerance, both ways, and honours toleranceSeconds', async () => {
    const at = (offsetSec: number) => signed([SECRET], { timestampSec: NOW_SEC + offsetSec });
    expect((await verifyWebhook(at(-300), SECRET, { nowMs: NOW_MS })).ok).toBe(true);
    expect((await verifyWebhook(at(300), SECRET, { nowMs: NOW_MS })).ok).toBe(true);
    const stale = await verifyWebhook(at(-301), SECRET, { nowMs: NOW_MS });
    expect(stale).toMatchObject({ ok: false, reason: expect.stringContaining('too old') });
    const future = await verifyWebhook(at(301), SECRET, { nowMs: NOW_MS });
    expect(future).toMatchObject({ ok: false, reason: expect.stringContaining('future') });
    expect((await verifyWebhook(at(-10), SECRET, { nowMs: NOW_MS, toleranceSeconds: 5 })).ok).toBe(false);
    expect((await verifyWebhook(at(10), SECRET, { nowMs: NOW_MS, toleranceSeconds: 5 })).ok).toBe(false);
    expect((await verifyWebhook(at(-5), SECRET, { nowMs: NOW_MS, toleranceSeconds: 5 })).ok).toBe(true);
    // The reference library agrees on the default window (it reads the real clock).
    const old = signed([SECRET], { timestampSec: Math.floor(Date.now() / 1000) - 301 });
    expect(() => new Webhook(SECRET).verify(old.body, old.headers)).toThrow(/too old/);
    expect((await verifyWebhook(old, SECRET)).ok).toBe(false);
    // A timestamp that is not integer seconds.
    for (const ts of ['', 'abc', `${NOW_SEC}.5`, `${NOW_MS}x`, '-1']) {
      const req = signed([SECRET]);
      const r = await verifyWebhook({ ...req, headers: { ...req.headers, 'webhook-timestamp': ts } }, SECRET, { nowMs: NOW_MS });
      expect(r.ok, JSON.stringify(ts)).toBe(false);
    }
  });

  it('refuses a request missing any of the three headers, naming it', async () => {
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const) {
      const req = signed([SECRET]);
      const headers: Record<string, string | undefined> = { ...req.headers };
      delete headers[name];
      expect(await verifyWebhook({ ...req, headers }, SECRET, { nowMs: NOW_MS })).toEqual({ ok: false, reason: `missing ${name} header` });
      expect(await verifyWebhook({ ...req, headers: new Headers(headers as Record<string, string>) }, SECRET, { nowMs: NOW_MS })).toEqual({
        ok: false,
        reason: `missing ${name} header`,
      });
    }
    expect(await verifyWebhook({ headers: {}, body: '' }, SECRET)).toMatchObject({ ok: false });
  });

  it('reads header names case-insensitively from a plain record, and refuses a repeated webhook-id', async () => {
    const req = signed([SECRET]);
    const upper = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k.toUpperCase(), v]));
    expect((await verifyWebhook({ ...req, headers: upper }, SECRET, { nowMs: NOW_MS })).ok).toBe(true);
    const twice = { ...req, headers: { ...req.headers, 'webhook-id': [ID, 'other'] } };
    expect(await verifyWebhook(twice, SECRET, { nowMs: NOW_MS })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('more than one'),
    });
  });

  it('throws on a secret that is not one (configuration error), not on a bad request', async () => {
    await expect(verifyWebhook(signed([SECRET]), [], { nowMs: NOW_MS })).rejects.toThrow(TypeError);
    await expect(verifyWebhook(signed([SECRET]), 'whsec_', { nowMs: NOW_MS })).rejects.toThrow(TypeError);
    await expect(verifyWebhook(signed([SECRET]), 'whsec_not base64!', { nowMs: NOW_MS })).rejects.toThrow(TypeError);
    // NaN would let every timestamp through: replay protection off without a word.
    for (const toleranceSeconds of [Number.NaN, -1, Number.POSITIVE_INFINITY]) {
      await expect(
        verifyWebhook(signed([SECRET], { timestampSec: 978_307_200 }), SECRET, { nowMs: NOW_MS, toleranceSeconds }),
      ).rejects.toThrow(TypeError);
    }
    expect(decodeSigningSecret(SECRET)).toEqual(new Uint8Array(Buffer.from(SECRET.slice(6), 'base64')));
  });
});
