/**
 * Rotating the encryption key (issue #32, point 6; README "Encryption key rotation"): a service sealed under one key
 * gets a new key first in `CHIME_ENCRYPTION_KEY` (`k2:<new>,<old>`), `chime keys reencrypt` re-seals every stored
 * secret under it while callbacks with auth tokens and signatures keep firing (on PostgreSQL; the embedded database
 * is one process's, so there it runs between a stop and a start), the old key is removed and the service restarted:
 * every token still decrypts and every callback still verifies. A secret sealed under a key no longer configured stops
 * the start-up with a clear message naming the key. The real process, on each database target.
 */
import { readFile } from 'node:fs/promises';
import postgres from 'postgres';
import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it } from 'vitest';
import { apiClient, createTestTenant } from '../support/api.ts';
import { type ChimeProcess, killAll, startChime } from '../support/chime-process.ts';
import { runChime } from '../support/chime-run.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase, TEST_ENCRYPTION_KEY } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

const K2 = Buffer.alloc(32, 42).toString('base64');
const K3 = Buffer.alloc(32, 43).toString('base64');

describe.each(DATABASE_TARGETS)('encryption key rotation on $kind', (target) => {
  let db: FreshDatabase;
  let receiver: Receiver;
  const procs: [string, ChimeProcess][] = [];
  afterAll(async () => {
    await killAll(procs);
    await receiver?.close();
    await db?.drop();
  });

  it('re-seals every secret under the new key while callbacks fire; the old key can then go; a missing key stops the start', {
    timeout: 240_000,
  }, async () => {
    db = await freshDatabase(target);
    receiver = await startReceiver();
    // The embedded database's own key file plays the old key there; on PostgreSQL it is CHIME_ENCRYPTION_KEY.
    const oldKey = target.kind === 'pglite' ? null : TEST_ENCRYPTION_KEY;
    const withKeys = (keys: string | null) => ({
      ...db.env,
      ...(keys ? { CHIME_ENCRYPTION_KEY: keys } : {}),
      CHIME_REAP_INTERVAL_MS: '500',
    });
    const start = async (name: string, keys: string | null) => {
      const p = await startChime(withKeys(keys));
      procs.push([name, p]);
      return p;
    };
    const stop = async (p: ChimeProcess) => {
      expect(await p.stop()).toBe(0);
      procs.splice(
        procs.findIndex(([, q]) => q === p),
        1,
      );
    };
    const oldKeyValue = async () => oldKey ?? (await readFile(`${db.dataDir}/encryption.key`, 'utf8')).trim();

    let chime = await start('sealed under the old key', oldKey);
    const tenant = await createTestTenant(chime.url, 'rotation');
    const webhook = new Webhook(tenant.signingSecret);
    const job = async (token: string) => {
      // The service's port changes with each start: a client for the one running now.
      const r = await apiClient(chime.url, tenant.apiKey).post('/v1/jobs', {
        schedule: { type: 'interval', everyMs: 1000 },
        callback: { url: `${receiver.url}/${token}`, authToken: token },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    };
    /** Waits for `n` more callbacks of `token`'s job, each with its token and a signature that verifies. */
    const callbacksOf = async (token: string, n: number) => {
      const seen = receiver.received.filter((r) => r.path === `/${token}`).length;
      await eventually(() => receiver.received.filter((r) => r.path === `/${token}`).length >= seen + n, {
        timeoutMs: 60_000,
        what: `${n} more callbacks of /${token}`,
      });
      for (const r of receiver.received.filter((x) => x.path === `/${token}`).slice(seen)) {
        expect(r.headers.authorization).toBe(`Bearer ${token}`);
        expect(() => webhook.verify(r.body, r.headers as Record<string, string>)).not.toThrow();
      }
    };
    await job('tok-old');
    await callbacksOf('tok-old', 2);

    // 1. The new key first, the old one after it: old secrets open, new ones are sealed under k2.
    const both = `k2:${K2},${await oldKeyValue()}`;
    await stop(chime);
    chime = await start('old and new key', both);
    await job('tok-new');
    await callbacksOf('tok-old', 2);
    await callbacksOf('tok-new', 2);

    // 2. Re-seal everything under k2: on PostgreSQL while the service runs and fires.
    if (target.kind === 'pglite') await stop(chime);
    const run = await runChime(withKeys(both), ['keys', 'reencrypt']);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { changed: Record<string, number>; total: number };
    expect(report.changed.jobs).toBe(1); // tok-old's job; tok-new's was sealed under k2 already
    expect(report.changed.signing_secrets).toBeGreaterThanOrEqual(1);
    expect(report.changed.jwt_keys).toBeGreaterThanOrEqual(1);
    expect(run.stderr).toContain('sealed again under key "k2"');
    if (target.kind === 'pglite') chime = await start('after the re-encryption', both);
    await callbacksOf('tok-old', 2);
    // A second run finds nothing left to do.
    if (target.kind !== 'pglite') {
      const again = await runChime(withKeys(both), ['keys', 'reencrypt']);
      expect(JSON.parse(again.stdout).total).toBe(0);
      const sql = postgres(db.url!, { max: 1, onnotice: () => {} });
      const [left] = await sql<{ n: number }[]>`select
          (select count(*) from jobs where auth_token_enc not like 'v2.k2.%')
        + (select count(*) from signing_secrets where secret_enc not like 'v2.k2.%')
        + (select count(*) from jwt_keys where private_jwk_enc not like 'v2.k2.%') as n`;
      await sql.end();
      expect(Number(left!.n)).toBe(0);
    }

    // 3. The old key removed: everything still opens, and the callbacks still carry their tokens and verify.
    await stop(chime);
    chime = await start('new key only', `k2:${K2}`);
    await callbacksOf('tok-old', 2);
    await callbacksOf('tok-new', 2);
    await stop(chime);

    // 4. A key that sealed stored secrets, gone: the start is refused, naming it.
    const refused = await runChime({ ...withKeys(`k3:${K3}`), PORT: '0' }, ['serve']);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toMatch(/^chime: secrets in the database are sealed under key "k2", which CHIME_ENCRYPTION_KEY does not hold/);
  });
});
