/**
 * `transactionRetryingDeadlocks`: a transaction PostgreSQL aborted as a deadlock's victim (SQLSTATE 40P01, found in
 * the error's cause chain as drizzle wraps the driver's) is run again with nothing of the first run kept; any other
 * error is thrown at once, and the last deadlock once the tries are spent. The deadlock it answers (an API pause
 * against a claim of the same job) was seen in the console suite; here the error is raised by hand.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDeadlock, query, transactionRetryingDeadlocks } from '../../src/store/db.ts';
import { DATABASE_TARGETS } from '../support/databases.ts';
import { openTestStore, type TestStore } from '../support/store.ts';

const deadlock = () =>
  new Error('Failed query: update runs …', { cause: Object.assign(new Error('deadlock detected'), { code: '40P01' }) });

describe.each(DATABASE_TARGETS.filter((t) => t.kind !== 'citus'))('transactionRetryingDeadlocks on $kind', (target) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(target);
    await store.database.db.execute(sql`create table deadlock_probe (n int)`);
  });
  afterAll(() => store?.close());
  const rows = async () => (await query<{ n: number }>(store.database.db, sql`select n from deadlock_probe order by n`)).map((r) => r.n);

  it('runs a deadlock victim again, the first run rolled back', async () => {
    let calls = 0;
    const result = await transactionRetryingDeadlocks(store.database.db, async (tx) => {
      calls++;
      await tx.execute(sql`insert into deadlock_probe values (${calls})`);
      if (calls === 1) throw deadlock();
      return 'done';
    });
    expect([result, calls, await rows()]).toEqual(['done', 2, [2]]);
  });

  it('throws any other error at once, and a deadlock after the last try', async () => {
    let calls = 0;
    const other = new Error('unexpected status', { cause: Object.assign(new Error('unique'), { code: '23505' }) });
    await expect(
      transactionRetryingDeadlocks(store.database.db, async () => {
        calls++;
        throw other;
      }),
    ).rejects.toBe(other);
    expect(calls).toBe(1);
    calls = 0;
    await expect(
      transactionRetryingDeadlocks(
        store.database.db,
        async () => {
          calls++;
          throw deadlock();
        },
        3,
      ),
    ).rejects.toSatisfy(isDeadlock);
    expect(calls).toBe(3);
  });
});
