/**
 * postgres.js 3.4.9 across a server crash, with the fix in src/store/patches (applied by `npm ci`'s postinstall).
 * Unpatched, a transaction whose server dies writes its ROLLBACK after the socket is gone: the deferred write throws
 * a TypeError from an Immediate (an uncaught exception: the process dies; porsager/postgres#1154, #1208), and the
 * connection keeps a cleared write timer that looks pending, so after the server is back every query on it hangs.
 * This is what the outage test (test/chaos/outage.test.ts) met now and then as a dead dispatcher.
 */
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { type PrivatePostgres, postgresBinDir, startPrivatePostgres } from '../support/private-postgres.ts';

const bin = postgresBinDir();
if (!bin) console.warn('driver crash test: no PostgreSQL server binaries under /usr/lib/postgresql; it cannot run');

describe.runIf(bin !== null)('postgres.js when the server dies mid-transaction', () => {
  let pg: PrivatePostgres;
  let sql: postgres.Sql | undefined;
  afterAll(async () => {
    await sql?.end({ timeout: 1 }).catch(() => {});
    await pg?.destroy();
  });

  it('rejects the transaction with CONNECTION_CLOSED, throws nothing uncaught, and serves again after a restart', {
    timeout: 120_000,
  }, async () => {
    pg = await startPrivatePostgres();
    sql = postgres(pg.url, { max: 1, onnotice: () => {} });
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
      const tx = sql.begin(async (tx) => {
        await tx`select 1`;
        await pg.stop('immediate');
        await tx`select 1`;
      });
      await expect(tx).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
      // The deferred write (the ROLLBACK) runs on a later turn of the event loop: give it a few.
      for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 20));
      expect(uncaught.map(String)).toEqual([]);

      await pg.start();
      const hang = new Promise((_, reject) =>
        setTimeout(() => reject(new Error('the query hung: the connection was left unable to write')), 10_000),
      );
      expect(await Promise.race([sql`select 2 as two`, hang])).toEqual([{ two: 2 }]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });
});
