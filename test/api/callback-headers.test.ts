/**
 * Registration applies the callback header rule (src/domain/callback-headers.ts) on every route that takes a
 * callback: each refused header is answered 400 problem+json naming `callback.headers.<name>` (the name as sent),
 * and nothing is stored or changed. Random headers are accepted exactly when the rule accepts them, and an accepted
 * header is stored as given.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callbackHeaderIssue } from '../../src/domain/callback-headers.ts';
import type { ApiResponse, TestTenant } from '../support/api.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

const URL = 'http://127.0.0.1:9/hook';
const job = (headers: Record<string, string>, extra: Record<string, unknown> = {}) => ({
  schedule: { type: 'delay', delayMs: 3_600_000 },
  callback: { url: URL, headers, ...extra },
});

/** One header each that the rule refuses: reserved names (any case), bad names, and unsendable values. */
const REFUSED: [name: string, value: string][] = [
  ['Host', 'example.com'],
  ['content-length', '5'],
  ['Content-Type', 'text/plain'],
  ['User-Agent', 'mine/1.0'],
  ['Expect', '100-continue'],
  ['Connection', 'close'],
  ['Keep-Alive', 'timeout=5'],
  ['Proxy-Connection', 'keep-alive'],
  ['Proxy-Authorization', 'Basic x'],
  ['Transfer-Encoding', 'chunked'],
  ['TE', 'trailers'],
  ['Trailer', 'X-Sum'],
  ['Upgrade', 'websocket'],
  ['webhook-id', 'mine'],
  ['Chime-Foo', 'x'],
  ['CHIME-SIGNATURE', 'x'],
  ['X Bad', 'name with a space'],
  ['X-Café', 'non-ASCII name'],
  ['X-Del', 'a\x7fb'],
  ['X-Nul', 'a\0b'],
  ['X-Cr', 'a\rb'],
  ['X-Lf', 'a\nb'],
  ['X-Bell', 'a\x07b'],
  ['X-Esc', '\x1b[31m'],
  ['X-Accent', 'café'],
  ['X-Umlaut', 'Grüße'],
  ['X-Emoji', '🙂'],
  ['X-Lead', ' x'],
  ['X-Trail', 'x\t'],
];

const pathsOf = (r: ApiResponse) => (r.body?.errors ?? []).map((e: { path: string }) => e.path);

function expectRefused(r: ApiResponse, name: string, what = name): void {
  expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(400);
  expect(r.headers.get('content-type'), what).toBe('application/problem+json');
  expect(r.body.type, what).toBe('urn:chime:problem:validation');
  expect(pathsOf(r), what).toContain(`callback.headers.${name}`);
}

