/**
 * The `Chime-Signature` signing key rotates, with the real process and a real receiver on every database target:
 * by age while the service runs (CHIME_JWT_KEY_MAX_AGE_DAYS, here a few seconds), and by hand with
 * `chime keys rotate-jwt`. Callbacks signed before and after a rotation both verify against the published JWKS with
 * jose's `createRemoteJWKSet`, as a receiver would do it.
 */
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { runChime } from '../support/chime-run.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Received, type Receiver, startReceiver } from '../support/receiver.ts';

/** CHIME_JWT_KEY_MAX_AGE_DAYS for a key that lives 4 seconds. */
const FOUR_SECONDS_IN_DAYS = String(4 / 86_400);

/** Each test starts the real process once or twice, and waits for a rotation: generous on a loaded machine. */
const E2E_TIMEOUT_MS = 120_000;

const kidOf = (r: Received): string => decodeProtectedHeader(r.headers['chime-signature'] as string).kid!;

describe.each(DATABASE_TARGETS)('JWT signing key rotation on $kind', (target) => {
  let db: FreshDatabase;
  let receiver: Receiver;
  const hits = (path: string) => receiver.received.filter((r) => r.path === path);

  beforeAll(async () => {
    db = await freshDatabase(target);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await db?.drop();
  });

  /** Verifies a received callback's Chime-Signature as a receiver does: a JWKS fetched now, issuer, subject, body. */
  async function verifyCallback(chime: ChimeProcess, r: Received) {
    const jwks = createRemoteJWKSet(new URL(`${chime.url}/.well-known/jwks.json`));
    const { payload, protectedHeader } = await jwtVerify(r.headers['chime-signature'] as string, jwks, {
      issuer: 'chime',
      subject: `${receiver.url}${r.path}`,
    });
    expect(payload.body).toBe(createHash('sha256').update(r.body).digest('base64url'));
    return protectedHeader.kid;
  }

  const publishedKids = async (chime: ChimeProcess): Promise<string[]> =>
    (await apiClient(chime.url, null).get('/.well-known/jwks.json')).body.keys.map((k: { kid: string }) => k.kid);

  it(
    'rotates the key by age while running; callbacks signed before and after verify against the JWKS',
    async () => {
      const chime = await startChime({ ...db.env, CHIME_JWT_KEY_MAX_AGE_DAYS: FOUR_SECONDS_IN_DAYS });
      let tenant: TestTenant | undefined;
      let jobId: string | undefined;
      try {
        tenant = await createTestTenant(chime.url, 'auto');
        const created = await tenant.api.post('/v1/jobs', {
          schedule: { type: 'interval', everyMs: 1000 },
          callback: { url: `${receiver.url}/auto` },
        });
        expect(created.status).toBe(201);
        jobId = created.body.jobId;
        const [before, after] = await eventually(
          () => {
            const h = hits('/auto');
            const later = h.find((r) => kidOf(r) !== kidOf(h[0]!));
            return later ? [h[0]!, later] : undefined;
          },
          { timeoutMs: 30_000, what: 'callbacks signed with two different keys' },
        );
        const published = await publishedKids(chime);
        expect(published).toContain(kidOf(before));
        expect(published).toContain(kidOf(after));
        expect(await verifyCallback(chime, before)).toBe(kidOf(before));
        expect(await verifyCallback(chime, after)).toBe(kidOf(after));
        // Every callback of the run so far, whichever key signed it, still verifies.
        for (const r of hits('/auto')) expect(await verifyCallback(chime, r)).toBe(kidOf(r));
      } finally {
        if (tenant && jobId) await tenant.api.request('DELETE', `/v1/jobs/${jobId}`);
        expect(await chime.stop()).toBe(0);
      }
    },
    E2E_TIMEOUT_MS,
  );

  it(
    '`chime keys rotate-jwt` rotates by hand; the old key stays published and its callbacks still verify',
    async () => {
      const fire = async (chime: ChimeProcess, path: string): Promise<Received> => {
        const tenant = await createTestTenant(chime.url, `manual-${path.slice(1)}`);
        const created = await tenant.api.post('/v1/jobs', {
          schedule: { type: 'delay', delayMs: 0 },
          callback: { url: `${receiver.url}${path}` },
        });
        expect(created.status).toBe(201);
        return eventually(() => hits(path)[0], { what: `the callback to ${path}` });
      };
      let chime = await startChime(db.env);
      const before = await fire(chime, '/manual-before');
      // The embedded database is opened by one process at a time: rotate while the service is stopped.
      expect(await chime.stop()).toBe(0);

      const rotated = await runChime(db.env, ['keys', 'rotate-jwt']);
      expect(rotated.code, rotated.stderr).toBe(0);
      const { kid } = JSON.parse(rotated.stdout) as { kid: string };
      expect(kid).not.toBe(kidOf(before));
      expect(rotated.stderr).toMatch(/new JWT signing key/);

      chime = await startChime(db.env);
      try {
        const after = await fire(chime, '/manual-after');
        expect(kidOf(after)).toBe(kid);
        expect(await publishedKids(chime)).toEqual(expect.arrayContaining([kid, kidOf(before)]));
        expect(await verifyCallback(chime, before)).toBe(kidOf(before));
        expect(await verifyCallback(chime, after)).toBe(kid);
      } finally {
        expect(await chime.stop()).toBe(0);
      }

      const misuse = await runChime(db.env, ['keys']);
      expect(misuse.code).toBe(2);
      expect(misuse.stderr).toMatch(/keys rotate-jwt/);
    },
    E2E_TIMEOUT_MS,
  );
});
