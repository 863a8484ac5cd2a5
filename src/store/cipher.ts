/**
 * Secrets at rest (docs/design.md invariant 7): AES-256-GCM through WebCrypto, so the same code runs on Node and
 * Cloudflare Workers. Several keys may be configured (API.md "Access control and audit": `CHIME_ENCRYPTION_KEY` holds
 * comma-separated `<id>:<base64>` entries, one of them may be bare base64): the first seals, every one opens.
 * Sealed forms: `v1.<base64url iv (12 bytes)>.<base64url ciphertext+tag>` under the key without an id (every value
 * sealed before keys had ids), `v2.<key id>.<iv>.<ciphertext+tag>` under a key with one.
 */
const IV_BYTES = 12;
/** Required key length, in bytes. */
export const ENCRYPTION_KEY_BYTES = 32;
/** A key id: what `v2.<id>.` names. */
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;

/** One configured key: `id` null for the key without an id (bare base64, the form of a single key). */
export type EncryptionKey = { id: string | null; key: Uint8Array };

/** Encrypts and decrypts short secrets (auth tokens, signing secrets, private JWKs). */
export interface Cipher {
  /** Seals under the first key. */
  seal(plaintext: string): Promise<string>;
  /** @throws CipherError when the value was sealed under a key not configured, or was altered */
  open(sealed: string): Promise<string>;
  /** The ids of the configured keys, the sealing one first (null: the key without an id). */
  readonly keyIds: readonly (string | null)[];
  /**
   * HMAC-SHA256 tags of `message` (base64url, 43 characters), one per configured key, the sealing key's first, each
   * under a key derived from it for `purpose` alone (HKDF-SHA256, RFC 5869: no salt, info = `purpose`), so a tag made
   * for one purpose is no tag of another and the encryption key itself never signs. Issue with the first; accept any
   * (a token made before a key rotation stays valid while its key is configured).
   */
  macs(purpose: string, message: string): Promise<string[]>;
}

/** A sealed value could not be opened: wrong key, or corrupted data; or a key could not be used. */
export class CipherError extends Error {
  override name = 'CipherError';
}

/** The id of the key `sealed` was sealed under (null: the key without an id), or undefined for a value of no known form. */
export function sealedKeyId(sealed: string): string | null | undefined {
  if (sealed.startsWith('v1.')) return null;
  if (sealed.startsWith('v2.')) return sealed.split('.')[1];
  return undefined;
}

/** The prefix of every value the key `id` seals: `v1.` for the key without an id, `v2.<id>.` otherwise. */
export function sealedPrefix(id: string | null): string {
  return id === null ? 'v1.' : `v2.${id}.`;
}

/** How a key id is named in messages. */
export function keyName(id: string | null): string {
  return id === null ? 'the key without an id' : `key "${id}"`;
}

/**
 * Parses `CHIME_ENCRYPTION_KEY`: comma-separated entries, each `<id>:<base64>` (id: 1..32 of `A-Za-z0-9_-`) or bare
 * base64 (at most one: the key of the values sealed before keys had ids), each decoding to 32 bytes.
 * @param source the name to put in messages (the variable, or the key file)
 * @throws CipherError naming `source` and the entry at fault
 */
export function parseEncryptionKeys(value: string, source: string): EncryptionKey[] {
  const keys = value.split(',').map((entry, i): EncryptionKey => {
    const at = value.includes(',') ? ` (entry ${i + 1})` : '';
    const colon = entry.indexOf(':');
    const id = colon === -1 ? null : entry.slice(0, colon).trim();
    if (id !== null && !KEY_ID.test(id)) throw new CipherError(`${source}${at}: a key id is 1..32 of A-Za-z0-9_-, not "${id}"`);
    let key: Uint8Array;
    try {
      key = fromBase64Url(entry.slice(colon + 1).trim());
    } catch {
      throw new CipherError(`${source}${at}: not base64`);
    }
    if (key.byteLength !== ENCRYPTION_KEY_BYTES) {
      throw new CipherError(`${source}${at}: must decode to ${ENCRYPTION_KEY_BYTES} bytes, got ${key.byteLength}`);
    }
    return { id, key };
  });
  const ids = keys.map((k) => k.id);
  const twice = ids.find((id, i) => ids.indexOf(id) !== i);
  if (twice !== undefined) throw new CipherError(`${source}: ${keyName(twice)} is given twice`);
  return keys;
}

/**
 * Builds a cipher from one 32-byte key (the key without an id) or from configured keys, the sealing one first.
 * @throws CipherError when a key is not 32 bytes or none is given
 */
export async function createCipher(keys: Uint8Array | readonly EncryptionKey[]): Promise<Cipher> {
  const list = keys instanceof Uint8Array ? [{ id: null, key: keys }] : keys;
  if (list.length === 0) throw new CipherError('no encryption key');
  const imported = new Map<string | null, Awaited<ReturnType<typeof crypto.subtle.importKey>>>();
  for (const { id, key } of list) {
    if (key.byteLength !== ENCRYPTION_KEY_BYTES) {
      throw new CipherError(`encryption key must be ${ENCRYPTION_KEY_BYTES} bytes, got ${key.byteLength}`);
    }
    imported.set(id, await crypto.subtle.importKey('raw', key as Uint8Array<ArrayBuffer>, 'AES-GCM', false, ['encrypt', 'decrypt']));
  }
  // The derived HMAC keys, per purpose (a handful of purposes: no eviction needed).
  const macKeys = new Map<string, Promise<Awaited<ReturnType<typeof crypto.subtle.importKey>>[]>>();
  const derive = (purpose: string) =>
    Promise.all(
      list.map(async ({ key }) => {
        const ikm = await crypto.subtle.importKey('raw', key as Uint8Array<ArrayBuffer>, 'HKDF', false, ['deriveKey']);
        return crypto.subtle.deriveKey(
          { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: new TextEncoder().encode(purpose) },
          ikm,
          { name: 'HMAC', hash: 'SHA-256', length: 256 },
          false,
          ['sign'],
        );
      }),
    );
  const sealing = list[0]!.id;
  const sealingKey = imported.get(sealing)!;
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  return {
    keyIds: list.map((k) => k.id),
    async macs(purpose, message) {
      let keys = macKeys.get(purpose);
      if (!keys) macKeys.set(purpose, (keys = derive(purpose)));
      const data = enc.encode(message);
      return Promise.all((await keys).map(async (k) => toBase64Url(new Uint8Array(await crypto.subtle.sign('HMAC', k, data)))));
    },
    async seal(plaintext) {
      const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
      const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, sealingKey, enc.encode(plaintext)));
      return `${sealedPrefix(sealing)}${toBase64Url(iv)}.${toBase64Url(ct)}`;
    },
    async open(sealed) {
      const id = sealedKeyId(sealed);
      const parts = sealed.split('.');
      const [iv, ct] = id === null ? parts.slice(1) : parts.slice(2);
      if (id === undefined || !iv || !ct || parts.length !== (id === null ? 3 : 4)) throw new CipherError('not a sealed value');
      const key = imported.get(id);
      if (!key) throw new CipherError(`cannot decrypt: the value was sealed under ${keyName(id)}, which is not configured`);
      try {
        const pt = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: fromBase64Url(iv) }, key, fromBase64Url(ct));
        return dec.decode(pt);
      } catch {
        throw new CipherError(`cannot decrypt: ${keyName(id)} differs from the one the data was sealed with`);
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
