/**
 * `queryWithSetting` sends a transaction's planner setting and the statement it is for together: the setting must be
 * in force when the statement runs (the claim's and the finish's plans depend on it), and a failure of either fails
 * the pair without an unhandled rejection.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryWithSetting } from '../../src/store/db.ts';
import { CLAIM_PLANNER_SETTING } from '../../src/store/queue/claim-runs.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { openTestStore, type TestStore } from '../support/store.ts';

describe.each(DATABASE_TARGETS)('queryWithSetting on $kind', (target) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(target);
  });
  afterAll(() => store?.close());

  it('runs the setting before the statement, in the same transaction', async () => {
    const rows = await store.database.db.transaction((tx) =>
      queryWithSetting<{ sort: string; hashjoin: string }>(
        tx,
        CLAIM_PLANNER_SETTING,
        sql`select current_setting('enable_sort') as sort, current_setting('enable_hashjoin') as hashjoin`,
      ),
    );
    expect(rows).toEqual([{ sort: 'off', hashjoin: 'off' }]);
    // Local to the transaction: the next one plans with the defaults.
    const [after] = await store.database.db.transaction((tx) =>
      queryWithSetting<{ sort: string }>(tx, sql`select 1`, sql`select current_setting('enable_sort') as sort`),
    );
    expect(after).toEqual({ sort: 'on' });
  });

  it('fails the pair when the statement fails, and when the setting does', async () => {
    await expect(
      store.database.db.transaction((tx) => queryWithSetting(tx, CLAIM_PLANNER_SETTING, sql`select 1 / 0`)),
    ).rejects.toThrow(/Failed query: select 1 \/ 0/);
    await expect(
      store.database.db.transaction((tx) => queryWithSetting(tx, sql`select set_config('no_such', 'x', true) / 0`, sql`select 1`)),
    ).rejects.toThrow(/Failed query: select set_config/);
  });
});
