/**
 * Every header the callback header rule (src/domain/callback-headers.ts) accepts goes out exactly as given, and a
 * stored header it refuses is left out instead of failing the attempt. Against a real HTTP server on 127.0.0.1
 * (node:http, which keeps each header line as received in `rawHeaders`), through the real request builder
 * (`buildCallbackRequest`) and both senders: undici (`createDeliver` over the production agent, the Node dispatcher)
 * and `fetch` (`createFetchDeliver`, the Workers path, here Node's global fetch). Last, undici itself on its own:
 * whatever name or value it refuses to send, or sends altered, the rule refuses too.
 */

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { type Agent, request, errors as undiciErrors } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { performAttempt } from '../../src/dispatch/attempt.ts';
import { buildCallbackRequest } from '../../src/dispatch/callback-request.ts';
import { createCallbackAgent, createDeliver, type Deliver } from '../../src/dispatch/deliver.ts';
import type { Keyring } from '../../src/dispatch/keyring.ts';
import { callbackHeaderIssue, callbackHeadersIssues, HEADER_NAME_PATTERN } from '../../src/domain/callback-headers.ts';
import type { ClaimedRun } from '../../src/domain/claimed-run.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { resolveRetryPolicy } from '../../src/domain/retry.ts';
import { createFetchDeliver } from '../../src/worker/fetch-deliver.ts';

const NOW = Date.UTC(2030, 0, 1);
const USER_AGENT = 'chime/test';
/** Every visible ASCII character that is not a letter or digit. */
const PUNCTUATION = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
/** Every character an RFC 9110 token may hold. */
const TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** 4096 characters cycling through all of visible ASCII (0x21-0x7e). */
const LONG_VALUE = Array.from({ length: 4096 }, (_, i) => String.fromCharCode(0x21 + (i % 94))).join('');

/** A keyring that needs no database: one signing secret, a fixed JWT, auth tokens "opened" by a prefix. */
const keyring: Keyring = {
  secretsFor: async () => [`whsec_${Buffer.alloc(32, 7).toString('base64')}`],
  jwtSigner: async () => ({ kid: 'test', sign: async () => 'header.claims.signature' }),
  openAuthToken: async (sealed) => `opened-${sealed}`,
};

/** A claimed run of a job with `headers` as stored, to `url`. */
const claimedRun = (url: string, headers: Record<string, string>, authTokenEnc: string | null = null): ClaimedRun => ({
  shard: 0,
  runId: '01900000-0000-7000-8000-000000000001',
  eventId: null,
  jobId: '01900000-0000-7000-8000-000000000002',
  tenantId: '01900000-0000-7000-8000-000000000003',
  scheduledForMs: NOW,
  trigger: 'schedule',
  attempt: 1,
  leaseExpiresAtMs: NOW + 60_000,
  dueAtMs: NOW,
  callback: { url, method: 'POST', headers, successStatusCodes: ['2xx'], timeoutMs: 5_000 },
  authTokenEnc,
  payload: { hello: 'world' },
  retry: resolveRetryPolicy(null),
  relevancyWindowMs: null,
  deliveryMode: 'at-least-once',
});

type Seen = { path: string; rawHeaders: string[] };

/** The values of every header line named `name` (case-sensitive, or not), in arrival order. */
function lines(seen: Seen, name: string, caseSensitive: boolean): string[] {
  const out: string[] = [];
  for (let i = 0; i < seen.rawHeaders.length; i += 2) {
    const n = seen.rawHeaders[i]!;
    if (caseSensitive ? n === name : n.toLowerCase() === name.toLowerCase()) out.push(seen.rawHeaders[i + 1]!);
  }
  return out;
}

