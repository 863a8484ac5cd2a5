/** `storableText`: the characters PostgreSQL's text and jsonb refuse become U+FFFD, nothing else changes (issue #28). */
import { describe, expect, it } from 'vitest';
import { REPLACEMENT_CHARACTER as R, storableText } from '../../src/domain/storable-text.ts';

describe('storableText', () => {
  it.each([
    ['a NUL', 'a\u0000b', `a${R}b`],
    ['NULs of a UTF-16 body read as UTF-8', 'o\u0000k\u0000', `o${R}k${R}`],
    ['a high surrogate with no low one', 'x\ud800y', `x${R}y`],
    ['a high surrogate at the end', 'x\udbff', `x${R}`],
    ['a low surrogate alone', '\udc00x', `${R}x`],
    ['two high surrogates', '\ud800\ud800', `${R}${R}`],
  ])('replaces %s', (_what, text, expected) => {
    expect(storableText(text)).toBe(expected);
  });

  it.each([
    ['plain text', 'hello'],
    ['a surrogate pair (an emoji)', 'ok \ud83d\ude00'],
    ['other control characters', '\u0001\t\n\u001f\u007f'],
    ['U+FFFD itself', R],
    ['the empty string', ''],
  ])('keeps %s', (_what, text) => {
    expect(storableText(text)).toBe(text);
  });
});
