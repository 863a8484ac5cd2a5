/**
 * Receiver control (API.md "Receiver control and result routing"), the pure part: `Chime-Control` parsing, the
 * `successBody` rule with RFC 6901 JSON Pointers (escapes included), the response headers the log keeps (4 KiB,
 * no `set-cookie`), the result body (text or base64), and what they mean in `decideAfterAttempt`.
 */
import { describe, expect, it } from 'vitest';
import { decideAfterAttempt, ERROR_CLASS } from '../../src/domain/attempt-outcome.ts';
import {
  capResponseHeaders,
  isJsonPointer,
  jsonEqual,
  parseChimeControl,
  RESPONSE_HEADERS_MAX_BYTES,
  resolveJsonPointer,
  resultBody,
  successBodyMismatch,
} from '../../src/domain/receiver-control.ts';

describe('parseChimeControl', () => {
  it('reads comma-separated tokens, case-insensitive, trimmed, deduplicated; unknown ones apart', () => {
    expect(parseChimeControl(' No-Retry ,pause,, PAUSE, frobnicate,skip-next')).toEqual({
      tokens: ['no-retry', 'pause', 'skip-next'],
      unknown: ['frobnicate'],
    });
    expect(parseChimeControl('complete')).toEqual({ tokens: ['complete'], unknown: [] });
  });
  it('an absent or empty header says nothing', () => {
    expect(parseChimeControl(undefined)).toEqual({ tokens: [], unknown: [] });
    expect(parseChimeControl(' , ')).toEqual({ tokens: [], unknown: [] });
  });
  it('keeps at most 10 unknown tokens, each cut to 40 characters', () => {
    const r = parseChimeControl([...Array(20)].map((_, i) => `x${i}${'y'.repeat(60)}`).join(','));
    expect(r.unknown).toHaveLength(10);
    expect(r.unknown.every((t) => t.length === 40)).toBe(true);
  });
});

describe('JSON Pointer (RFC 6901)', () => {
  // The examples of RFC 6901 §5.
  const doc = { foo: ['bar', 'baz'], '': 0, 'a/b': 1, 'c%d': 2, 'e^f': 3, 'g|h': 4, 'i\\j': 5, 'k"l': 6, ' ': 7, 'm~n': 8 };
  it.each([
    ['', doc],
    ['/foo', ['bar', 'baz']],
    ['/foo/0', 'bar'],
    ['/', 0],
    ['/a~1b', 1],
    ['/c%d', 2],
    ['/e^f', 3],
    ['/g|h', 4],
    ['/i\\j', 5],
    ['/k"l', 6],
    ['/ ', 7],
    ['/m~0n', 8],
  ])('%j resolves as RFC 6901 §5 says', (pointer, value) => {
    expect(resolveJsonPointer(doc, pointer)).toEqual({ found: true, value });
  });
  it('unescapes ~1 before ~0, so "~01" is "~1", not "/"', () => {
    expect(resolveJsonPointer({ '~1': 'tilde-one', '/': 'slash' }, '/~01')).toEqual({ found: true, value: 'tilde-one' });
  });
  it('finds nothing for a missing member, an index out of range, a leading zero, "-", or a step into a scalar', () => {
    for (const p of ['/nope', '/foo/2', '/foo/01', '/foo/-', '/foo/0/x', '/a~1b/c'])
      expect(resolveJsonPointer(doc, p)).toEqual({ found: false });
  });
  it('a pointer is empty or starts with "/", and "~" is only ever ~0 or ~1', () => {
    expect(['', '/', '/a~0b', '/a~1b/0'].every(isJsonPointer)).toBe(true);
    expect(['a', '/a~2', '/a~', '#/a'].some(isJsonPointer)).toBe(false);
  });
  it('does not read inherited properties', () => {
    expect(resolveJsonPointer({}, '/constructor')).toEqual({ found: false });
  });
});

