/**
 * Text from outside (a receiver's response body, an error message) made storable in PostgreSQL. A `text` value may
 * not hold U+0000 (SQLSTATE 22021), and `jsonb`, through which the finish statement sends its outcomes, refuses the
 * `\u0000` escape (22P05) and an unpaired surrogate escape such as `\ud800` (22P02). One such character in one
 * receiver's answer failed the whole finish of its bucket, other tenants' outcomes included (issue #28), so every
 * such text goes through `storableText` before it leaves the process.
 *
 * Runtime-portable (no `node:` imports): the Workers path uses it too.
 */

/** What stands for a character PostgreSQL cannot store: U+FFFD, as a UTF-8 decoder writes for a bad sequence. */
export const REPLACEMENT_CHARACTER = '\uFFFD';

/** U+0000, and a UTF-16 surrogate with no partner (a high one not followed by a low one, a low one not after a high one). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is matched on purpose: PostgreSQL's text and jsonb refuse it
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * `text` with every character PostgreSQL's `text` and `jsonb` refuse replaced by U+FFFD: U+0000 and unpaired
 * surrogates (ECMAScript's `String.prototype.toWellFormed` does the latter alone). Everything else, other control
 * characters included, is kept: JSON escapes them and PostgreSQL stores them. Same length as `text`.
 */
export function storableText(text: string): string {
  return text.replace(UNSTORABLE, REPLACEMENT_CHARACTER);
}
