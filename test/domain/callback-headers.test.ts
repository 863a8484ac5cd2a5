/**
 * The callback header rule (src/domain/callback-headers.ts) as a table: every reserved name (in any case) and every
 * class of value that cannot be sent as given is refused with a reason; ordinary and tricky-but-valid headers are
 * accepted. Whether accepted headers really arrive as given is test/dispatch/callback-headers-delivery.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  callbackHeaderIssue,
  callbackHeadersIssues,
  HEADER_VALUE_PATTERN,
  RESERVED_HEADER,
  reservedHeaderReason,
  sendableCallbackHeaders,
} from '../../src/domain/callback-headers.ts';

/** Every visible ASCII character that is not a letter or digit: the punctuation a value may hold. */
const PUNCTUATION = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
/** Every character an RFC 9110 token may hold. */
const TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

const REFUSED_NAMES = [
  'host',
  'content-length',
  'content-type',
  'user-agent',
  'expect',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'webhook-anything',
  'chime-signature',
  'chime-job-id',
  'Chime-Foo',
  // mixed case: field names are case-insensitive
  'Host',
  'HOST',
  'Content-Length',
  'Content-Type',
  'CONTENT-TYPE',
  'User-Agent',
  'Expect',
  'EXPECT',
  'Connection',
  'Keep-Alive',
  'Proxy-Connection',
  'PROXY-Authorization',
  'Transfer-Encoding',
  'TE',
  'Te',
  'Trailer',
  'Upgrade',
  'UPGRADE',
  'Webhook-Id',
  'WEBHOOK-SIGNATURE',
  'CHIME-ATTEMPT',
];

const INVALID_NAMES = [
  '',
  'a b',
  'x:y',
  'x;y',
  '(x)',
  '"x"',
  'x/y',
  'x@y',
  'x=y',
  'x,y',
  'x\ty',
  'a\r\nb',
  'x\0',
  'é',
  'X-Café',
  '🙂',
  '\u00a0',
];

/** C0 control characters other than HTAB (0x09). */
const C0_BUT_TAB = Array.from({ length: 0x20 }, (_, c) => c).filter((c) => c !== 0x09);

const REFUSED_VALUES: [what: string, value: string][] = [
  ['DEL byte', 'a\x7fb'],
  ['DEL alone', '\x7f'],
  ['NUL', 'a\0b'],
  ['CR', 'a\rb'],
  ['LF', 'a\nb'],
  ['CRLF (header injection)', 'ok\r\nX-Injected: 1'],
  ...C0_BUT_TAB.map((c): [string, string] => [`C0 control 0x${c.toString(16).padStart(2, '0')}`, `a${String.fromCharCode(c)}b`]),
  ['C1 control 0x85', 'a\x85b'],
  ['no-break space', 'a\u00a0b'],
  ['é', 'café'],
  ['ü', 'Müller'],
  ['é alone', 'é'],
  ['Latin-1 ÿ (0xff)', 'a\xffb'],
  ['emoji', 'ok 🙂'],
  ['lone surrogate', 'a\ud800b'],
  ['line separator', 'a\u2028b'],
  ['byte order mark', '\ufeffok'],
  ['leading space', ' ok'],
  ['trailing space', 'ok '],
  ['leading tab', '\tok'],
  ['trailing tab', 'ok\t'],
  ['only a space', ' '],
  ['only tabs and spaces', ' \t '],
];

const ACCEPTED: [name: string, value: string][] = [
  ['X-Team', 'ops'],
  ['x-team', 'ops'],
  ['Accept', 'application/json'],
  ['Accept-Encoding', 'gzip'],
  ['Accept-Language', 'de-CH, en;q=0.5'],
  ['Cookie', 'a=b; c=d'],
  ['Cache-Control', 'no-cache'],
  ['Authorization', 'Basic dXNlcjpwYXNz'],
  ['X-Empty', ''],
  ['X-Spaces', 'a b  c'],
  ['X-Tabs', 'a\tb\t\tc'],
  ['X-Mixed-Whitespace', 'a \t b'],
  ['X-Punctuation', PUNCTUATION],
  ['X-Punctuation-Spaced', PUNCTUATION.split('').join(' ')],
  ['X-Quotes', '"quoted \\"string\\""'],
  ['X-Single', 'x'],
  ['X-Long', 'v'.repeat(4096)],
  ['X-Json', '{"a":[1,2],"b":"c"}'],
  [TOKEN_CHARS, 'every token character in the name'],
  ["!#$%&'*+-.^_`|~", 'punctuation-only name'],
  // near misses of reserved names
  ['X-Host', 'h'],
  ['Hosts', 'h'],
  ['Content-Language', 'en'],
  ['Content-Encoding', 'identity'],
  ['Expected', 'x'],
  ['Tee', 'x'],
  ['Trailers', 'x'],
  ['Upgrade-Insecure-Requests', '1'],
  ['Keep-Alive-X', 'x'],
  ['Proxy', 'x'],
  ['Webhook', 'x'],
  ['Chime', 'x'],
  ['X-Chime-Foo', 'x'],
  ['X-Webhook-Id', 'x'],
  ['Connectionless', 'x'],
  ['User-Agents', 'x'],
  ['TE-X', 'x'],
];

