/**
 * src/domain/callback-body.ts: which `callback.contentType` values are media types Chime can send a UTF-8 body under
 * (RFC 9110 §8.3.1), the body each kind of job sends, and the credential rules of `callback.auth` (RFC 7617, RFC 6749).
 */
import { describe, expect, it } from 'vitest';
import {
  basicUsernameIssue,
  callbackBody,
  clientCredentialIssue,
  contentTypeIssue,
  noControlsIssue,
  scopeIssue,
  utf8Length,
} from '../../src/domain/callback-body.ts';

describe('contentTypeIssue', () => {
  it.each([
    'application/xml',
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/cloudevents+json',
    'text/csv; charset=utf-8',
    'text/plain;charset="UTF-8"',
    'application/xml; charset=us-ascii; profile="urn:x \\"y\\""',
    'multipart/form-data; boundary=----abc123',
  ])('accepts %s', (v) => {
    expect(contentTypeIssue(v)).toBeNull();
  });

  it.each([
    ['', /1\.\.255/],
    ['xml', /not a media type/],
    ['text/', /not a media type/],
    ['text/plain; charset', /not a media type/],
    ['text/plain\r\nx-evil: 1', /not a media type/],
    ['text/plain; charset=iso-8859-1', /charset must be utf-8/],
    ['text/plain; CHARSET="latin1"', /charset must be utf-8/],
    [`text/${'a'.repeat(260)}`, /1\.\.255/],
  ])('refuses %j', (v, why) => {
    expect(contentTypeIssue(v)).toMatch(why);
  });
});

describe('callbackBody', () => {
  it('sends a body as is (text/plain unless named), a payload as JSON (application/json unless named), nothing for GET', () => {
    expect(callbackBody('POST', '<a/>', null, 'application/xml')).toEqual({ text: '<a/>', contentType: 'application/xml' });
    expect(callbackBody('PUT', 'a=1', null, null)).toEqual({ text: 'a=1', contentType: 'text/plain' });
    expect(callbackBody('POST', '', null, undefined)).toEqual({ text: '', contentType: 'text/plain' });
    expect(callbackBody('POST', null, { n: 1 }, null)).toEqual({ text: '{"n":1}', contentType: 'application/json' });
    expect(callbackBody('POST', undefined, null, 'application/vnd.api+json')).toEqual({
      text: '{}',
      contentType: 'application/vnd.api+json',
    });
    expect(callbackBody('GET', 'ignored', { n: 1 }, 'text/plain')).toBeNull();
  });

  it('counts UTF-8 bytes', () => {
    expect(utf8Length('é✓🙂')).toBe(2 + 3 + 4);
  });
});

describe('credential rules', () => {
  it('a basic user-id has no colon and no control character (RFC 7617 §2); a password no control character', () => {
    expect(basicUsernameIssue('sk_test_123')).toBeNull();
    expect(basicUsernameIssue('ünïcode user')).toBeNull();
    expect(basicUsernameIssue('a:b')).toMatch(/":"/);
    expect(basicUsernameIssue('a\nb')).toMatch(/control/);
    expect(noControlsIssue('pa:ss wörd')).toBeNull();
    expect(noControlsIssue('a\u0000b')).toMatch(/control/);
  });

  it('OAuth2 client credentials are VSCHAR and scopes are space-separated tokens (RFC 6749 Appendix A, §3.3)', () => {
    expect(clientCredentialIssue('client id +/=')).toBeNull();
    expect(clientCredentialIssue('clïent')).toMatch(/printable ASCII/);
    expect(scopeIssue('read write:jobs https://api.example/x')).toBeNull();
    for (const bad of ['a  b', ' a', 'a ', 'a"b', 'a\\b', 'ä']) expect(scopeIssue(bad), bad).not.toBeNull();
  });
});
