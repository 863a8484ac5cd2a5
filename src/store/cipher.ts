/**
 * Secrets at rest (docs/design.md invariant 7): AES-256-GCM through WebCrypto, so the same code runs on Node and
 * Cloudflare Workers. Sealed form: `v1.<base64url iv (12 bytes)>.<base64url ciphertext+tag>`.
 */
const VERSION = 'v1';
const IV_BYTES = 12;
/** Required key length, in bytes. */
export const ENCRYPTION_KEY_BYTES = 32;

/** Encrypts and decrypts short secrets (auth tokens, signing secrets, private JWKs). */
export interface Cipher {
  seal(plaintext: string): Promise<string>;
  /** @throws CipherError when the value was sealed under another key or was altered */
  open(sealed: string): Promise<string>;
}

/** A sealed value could not be opened: wrong key, or corrupted data. */
export class CipherError extends Error {
  override name = 'CipherError';
}

/**
 * Builds a cipher from a 32-byte key.
 * @throws CipherError when the key is not 32 bytes
 */
export async function createCipher(key: Uint8Array): Promise<Cipher> {
  if (key.byteLength !== ENCRYPTION_KEY_BYTES) {
    throw new CipherError(`encryption key must be ${ENCRYPTION_KEY_BYTES} bytes, got ${key.byteLength}`);
  }
  const cryptoKey = await crypto.subtle.importKey('raw', key as Uint8Array<ArrayBuffer>, 'AES-GCM', false, ['encrypt', 'decrypt']);
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  return {
    async seal(plaintext) {
      const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
      const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, cryptoKey, enc.encode(plaintext)));
      return `${VERSION}.${toBase64Url(iv)}.${toBase64Url(ct)}`;
    },
    async open(sealed) {
      const [version, iv, ct] = sealed.split('.');
      if (version !== VERSION || !iv || !ct) throw new CipherError('not a sealed value');
      try {
        const pt = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: fromBase64Url(iv) }, cryptoKey, fromBase64Url(ct));
        return dec.decode(pt);
      } catch {
        throw new CipherError('cannot decrypt: the encryption key differs from the one the data was sealed with');
      }
    },
  };
}

/** Base64url without padding (RFC 4648 §5). */
export function toBase64Url(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Decodes base64 or base64url, padded or not. */
export function fromBase64Url(s: string): Uint8Array<ArrayBuffer> {
  const b64 = s.replace(/-/g, '+').replace(/_/g, '/');
  const bin = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
