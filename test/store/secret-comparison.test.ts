/**
 * Secrets are compared in constant time, by one helper (issue #28, point 8): the admin token, the metrics token and
 * API key hashes all go through `timingSafeEqualStrings`, which compares the SHA-256 digests of both sides byte by
 * byte to the end, so its time depends neither on where the strings differ nor on their lengths (a presented token
 * one character short used to be refused at once, telling the secret's length). Its timing is not measured here: a
 * timed assertion fails on a loaded machine; the code is small enough to read.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { timingSafeEqualStrings } from '../../src/store/credentials.ts';

const SECRET = 'adm_4f8b1c2d9e7a6b5c3d2e1f0a9b8c7d6e5f4a3b2c';
const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

describe('timingSafeEqualStrings', () => {
  it('is equality', () => {
    expect(timingSafeEqualStrings(SECRET, SECRET)).toBe(true);
    expect(timingSafeEqualStrings(SECRET, `${SECRET}x`)).toBe(false);
    expect(timingSafeEqualStrings(SECRET, SECRET.slice(0, -1))).toBe(false);
    expect(timingSafeEqualStrings(SECRET, `${SECRET.slice(0, -1)}x`)).toBe(false);
    expect(timingSafeEqualStrings('', '')).toBe(true);
    expect(timingSafeEqualStrings('', 'a')).toBe(false);
    expect(timingSafeEqualStrings('é', 'e\u0301')).toBe(false);
  });

  it('is the one comparison of the admin token, the metrics token and API key hashes', () => {
    for (const file of ['src/api/routes/tenants.ts', 'src/api/ops.ts', 'src/store/api-keys.ts']) {
      const source = read(file);
      expect(source, file).toMatch(/import \{[^}]*\btimingSafeEqualStrings\b[^}]*\} from '[./]+\/?(store\/)?credentials\.ts'/);
      expect(source, file).toMatch(/timingSafeEqualStrings\(/);
      // No other comparison helper (hono's compares the hashes with ===, node:crypto's throws on a length mismatch).
      expect(source, file).not.toMatch(/hono\/utils\/buffer|timingSafeEqual\b(?!Strings)/);
    }
  });
});
