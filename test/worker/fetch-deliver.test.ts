/**
 * The Worker's fetch-based delivery (src/worker/fetch-deliver.ts) has the semantics of the Node dispatcher's undici
 * delivery: the request as built, redirects not followed, Retry-After read, a 1 KiB excerpt, one deadline over
 * headers and body, failures as classified values. msw stands in for the receiver where the point is how the
 * Worker's own `fetch` handling reads responses; a real closed port where the point is a real connect failure.
 */
import { delay, HttpResponse, http } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CallbackRequest } from '../../src/dispatch/deliver.ts';
import { classifyFetchError, createFetchDeliver, FETCH_EXCERPT_BYTES } from '../../src/worker/fetch-deliver.ts';
import { freePort } from '../support/chime-process.ts';

const NOW = Date.UTC(2030, 0, 1);
const request = (over: Partial<CallbackRequest> = {}): CallbackRequest => ({
  url: 'https://hooks.example.com/cb?x=1',
  method: 'POST',
  headers: { 'content-type': 'application/json', 'webhook-id': 'run-1', 'x-team': 'ops' },
  body: '{"a":1}',
  timeoutMs: 2000,
  ...over,
});
const deliver = createFetchDeliver({ allowPrivate: false });

describe('against msw', () => {
  const server = setupServer();
  beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
  afterEach(() => server.resetHandlers());
  afterAll(() => server.close());

  it('sends the request as built and reads status and excerpt', async () => {
    let seen: { method: string; url: string; headers: Record<string, string>; body: string } | null = null;
    server.use(
      http.all('https://hooks.example.com/cb', async ({ request: r }) => {
        seen = { method: r.method, url: r.url, headers: Object.fromEntries(r.headers), body: await r.text() };
        return new HttpResponse('accepted', { status: 202, headers: { 'X-Receipt': 'r1', 'Chime-Control': 'pause' } });
      }),
    );
    const result = await deliver(request({ method: 'PUT' }), () => NOW);
    // The response's headers too (names lower-cased), for the attempt log and Chime-Control; no body kept unless asked.
    expect(result).toMatchObject({ kind: 'response', status: 202, retryAfterMs: null, bodyExcerpt: 'accepted' });
    expect(result.kind === 'response' && result.headers).toMatchObject({ 'x-receipt': 'r1', 'chime-control': 'pause' });
    expect(result.kind === 'response' && result.body).toBeUndefined();
    expect(seen).toMatchObject({ method: 'PUT', url: 'https://hooks.example.com/cb?x=1', body: '{"a":1}' });
    expect(seen!.headers).toMatchObject({ 'webhook-id': 'run-1', 'x-team': 'ops', 'content-type': 'application/json' });
  });

  it('sends GET without a body', async () => {
    let body: string | null = null;
    server.use(
      http.get('https://hooks.example.com/cb', async ({ request: r }) => {
        body = await r.text();
        return new HttpResponse(null, { status: 204 });
      }),
    );
    expect(await deliver(request({ method: 'GET', body: null }), () => NOW)).toMatchObject({
      kind: 'response',
      status: 204,
      bodyExcerpt: '',
    });
    expect(body).toBe('');
  });

  it('never follows a redirect: the 3xx is the result', async () => {
    let followed = 0;
    server.use(
      http.post(
        'https://hooks.example.com/cb',
        () => new HttpResponse(null, { status: 302, headers: { location: 'https://other.example.com/' } }),
      ),
      http.all('https://other.example.com/', () => {
        followed += 1;
        return new HttpResponse('no');
      }),
    );
    expect(await deliver(request(), () => NOW)).toMatchObject({ kind: 'response', status: 302 });
    expect(followed).toBe(0);
  });

  it('reads Retry-After in seconds and as an HTTP date, in ms from now', async () => {
    server.use(http.post('https://hooks.example.com/cb', () => new HttpResponse('busy', { status: 503, headers: { 'retry-after': '7' } })));
    expect(await deliver(request(), () => NOW)).toMatchObject({ status: 503, retryAfterMs: 7000 });
    server.use(
      http.post(
        'https://hooks.example.com/cb',
        () => new HttpResponse('slow down', { status: 429, headers: { 'retry-after': new Date(NOW + 90_000).toUTCString() } }),
      ),
    );
    expect(await deliver(request(), () => NOW)).toMatchObject({ status: 429, retryAfterMs: 90_000 });
  });

  it('keeps the body up to keepBodyBytes when asked (successBody, result routing), and says when it went on', async () => {
    const long = 'x'.repeat(70_000);
    server.use(http.post('https://hooks.example.com/cb', () => new HttpResponse(long, { status: 200 })));
    const result = await deliver({ ...request(), keepBodyBytes: 65_536 }, () => NOW);
    expect(result.kind === 'response' && result.body?.length).toBe(65_536);
    expect(result.kind === 'response' && result.bodyTruncated).toBe(true);
    expect(result.kind === 'response' && result.bodyExcerpt.length).toBe(FETCH_EXCERPT_BYTES);
  });

  it('keeps the first 4 KiB of a long body, decoded as UTF-8', async () => {
    const long = 'é'.repeat(5000); // 2 bytes each: 4096 bytes = 2048 characters
    server.use(http.post('https://hooks.example.com/cb', () => new HttpResponse(long, { status: 500 })));
    const result = await deliver(request(), () => NOW);
    expect(result).toMatchObject({ kind: 'response', status: 500 });
    expect(result.kind === 'response' && result.bodyExcerpt).toBe('é'.repeat(FETCH_EXCERPT_BYTES / 2));
  });

  it('times out a response that does not come within timeoutMs: class timeout, maybe sent', async () => {
    server.use(
      http.post('https://hooks.example.com/cb', async () => {
        await delay('infinite');
        return new HttpResponse('late');
      }),
    );
    const result = await deliver(request({ timeoutMs: 300 }), () => NOW);
    expect(result).toMatchObject({ kind: 'error', errorClass: 'timeout', maybeSent: true });
  });

  it('keeps the status when the body stalls past the deadline', async () => {
    server.use(
      http.post('https://hooks.example.com/cb', () => {
        const stream = new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(new TextEncoder().encode('partial'));
            // never closed: the rest of the body never comes
          },
        });
        return new HttpResponse(stream, { status: 200 });
      }),
    );
    const result = await deliver(request({ timeoutMs: 300 }), () => NOW);
    expect(result).toMatchObject({ kind: 'response', status: 200, retryAfterMs: null, bodyExcerpt: 'partial' });
  });

  it('a network error is a connection error that may have been sent', async () => {
    server.use(http.post('https://hooks.example.com/cb', () => HttpResponse.error()));
    expect(await deliver(request(), () => NOW)).toMatchObject({ kind: 'error', errorClass: 'connection_error', maybeSent: true });
  });

  it('refuses a non-public destination before any request (no DNS on Workers: IP literals and local names)', async () => {
    // onUnhandledRequest: 'error' would fail the test if any of these reached fetch.
    for (const url of [
      'http://127.0.0.1:8080/x',
      'http://[::1]/x',
      'http://169.254.169.254/latest/meta-data',
      'http://10.0.0.7/',
      'http://printer.local/',
    ]) {
      const result = await deliver(request({ url }), () => NOW);
      expect(result, url).toMatchObject({ kind: 'error', errorClass: 'refused_destination', maybeSent: false });
    }
    expect(
      await createFetchDeliver({ allowPrivate: true, fetch: async () => new Response('ok') })(
        request({ url: 'http://127.0.0.1:8080/x' }),
        () => NOW,
      ),
    ).toMatchObject({
      kind: 'response',
      status: 200,
    });
  });
});