describe('callback headers on the wire', () => {
  let server: http.Server;
  let base: string;
  const seen = new Map<string, Seen>();
  let agent: Agent;
  let senders: { name: 'undici' | 'fetch'; deliver: Deliver }[];
  let n = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume().on('end', () => {
        seen.set(req.url!, { path: req.url!, rawHeaders: req.rawHeaders });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    agent = createCallbackAgent({ allowPrivate: true });
    senders = [
      { name: 'undici', deliver: createDeliver(agent) },
      { name: 'fetch', deliver: createFetchDeliver({ allowPrivate: true }) },
    ];
  });
  afterAll(async () => {
    await agent?.destroy();
    server?.closeAllConnections();
    await new Promise<void>((r) => server?.close(() => r()));
  });

  /** Builds and sends the callback of a job with `headers` as stored; returns what the server saw. */
  async function send(sender: Deliver, headers: Record<string, string>, authTokenEnc: string | null = null): Promise<Seen> {
    const path = `/cb/${++n}`;
    const req = await buildCallbackRequest(claimedRun(`${base}${path}`, headers, authTokenEnc), keyring, NOW, USER_AGENT);
    const result = await sender(req, () => NOW);
    expect(result, JSON.stringify(result)).toMatchObject({ kind: 'response', status: 200 });
    return seen.get(path)!;
  }

  /**
   * Each of `headers` arrived once, exactly as given: on undici also the name's spelling; `fetch` lower-cases names
   * (Headers does), which HTTP does not tell apart (RFC 9110 §5.1).
   */
  function expectSentAsGiven(got: Seen, headers: Record<string, string>, sender: 'undici' | 'fetch'): void {
    for (const [name, value] of Object.entries(headers)) {
      expect(lines(got, name, false), `${sender} ${name}`).toEqual([value]);
      if (sender === 'undici') expect(lines(got, name, true), `${sender} ${name}`).toEqual([value]);
    }
    expect(lines(got, 'user-agent', false)).toEqual([USER_AGENT]);
    expect(lines(got, 'content-type', false)).toEqual(['application/json']);
    expect(lines(got, 'webhook-id', false)).toEqual(['01900000-0000-7000-8000-000000000001']);
  }

  /** Headers the rule accepts that some layer could be tempted to touch. Two jobs' worth (at most 20 each). */
  const TRICKY: Record<string, string>[] = [
    {
      'X-Inner-Whitespace': 'a b\tc  d\t\te \t f',
      'X-Punctuation': PUNCTUATION,
      'X-Punctuation-Spaced': PUNCTUATION.split('').join(' \t'),
      'X-Long': LONG_VALUE,
      [TOKEN_CHARS]: 'every token character in the name',
      "!#$%&'*+-.^_`|~": 'punctuation-only name',
      'X-Empty': '',
      'X-One': 'x',
      'X-Json': '{"a":[1,"b"],"c":null}',
      'X-Quoted': '"a \\"quoted\\" string", (comment)',
      'X-Commas': 'a, b,c ,d',
    },
    {
      Accept: 'application/json',
      'Accept-Encoding': 'identity',
      'Accept-Language': 'de-CH, en;q=0.5',
      'Cache-Control': 'no-cache',
      Pragma: 'no-cache',
      Cookie: 'a=b; c=d',
      Origin: 'https://example.com',
      Referer: 'https://example.com/page?x=1',
      Authorization: 'Basic dXNlcjpwYXNz',
      'If-None-Match': 'W/"abc"',
      'X-Forwarded-For': '203.0.113.7',
      'x-lower-case': 'lower',
      'X-UPPER-CASE': 'UPPER',
    },
  ];

  /**
   * Accepted headers that Node's global fetch alters (Fetch Standard, "HTTP-network-or-cache fetch"): it sets
   * Sec-Fetch-Mode itself, and appends `identity` to Accept-Encoding when Range is present. Only the undici path
   * (production on Node) is held to them; the Workers runtime has its own fetch.
   */
  const NODE_FETCH_ALTERS = { 'Sec-Fetch-Mode': 'navigate', Range: 'bytes=0-10', 'Accept-Encoding': 'identity' };

  it('the tricky headers are all accepted by the rule (so the tests below are about accepted headers)', () => {
    for (const headers of [...TRICKY, NODE_FETCH_ALTERS]) expect(callbackHeadersIssues(headers)).toEqual([]);
  });

  for (const sender of ['undici', 'fetch'] as const) {
    it.each(TRICKY.map((h, i) => [i, h] as const))(`${sender} sends the tricky headers of job %i exactly as given`, async (_i, headers) => {
      const s = senders.find((x) => x.name === sender)!;
      expectSentAsGiven(await send(s.deliver, headers), headers, sender);
    });
  }

  it("undici also sends the headers Node's fetch would alter exactly as given", async () => {
    expectSentAsGiven(await send(senders[0]!.deliver, NODE_FETCH_ALTERS), NODE_FETCH_ALTERS, 'undici');
  });

  it("leaves out every stored header the rule refuses, and the attempt succeeds with Chime's own headers", async () => {
    const stored = {
      'X-Team': 'ops',
      Expect: '100-continue',
      'X-Del': 'a\x7fb',
      'X-Bell': 'a\x07b',
      'X-Accent': 'café',
      'X-Emoji': 'ok 🙂',
      'X-Pad': ' padded ',
      'User-Agent': 'mine/1.0',
      'content-type': 'text/plain',
      Connection: 'close',
      'Keep-Alive': 'timeout=5',
      'Transfer-Encoding': 'chunked',
      Upgrade: 'websocket',
      Host: 'evil.example',
      'Content-Length': '1',
      TE: 'trailers',
      'webhook-id': 'forged',
      'Chime-Attempt': '99',
      Authorization: 'Basic mine',
      'x-team': 'dup',
    };
    for (const s of senders) {
      const path = `/cb/${++n}`;
      const outcome = await performAttempt(claimedRun(`${base}${path}`, stored, 'sealed-token'), {
        clock: new ManualClock(NOW),
        keyring,
        deliver: s.deliver,
        userAgent: USER_AGENT,
        random: () => 0.5,
      });
      expect(outcome, s.name).toMatchObject({ runStatus: 'succeeded', responseStatus: 200, errorClass: null });
      const got = seen.get(path)!;
      expect(lines(got, 'x-team', false), s.name).toEqual(['ops']);
      expect(lines(got, 'user-agent', false), s.name).toEqual([USER_AGENT]);
      expect(lines(got, 'content-type', false), s.name).toEqual(['application/json']);
      expect(lines(got, 'authorization', false), s.name).toEqual(['Bearer opened-sealed-token']);
      expect(lines(got, 'webhook-id', false), s.name).toEqual(['01900000-0000-7000-8000-000000000001']);
      expect(lines(got, 'chime-attempt', false), s.name).toEqual(['1']);
      expect(lines(got, 'host', false), s.name).toEqual([base.slice('http://'.length)]);
      for (const name of ['expect', 'x-del', 'x-bell', 'x-accent', 'x-emoji', 'x-pad', 'upgrade', 'te', 'transfer-encoding']) {
        expect(lines(got, name, false), `${s.name} ${name}`).toEqual([]);
      }
    }
  });

  /** Header names: reserved-looking ones (which the rule must sort right) and random tokens. */
  const headerName = fc.oneof(
    fc.constantFrom(
      'Expect',
      'Host',
      'Content-Length',
      'Content-Type',
      'User-Agent',
      'Connection',
      'Keep-Alive',
      'Proxy-Connection',
      'Transfer-Encoding',
      'TE',
      'Trailer',
      'Upgrade',
      'Webhook-Id',
      'Chime-X',
      'Authorization',
      'Accept',
      'Accept-Encoding',
      'Cookie',
      'Tee',
      'Expected',
      'X-Host',
    ),
    fc.stringMatching(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,24}$/),
  );
  /** Header values: ASCII (controls and DEL included), whitespace at the ends, and some non-ASCII. */
  const headerValue = fc.oneof(
    { weight: 4, arbitrary: fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 80 }) },
    { weight: 2, arbitrary: fc.string({ unit: fc.constantFrom(' ', '\t', 'a', '"', '\\', ',', ';', '='), maxLength: 12 }) },
    { weight: 1, arbitrary: fc.string({ unit: fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)), maxLength: 12 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 6 }) },
  );
  /** Up to 20 candidate headers, kept only where the rule accepts them (what registration would have stored). */
  const acceptedHeaders = fc.array(fc.tuple(headerName, headerValue), { maxLength: 20 }).map((pairs) => {
    const headers = Object.fromEntries(pairs.filter(([name]) => name !== '__proto__'));
    const refused = new Set(callbackHeadersIssues(headers).map((i) => i.name));
    return Object.fromEntries(Object.entries(headers).filter(([name]) => !refused.has(name)));
  });

  for (const sender of ['undici', 'fetch'] as const) {
    it(`${sender} sends random accepted headers exactly as given`, async () => {
      const s = senders.find((x) => x.name === sender)!;
      await fc.assert(
        fc.asyncProperty(acceptedHeaders, async (headers) => {
          expectSentAsGiven(await send(s.deliver, headers), headers, sender);
        }),
        { numRuns: 150 },
      );
    });
  }

  it('whatever undici refuses to send, or sends altered, the rule refuses', async () => {
    // Candidates: the names undici treats specially, and every 8-bit character (plus a few beyond) inside a value,
    // first and last. Sent with undici's own `request`, without Chime's filter in between.
    const candidates: [string, string][] = [
      ...[
        'expect',
        'Expect',
        'connection',
        'keep-alive',
        'upgrade',
        'transfer-encoding',
        'content-length',
        'host',
        'content-type',
        'te',
        'trailer',
      ].map((name): [string, string] => [name, name === 'content-length' ? 'x' : 'y']),
      ['Connection', 'a b'],
    ];
    for (let c = 0; c <= 0xff; c++) {
      const ch = String.fromCharCode(c);
      candidates.push(['X-Mid', `a${ch}b`], ['X-Start', `${ch}b`], ['X-End', `a${ch}`]);
    }
    for (const ch of ['\u0100', '\u2028', '\ufeff', '\ud800', '🙂']) candidates.push(['X-Wide', `a${ch}b`]);

    const fmt = (name: string, value: string) => `${name}: ${JSON.stringify(value)}`;
    const refusedByUndici: string[] = [];
    const alteredByUndici: string[] = [];
    const wronglyAccepted: string[] = [];
    for (const [name, value] of candidates) {
      const path = `/raw/${++n}`;
      const what = fmt(name, value);
      let sentAsGiven = false;
      try {
        const res = await request(`${base}${path}`, { method: 'POST', headers: { [name]: value }, body: '{}', dispatcher: agent });
        await res.body.dump();
        sentAsGiven = JSON.stringify(lines(seen.get(path)!, name, true)) === JSON.stringify([value]);
        if (!sentAsGiven) alteredByUndici.push(what);
      } catch (err) {
        expect(err, what).toBeInstanceOf(undiciErrors.UndiciError);
        refusedByUndici.push(what);
      }
      if (!sentAsGiven && callbackHeaderIssue(name, value) === null) wronglyAccepted.push(what);
    }
    expect(wronglyAccepted).toEqual([]);
    // Not vacuous: undici does refuse these, and a receiver does strip these.
    const refusedExpected: [string, string][] = [
      ['expect', 'y'],
      ['upgrade', 'y'],
      ['transfer-encoding', 'y'],
      ['keep-alive', 'y'],
      ['content-length', 'x'],
      ['Connection', 'a b'],
      ['X-Mid', 'a\x7fb'],
      ['X-Mid', 'a\0b'],
      ['X-Mid', 'a\rb'],
      ['X-Mid', 'a\nb'],
      ['X-Mid', 'a\x01b'],
      ['X-Wide', 'a🙂b'],
    ];
    for (const [name, value] of refusedExpected) expect(refusedByUndici).toContain(fmt(name, value));
    for (const [name, value] of [
      ['connection', 'y'],
      ['X-End', 'a '],
      ['X-Start', '\tb'],
    ] as const)
      expect(alteredByUndici).toContain(fmt(name, value));
  });

  it('the rule accepts only RFC 9110 token names (what undici checks names against)', () => {
    for (let c = 0; c <= 0x7f; c++) {
      const name = `X-${String.fromCharCode(c)}`;
      expect(callbackHeaderIssue(name, 'v') === null, name).toBe(HEADER_NAME_PATTERN.test(name));
    }
  });
});
