/**
 * The per-tenant request rate holds across API processes together (API.md "Operating tenants"; src/api/rate-limit.ts,
 * src/store/api-presence.ts): two real API processes on one PostgreSQL, a tenant limited to R requests a second
 * hammering both for W seconds gets about R·W + burst accepted in all, not twice that as with a limit per process;
 * the refusals are 429 with Retry-After. PostgreSQL only: the embedded database is opened by one process.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../src/store/db.ts';
import { openPostgres } from '../../src/store/postgres.ts';
import { apiClient, createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';

const RATE = 20;
const BURST = 20;
const WINDOW_MS = 3_000;

describe.skipIf(!process.env.TEST_DATABASE_URL)('the request rate shared by two API processes (postgres)', () => {
  let db: FreshDatabase;
  let one: ChimeProcess;
  let two: ChimeProcess;
  let tenant: TestTenant;
  let database: ReturnType<typeof openPostgres>;

  beforeAll(async () => {
    db = await freshDatabase({ kind: 'postgres' });
    const env = { ...db.env, CHIME_QUOTA_REQUESTS_PER_SECOND: String(RATE), CHIME_RATE_LIMIT_BURST: String(BURST) };
    one = await startChime(env, ['serve', '--role', 'api']);
    two = await startChime(env, ['serve', '--role', 'api']);
    tenant = await createTestTenant(one.url, 'busy');
    database = openPostgres(db.url!);
  });
  afterAll(async () => {
    await one?.stop();
    await two?.stop();
    await database?.close();
    await db?.drop();
  });

  it('accepts about the rate in total, not the rate per process', async () => {
    // Each process counts the other once its own heartbeat follows the other's first one.
    const rows = () =>
      query<{ id: string; seen: number }>(database.db, sql`select id, extract(epoch from seen_at) * 1000 as seen from api_processes`);
    const joined = await eventually(
      async () => {
        const r = await rows();
        return r.length === 2 && Math.max(...r.map((x) => Number(x.seen)));
      },
      { what: 'both API processes heartbeating' },
    );
    await eventually(async () => (await rows()).every((x) => Number(x.seen) > joined), {
      timeoutMs: 10_000,
      what: 'a heartbeat of each after both joined',
    });

    const clients = [one, two].map((p) => apiClient(p.url, tenant.apiKey));
    const statuses = new Map<number, number>();
    const retryAfter: string[] = [];
    const end = Date.now() + WINDOW_MS;
    // Four callers per process, each one request after another, until the window ends.
    await Promise.all(
      [0, 1, 0, 1, 0, 1, 0, 1].map(async (i) => {
        while (Date.now() < end) {
          const r = await clients[i]!.get('/v1/tenant');
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status === 429) retryAfter.push(r.headers.get('retry-after') ?? '');
        }
      }),
    );
    const accepted = statuses.get(200) ?? 0;
    const allowed = (RATE * WINDOW_MS) / 1000 + BURST; // 80: what the two together may accept
    expect([...statuses.keys()].sort()).toEqual([200, 429]);
    // A limit per process would accept about twice `allowed` (160); the shared one at most `allowed`, with a margin
    // for the requests in flight at the window's ends.
    expect(accepted).toBeLessThanOrEqual(allowed * 1.2);
    expect(accepted).toBeGreaterThanOrEqual(allowed * 0.6);
    expect(retryAfter.every((s) => Number(s) >= 1)).toBe(true);
  });
});