describe('successBodyMismatch', () => {
  it('contains: the body holds the text', () => {
    expect(successBodyMismatch({ contains: 'OK' }, 'status: OK')).toBeNull();
    expect(successBodyMismatch({ contains: 'OK' }, 'status: failed')).toMatch(/does not contain "OK"/);
  });
  it('jsonPointer + equals: deep equality at the pointer', () => {
    const rule = { jsonPointer: '/result/state', equals: { done: true, n: [1, 2] } };
    expect(successBodyMismatch(rule, '{"result":{"state":{"n":[1,2],"done":true}}}')).toBeNull();
    expect(successBodyMismatch(rule, '{"result":{"state":{"n":[2,1],"done":true}}}')).toMatch(/at \/result\/state/);
    expect(successBodyMismatch(rule, '{"result":{}}')).toMatch(/no value at/);
    expect(successBodyMismatch(rule, 'not json')).toMatch(/not JSON/);
    expect(successBodyMismatch({ jsonPointer: '/ok', equals: null }, '{"ok":null}')).toBeNull();
  });
  it('jsonEqual compares numbers by value and objects by members', () => {
    expect(jsonEqual(1, 1.0)).toBe(true);
    expect(jsonEqual({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(true);
    expect(jsonEqual({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(jsonEqual([1], { 0: 1 })).toBe(false);
    expect(jsonEqual('1', 1)).toBe(false);
  });
});

describe('capResponseHeaders', () => {
  it('lower-cases names, joins repeats, drops set-cookie', () => {
    expect(capResponseHeaders({ 'Content-Type': 'text/plain', 'set-cookie': ['a=1', 'b=2'], Vary: ['a', 'b'] })).toEqual({
      'content-type': 'text/plain',
      vary: 'a, b',
    });
    expect(
      capResponseHeaders([
        ['x-a', '1'],
        ['Set-Cookie', 's=1'],
        ['X-A', '2'],
      ]),
    ).toEqual({ 'x-a': '1, 2' });
  });
  it('keeps at most 4 KiB of names and values; a header too large is left out and the next ones still kept', () => {
    const h = capResponseHeaders({
      'x-small-1': 'a',
      'x-big': 'b'.repeat(5000),
      'x-mid': 'c'.repeat(3000),
      'x-next': 'd'.repeat(2000),
      'x-small-2': 'e',
    });
    expect(Object.keys(h)).toEqual(['x-small-1', 'x-mid', 'x-small-2']);
    const size = Object.entries(h).reduce((n, [k, v]) => n + k.length + v.length, 0);
    expect(size).toBeLessThanOrEqual(RESPONSE_HEADERS_MAX_BYTES);
  });
});

describe('resultBody', () => {
  it('UTF-8 text as is', () => {
    expect(resultBody(new TextEncoder().encode('héllo'), false)).toEqual({ body: 'héllo' });
  });
  it('bytes that are not UTF-8 (or hold NUL) as base64', () => {
    expect(resultBody(new Uint8Array([0xff, 0x00, 0x41]), false)).toEqual({
      body: Buffer.from([0xff, 0x00, 0x41]).toString('base64'),
      bodyEncoding: 'base64',
    });
    expect(resultBody(new TextEncoder().encode('a\u0000b'), false)).toMatchObject({ bodyEncoding: 'base64' });
  });
  it('a text cut inside a character at the bound stays text, without the partial character', () => {
    const bytes = new TextEncoder().encode('aé'); // 61 c3 a9
    expect(resultBody(bytes.subarray(0, 2), true)).toEqual({ body: 'a' });
  });
});

describe('decideAfterAttempt with receiver control', () => {
  const base = {
    attempt: 1,
    scheduledForMs: 0,
    relevancyWindowMs: null,
    retry: { strategy: 'fixed' as const, maxAttempts: 5, initialDelayMs: 1000, maxDelayMs: 1000, multiplier: 1, jitter: false },
    deliveryMode: 'at-least-once' as const,
    successStatusCodes: ['2xx' as const],
  };
  const res = (status: number, body = '') => ({ kind: 'response' as const, status, retryAfterMs: null, bodyExcerpt: body });

  it('no-retry ends a failed attempt that would have been retried', () => {
    expect(decideAfterAttempt(base, res(500), 10).runStatus).toBe('retrying');
    const d = decideAfterAttempt({ ...base, control: ['no-retry'] }, res(500), 10);
    expect(d).toMatchObject({ runStatus: 'failed', errorClass: ERROR_CLASS.badStatus, nextAttemptAtMs: null });
    expect(d.error).toMatch(/no-retry/);
  });
  it('no-retry on a success changes nothing', () => {
    expect(decideAfterAttempt({ ...base, control: ['no-retry'] }, res(200), 10).runStatus).toBe('succeeded');
  });
  it('pause asks to pause the job (receiver) on success and failure; a 410 keeps its own reason', () => {
    expect(decideAfterAttempt({ ...base, control: ['pause'] }, res(200), 10).pauseReason).toBe('receiver');
    expect(decideAfterAttempt({ ...base, control: ['pause'] }, res(500), 10)).toMatchObject({
      runStatus: 'retrying',
      pauseReason: 'receiver',
    });
    expect(decideAfterAttempt({ ...base, control: ['pause'] }, res(410), 10).pauseReason).toBe('gone');
    expect(decideAfterAttempt(base, res(200), 10).pauseReason).toBeNull();
  });
  it('a success status whose body does not match fails with body_mismatch and is retried like any failure', () => {
    const rule = { successBody: { jsonPointer: '/status', equals: 'ok' } };
    expect(decideAfterAttempt({ ...base, ...rule }, res(200, '{"status":"ok"}'), 10).runStatus).toBe('succeeded');
    const d = decideAfterAttempt({ ...base, ...rule }, res(200, '{"status":"busy"}'), 10);
    expect(d).toMatchObject({ runStatus: 'retrying', errorClass: ERROR_CLASS.bodyMismatch });
    expect(d.error).toMatch(/status 200, but .*"busy"/);
    // The whole kept body is read when there is one, not just the excerpt.
    const long = `{"pad":"${'x'.repeat(10_000)}","status":"ok"}`;
    expect(
      decideAfterAttempt({ ...base, ...rule }, { ...res(200, long.slice(0, 4096)), body: new TextEncoder().encode(long) }, 10).runStatus,
    ).toBe('succeeded');
    // A status that is not a success is bad_status, whatever the body.
    expect(decideAfterAttempt({ ...base, ...rule }, res(500, '{"status":"ok"}'), 10).errorClass).toBe(ERROR_CLASS.badStatus);
  });
});