describe('callback headers at registration', () => {
  let app: TestApp;
  let tenant: TestTenant;
  beforeAll(async () => {
    app = await startTestApp();
    tenant = await app.tenant('headers');
  });
  afterAll(() => app?.close());

  it.each(REFUSED)('POST /v1/jobs with %j → 400 naming it, nothing stored', async (name, value) => {
    const t = await app.tenant(`post ${name}`); // its own, so one wrongly stored job fails only its own case
    const r = await t.api.post('/v1/jobs', job({ 'X-Fine': 'ok', [name]: value }));
    expectRefused(r, name);
    expect(pathsOf(r)).not.toContain('callback.headers.X-Fine');
    expect((await t.api.get('/v1/jobs')).body.jobs).toEqual([]);
  });

  it('names every refused header of one request at once', async () => {
    const r = await tenant.api.post('/v1/jobs', job({ Expect: '100-continue', 'X-Del': 'a\x7fb', 'user-agent': 'x', 'X-Ok': 'fine' }));
    expect(r.status).toBe(400);
    expect(pathsOf(r).sort()).toEqual(['callback.headers.Expect', 'callback.headers.X-Del', 'callback.headers.user-agent']);
  });

  it('refuses an authToken that cannot be sent as Authorization: Bearer <token>, on create and on PATCH', async () => {
    const t = await app.tenant('auth tokens');
    const made = await t.api.post('/v1/jobs', job({}, { authToken: 'good-token' }));
    expect(made.status).toBe(201);
    for (const token of ['a\rb', 'a\nb', 'a\x7fb', 'café', ' lead', 'trail ']) {
      const r = await t.api.post('/v1/jobs', job({}, { authToken: token }));
      expect(r.status, JSON.stringify(token)).toBe(400);
      expect(pathsOf(r), JSON.stringify(token)).toEqual(['callback.authToken']);
      const p = await t.api.request('PATCH', `/v1/jobs/${made.body.jobId}`, { callback: { authToken: token } });
      expect(p.status, `PATCH ${JSON.stringify(token)}`).toBe(400);
      expect(pathsOf(p), `PATCH ${JSON.stringify(token)}`).toEqual(['callback.authToken']);
    }
    expect((await t.api.get(`/v1/jobs/${made.body.jobId}`)).body.callback.hasAuthToken).toBe(true);
  });

  it('refuses a name given twice in different case', async () => {
    const r = await tenant.api.post('/v1/jobs', job({ 'X-Team': 'ops', 'x-team': 'dev' }));
    expectRefused(r, 'x-team');
  });

  it('refuses Authorization next to an authToken, and accepts it alone', async () => {
    expectRefused(await tenant.api.post('/v1/jobs', job({ Authorization: 'Basic x' }, { authToken: 'tok' })), 'Authorization');
    expect((await tenant.api.get('/v1/jobs')).body.jobs).toEqual([]);
    const ok = await tenant.api.post('/v1/jobs', job({ Authorization: 'Basic x' }));
    expect(ok.status).toBe(201);
    await tenant.api.request('DELETE', `/v1/jobs/${ok.body.jobId}`);
  });

  it('PUT /v1/jobs/by-key/:key with a refused header → 400 naming it, nothing stored', async () => {
    const t = await app.tenant('by-key');
    for (const [name, value] of REFUSED) {
      expectRefused(await t.api.request('PUT', '/v1/jobs/by-key/k1', job({ [name]: value })), name, `PUT ${name}`);
    }
    expect((await t.api.get('/v1/jobs')).body.jobs).toEqual([]);
  });

  it('POST /v1/jobs/batch answers each job with a refused header 400 naming it, and stores the others', async () => {
    const t = await app.tenant('batch');
    const r = await t.api.post('/v1/jobs/batch', {
      jobs: [...REFUSED.map(([name, value]) => job({ [name]: value })), job({ 'X-Team': 'ops' })],
    });
    expect(r.status).toBe(200);
    REFUSED.forEach(([name], i) => {
      const item = r.body.results[i];
      expect(item.status, name).toBe(400);
      expect(
        item.problem.errors.map((e: { path: string }) => e.path),
        name,
      ).toContain(`callback.headers.${name}`);
    });
    expect(r.body.results[REFUSED.length].status).toBe(201);
    const stored = (await t.api.get('/v1/jobs')).body.jobs;
    expect(stored.map((j: { callback: { headers: unknown } }) => j.callback.headers)).toEqual([{ 'X-Team': 'ops' }]);
  });

  it('PATCH /v1/jobs/:jobId with a refused header → 400 naming it, the job unchanged', async () => {
    const t = await app.tenant('patch');
    const created = await t.api.post('/v1/jobs', job({ 'X-Team': 'ops' }));
    expect(created.status).toBe(201);
    const before = (await t.api.get(`/v1/jobs/${created.body.jobId}`)).body;
    for (const [name, value] of REFUSED) {
      const r = await t.api.request('PATCH', `/v1/jobs/${created.body.jobId}`, {
        callback: { headers: { 'X-Team': 'dev', [name]: value } },
      });
      expectRefused(r, name, `PATCH ${name}`);
    }
    expect((await t.api.get(`/v1/jobs/${created.body.jobId}`)).body).toEqual(before);
    // and an accepted change still goes through
    const ok = await t.api.request('PATCH', `/v1/jobs/${created.body.jobId}`, { callback: { headers: { 'X-Team': 'dev\tnight' } } });
    expect(ok.status).toBe(200);
    expect(ok.body.callback.headers).toEqual({ 'X-Team': 'dev\tnight' });
  });

  it('stores tricky-but-valid headers exactly as given', async () => {
    const t = await app.tenant('tricky');
    const headers = {
      "!#$%&'*+-.^_`|~09AZaz": 'every token character',
      'X-Punct': '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~',
      'X-Inner': 'a \t b',
      'X-Empty': '',
      'X-Long': 'v'.repeat(4096),
      Authorization: 'Basic dXNlcjpwYXNz',
    };
    const r = await t.api.post('/v1/jobs', job(headers));
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect((await t.api.get(`/v1/jobs/${r.body.jobId}`)).body.callback.headers).toEqual(headers);
  });

  it('accepts a random header exactly when the rule does, and stores it as given', async () => {
    const t = await app.tenant('random');
    const name = fc.oneof(
      fc.constantFrom(
        'Expect',
        'expect',
        'Host',
        'TE',
        'te',
        'Tee',
        'Trailer',
        'Keep-Alive',
        'proxy-x',
        'Proxy',
        'Webhook-X',
        'chime-',
        'X-Team',
        'Accept',
      ),
      fc.stringMatching(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,20}$/),
      fc.string({ minLength: 0, maxLength: 6 }),
    );
    const value = fc.oneof(
      fc.string({ unit: fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)), maxLength: 20 }),
      fc.string({ unit: fc.constantFrom(' ', '\t', 'a', '~', '"'), maxLength: 6 }),
      fc.string({ unit: 'grapheme', maxLength: 6 }),
    );
    await fc.assert(
      fc.asyncProperty(name, value, async (n, v) => {
        fc.pre(n !== '__proto__'); // zod drops a __proto__ key (see the report of this change)
        const r = await t.api.post('/v1/jobs', job({ [n]: v }));
        const issue = callbackHeaderIssue(n, v);
        if (issue === null) {
          expect(r.status, JSON.stringify(r.body)).toBe(201);
          expect(r.body.callback.headers).toEqual({ [n]: v });
        } else {
          expectRefused(r, n, `${JSON.stringify(n)}: ${JSON.stringify(v)} (${issue})`);
        }
      }),
      { numRuns: 150 },
    );
  });
});