describe('against a real closed port', () => {
  it('connection refused: class connection_refused, not sent', async () => {
    const port = await freePort();
    const result = await createFetchDeliver({ allowPrivate: true })(request({ url: `http://127.0.0.1:${port}/x` }), () => NOW);
    expect(result).toMatchObject({ kind: 'error', errorClass: 'connection_refused', maybeSent: false });
    expect(result.kind === 'error' && result.message).toContain('ECONNREFUSED');
  });
});

describe('classifyFetchError', () => {
  it('maps connect-phase codes on the cause to not-sent classes, and anything unknown to a maybe-sent connection error', () => {
    const failed = (code: string) =>
      Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error(`x ${code}`), { code }) });
    expect(classifyFetchError(failed('ENOTFOUND'))).toMatchObject({ errorClass: 'dns', maybeSent: false });
    expect(classifyFetchError(failed('UND_ERR_CONNECT_TIMEOUT'))).toMatchObject({ errorClass: 'timeout', maybeSent: false });
    expect(classifyFetchError(failed('CERT_HAS_EXPIRED'))).toMatchObject({ errorClass: 'tls', maybeSent: false });
    expect(classifyFetchError(failed('ECONNRESET'))).toMatchObject({ errorClass: 'connection_error', maybeSent: true });
    // workerd's wording (seen under wrangler dev): opaque, so it may have been sent.
    expect(classifyFetchError(new Error('Network connection lost.'))).toMatchObject({ errorClass: 'connection_error', maybeSent: true });
    expect(classifyFetchError(new DOMException('The operation timed out.', 'TimeoutError'))).toMatchObject({
      errorClass: 'timeout',
      maybeSent: true,
    });
  });
});
