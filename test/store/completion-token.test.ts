/**
 * The completion token (src/store/completion-token.ts): genuine for its run, bucket and attempt only, under the
 * service's encryption key (any configured one: a key rotation keeps earlier tokens valid while their key is
 * configured); anything else is refused without a throw.
 */
import { describe, expect, it } from 'vitest';
import { createCipher } from '../../src/store/cipher.ts';
import { completionToken, verifyCompletionToken } from '../../src/store/completion-token.ts';

const RUN = '0192f1e2-3c4d-7e5f-8a9b-0c1d2e3f4a5b';
const OTHER = '0192f1e2-3c4d-7e5f-8a9b-0c1d2e3f4a5c';
const key = (b: number) => new Uint8Array(32).fill(b);

describe('completion token', () => {
  it('verifies for its own run and names its bucket and attempt', async () => {
    const cipher = await createCipher(key(1));
    const token = await completionToken(cipher, RUN, 17, 3);
    expect(token).toMatch(/^ct1\.17\.3\.[A-Za-z0-9_-]{43}$/);
    expect(await verifyCompletionToken(cipher, RUN, token)).toEqual({ shard: 17, attempt: 3 });
    expect(await verifyCompletionToken(cipher, RUN.toUpperCase(), token)).toEqual({ shard: 17, attempt: 3 });
  });

  it("refuses another run's token, an altered attempt or bucket, a forged tag, another key's token and garbage", async () => {
    const cipher = await createCipher(key(1));
    const token = await completionToken(cipher, RUN, 17, 3);
    expect(await verifyCompletionToken(cipher, OTHER, token)).toBeNull();
    expect(await verifyCompletionToken(cipher, RUN, token.replace('ct1.17.3.', 'ct1.17.4.'))).toBeNull();
    expect(await verifyCompletionToken(cipher, RUN, token.replace('ct1.17.3.', 'ct1.18.3.'))).toBeNull();
    const tag = token.split('.')[3]!;
    const flipped = `${tag.slice(0, 10)}${tag[10] === 'A' ? 'B' : 'A'}${tag.slice(11)}`;
    expect(await verifyCompletionToken(cipher, RUN, `ct1.17.3.${flipped}`)).toBeNull();
    const elsewhere = await createCipher(key(2));
    expect(await verifyCompletionToken(elsewhere, RUN, token)).toBeNull();
    for (const junk of ['', 'ct1', 'ct1.17.3', `ct2.17.3.${tag}`, `ct1.17.3.${tag}x`, `ct1.-1.3.${tag}`]) {
      expect(await verifyCompletionToken(cipher, RUN, junk)).toBeNull();
    }
  });

  it('is no HMAC of the encryption key itself: a tag under another purpose differs', async () => {
    const cipher = await createCipher(key(1));
    const token = await completionToken(cipher, RUN, 17, 3);
    const [other] = await cipher.macs('another purpose', `${RUN}:17:3`);
    expect(token.endsWith(other!)).toBe(false);
  });

  it('stays valid across a key rotation while its key is configured', async () => {
    const before = await createCipher([{ id: 'a', key: key(1) }]);
    const token = await completionToken(before, RUN, 5, 1);
    const rotated = await createCipher([
      { id: 'b', key: key(2) },
      { id: 'a', key: key(1) },
    ]);
    expect(await verifyCompletionToken(rotated, RUN, token)).toEqual({ shard: 5, attempt: 1 });
    // New tokens are made under the new sealing key: the old configuration does not accept them.
    expect(await verifyCompletionToken(before, RUN, await completionToken(rotated, RUN, 5, 1))).toBeNull();
  });
});