describe('callbackHeaderIssue', () => {
  it.each(REFUSED_NAMES)('refuses the reserved name %j', (name) => {
    expect(callbackHeaderIssue(name, 'x')).toMatch(/^reserved header name: /);
    expect(RESERVED_HEADER.test(name)).toBe(true);
    expect(reservedHeaderReason(name)).not.toBeNull();
  });

  it.each(INVALID_NAMES)('refuses %j, not an RFC 9110 token', (name) => {
    expect(callbackHeaderIssue(name, 'x')).toMatch(/not a valid header name/);
  });

  it.each(REFUSED_VALUES)('refuses a value with %s', (_what, value) => {
    expect(callbackHeaderIssue('X-Ok', value)).toMatch(/^header values /);
    expect(HEADER_VALUE_PATTERN.test(value)).toBe(false);
  });

  it('names the offending character', () => {
    expect(callbackHeaderIssue('X-Ok', 'a\x7fb')).toContain('U+007F at 1');
    expect(callbackHeaderIssue('X-Ok', 'ok 🙂')).toContain('U+1F642 at 3');
    expect(callbackHeaderIssue('X-Ok', 'ok ')).toMatch(/start or end with a space or tab/);
  });

  it('refuses a value that is not a string (stored data read back)', () => {
    for (const v of [1, null, undefined, true, ['a'], { a: 1 }])
      expect(callbackHeaderIssue('X-Ok', v), String(v)).toBe('header values are strings');
  });

  it.each(ACCEPTED)('accepts %j', (name, value) => {
    expect(callbackHeaderIssue(name, value)).toBeNull();
    expect(RESERVED_HEADER.test(name)).toBe(false);
  });

  it('accepts exactly HTAB and 0x20-0x7e inside a value, of all 16-bit code units', () => {
    const wrong: string[] = [];
    for (let c = 0; c <= 0xffff; c++) {
      const ok = c === 0x09 || (c >= 0x20 && c <= 0x7e);
      if ((callbackHeaderIssue('X-Ok', `a${String.fromCharCode(c)}b`) === null) !== ok) wrong.push(`0x${c.toString(16)}`);
    }
    expect(wrong).toEqual([]);
  });

  it('refuses Authorization (any case) only next to an authToken', () => {
    for (const name of ['Authorization', 'authorization', 'AUTHORIZATION']) {
      expect(callbackHeaderIssue(name, 'Basic x')).toBeNull();
      expect(callbackHeaderIssue(name, 'Basic x', { hasAuthToken: false })).toBeNull();
      expect(callbackHeaderIssue(name, 'Basic x', { hasAuthToken: true })).toMatch(/authToken or an Authorization header, not both/);
    }
  });
});

describe('callbackHeadersIssues', () => {
  it('names every refused header of a record, in order', () => {
    const issues = callbackHeadersIssues({ 'X-Ok': 'fine', Expect: '100-continue', 'X-Del': 'a\x7fb', 'User-Agent': 'me', 'X-Ok-Too': '' });
    expect(issues.map((i) => i.name)).toEqual(['Expect', 'X-Del', 'User-Agent']);
  });

  it('refuses a name given twice in different case, naming the later spelling', () => {
    expect(callbackHeadersIssues({ 'X-A': '1', 'x-a': '2', 'X-B': '3' })).toEqual([
      { name: 'x-a', message: expect.stringMatching(/same header as X-A/) },
    ]);
  });

  it('accepts an empty record', () => {
    expect(callbackHeadersIssues({})).toEqual([]);
  });
});

describe('sendableCallbackHeaders', () => {
  it('returns the record itself when every header is accepted', () => {
    const headers = { 'X-Team': 'ops', Accept: 'application/json' };
    expect(sendableCallbackHeaders(headers)).toBe(headers);
  });

  it('leaves out the refused headers and keeps the others as given', () => {
    const stored = {
      'X-Team': 'ops',
      expect: '100-continue',
      'X-Del': 'a\x7fb',
      'X-Accent': 'café',
      'User-Agent': 'mine',
      'content-type': 'text/plain',
      Connection: 'close',
      'X-Pad': ' padded ',
      Authorization: 'Basic x',
      'x-team': 'again',
      'X-Tab': 'a\tb',
    };
    expect(sendableCallbackHeaders(stored)).toEqual({ 'X-Team': 'ops', Authorization: 'Basic x', 'X-Tab': 'a\tb' });
    expect(sendableCallbackHeaders(stored, { hasAuthToken: true })).toEqual({ 'X-Team': 'ops', 'X-Tab': 'a\tb' });
  });
});
