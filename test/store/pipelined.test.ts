/**
 * `pipelined` and `planTransaction` (src/store/db.ts), the ways Chime sends planner settings. `pipelined`: the settings
 * are in force for exactly the statements given (the finish's plan depends on it) and put back to what they were after
 * them, so a statement added later to the transaction does not inherit them; the statements run in the order given
 * whatever their kind; a failure of any fails the whole without an unhandled rejection. `planTransaction` (the claim's):
 * the settings hold for every later statement of the transaction, a `pipelined` group's own plan is put back to them,
 * and they end with the transaction.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pipelined, planTransaction, query, queryPlanned } from '../../src/store/db.ts';
import { CLAIM_PLAN } from '../../src/store/queue/claim-runs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { openTestStore, type TestStore } from '../support/store.ts';

type Settings = { sort: string; hashjoin: string };
const SETTINGS = sql`select current_setting('enable_sort') as sort, current_setting('enable_hashjoin') as hashjoin`;

describe.each(DATABASE_TARGETS)('pipelined on $kind', (target) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(target);
  });
  afterAll(() => store?.close());

  it('applies the settings to its statements only: the next statement of the transaction plans with the defaults', async () => {
    const [inside, after] = await store.database.db.transaction(async (tx) => {
      const rows = await queryPlanned<Settings>(tx, CLAIM_PLAN, SETTINGS);
      return [rows, await query<Settings>(tx, SETTINGS)];
    });
    expect(inside).toEqual([{ sort: 'off', hashjoin: 'off' }]);
    expect(after).toEqual([{ sort: 'on', hashjoin: 'on' }]);
  });

  it('puts back the value a setting had before, not the default', async () => {
    const after = await store.database.db.transaction(async (tx) => {
      await tx.execute(sql`set local enable_sort = off`);
      await queryPlanned(tx, { enable_sort: 'on' }, sql`select 1`);
      return query<Settings>(tx, SETTINGS);
    });
    expect(after).toEqual([{ sort: 'off', hashjoin: 'on' }]);
  });

  it('runs its statements in the order given, whatever their kind', async () => {
    // Each appends its letter to a transaction-local variable: a raw execute not yet started, a query through `query`
    // (started at once), a function that calls `query` before it returns, and another raw execute.
    const append = (letter: string) =>
      sql`select set_config('chime.test_order', coalesce(current_setting('chime.test_order', true), '') || ${letter}, true) as v`;
    const [, , , last] = await store.database.db.transaction((tx) =>
      pipelined(
        tx,
        CLAIM_PLAN,
        () => tx.execute(append('a')),
        () => query(tx, append('b')),
        () => {
          const started = query(tx, append('c'));
          return started.then(() => 'c');
        },
        () => tx.execute(append('d')),
      ),
    );
    const rows = (last as unknown as { rows?: unknown[] }).rows ?? last;
    expect(rows).toEqual([{ v: 'abcd' }]);
  });

  it('fails as a whole when a statement fails, and refuses a setting that is not a planner method', async () => {
    await expect(store.database.db.transaction((tx) => queryPlanned(tx, CLAIM_PLAN, sql`select 1 / 0`))).rejects.toThrow(/select 1 \/ 0/);
    await expect(
      store.database.db.transaction((tx) =>
        queryPlanned(tx, { "enable_sort', 'off', true); drop table runs; --": 'off' } as never, sql`select 1`),
      ),
    ).rejects.toThrow(TypeError);
  });

  it('planTransaction: the settings hold for the rest of the transaction, through a group with its own, and end with it', async () => {
    const [first, afterGroup] = await store.database.db.transaction(async (tx) => {
      const [, rows] = await Promise.all([planTransaction(tx, CLAIM_PLAN), query<Settings>(tx, SETTINGS)]);
      await queryPlanned(tx, { enable_sort: 'on', enable_hashjoin: 'on' }, sql`select 1`);
      return [rows, await query<Settings>(tx, SETTINGS)];
    });
    expect(first).toEqual([{ sort: 'off', hashjoin: 'off' }]);
    expect(afterGroup).toEqual([{ sort: 'off', hashjoin: 'off' }]);
    expect(await store.database.db.transaction((tx) => query<Settings>(tx, SETTINGS))).toEqual([{ sort: 'on', hashjoin: 'on' }]);
    expect(() => planTransaction(store.database.db, { "enable_sort', 'off', true); drop table runs; --": 'off' } as never)).toThrow(
      TypeError,
    );
  });
});
