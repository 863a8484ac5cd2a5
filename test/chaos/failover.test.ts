/**
 * Failover (issue #30, point 2): Chime runs on a primary with a synchronous streaming standby, through one multi-host
 * `DATABASE_URL` (`…@127.0.0.1:P1,127.0.0.1:P2/…?target_session_attrs=read-write`). Under registrations and due runs
 * the primary is killed as in a crash (`pg_ctl -m immediate stop`) and, a couple of seconds later, the standby is
 * promoted (`pg_ctl promote`), as an HA manager would. Must hold: every job that got a `201` exists on the new primary
 * and every run is delivered (0 lost); until the processes reach the new primary the API answers `503` with
 * `Retry-After`, never a `500` (connecting to the standby while it is still one gave "cannot execute … in a read-only
 * transaction") and never a hang; the API and both dispatchers reconnect without a restart. Duplicates and the time to
 * recover are printed (README "Guarantees").
 */
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { apiClient, createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, killAll, startChime } from '../support/chime-process.ts';
import { TEST_ENCRYPTION_KEY } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { postgresBinDir } from '../support/private-postgres.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { type ReplicatedPostgres, startReplicatedPostgres } from '../support/replicated-postgres.ts';

const bin = postgresBinDir();
if (!bin) console.warn('failover test: no PostgreSQL server binaries under /usr/lib/postgresql; the failover test cannot run');

/** How long the test leaves the cluster without a primary before promoting the standby (an HA manager's reaction). */
const NO_PRIMARY_MS = 3_000;
/** A request the API has not answered in this long counts as a hang. */
const REQUEST_TIMEOUT_MS = 15_000;

describe.runIf(bin !== null)('failover to a synchronous standby', () => {
  let pg: ReplicatedPostgres;
  let receiver: Receiver;
  const procs: [string, ChimeProcess][] = [];

  afterAll(async () => {
    await killAll(procs);
    await receiver?.close();
    await pg?.destroy();
  });

  it('loses nothing acknowledged, answers 503 (never 500) until it reaches the new primary, reconnects on its own', {
    timeout: 150_000,
  }, async () => {
    pg = await startReplicatedPostgres();
    receiver = await startReceiver();
    // The default lease margin (30 s): every process lives through the failover, so nothing waits for a lease to expire
    // unless a claim committed just before the kill never got its answer.
    const env = { DATABASE_URL: pg.url, CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, CHIME_MIGRATE: 'true' };
    const api = await startChime(env, ['serve', '--role', 'api']);
    procs.push(['api', api]);
    for (const name of ['dispatcher-1', 'dispatcher-2']) procs.push([name, await startChime(env, ['serve', '--role', 'dispatcher'])]);
    const tenant: TestTenant = await createTestTenant(api.url, 'failover');
    // A hung request is a failure of its own (status -1): each one is bounded.
    const client = apiClient(api.url, tenant.apiKey, (input, init) =>
      fetch(input, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }),
    );

    // Clients register a job every 15 ms, each due 1–4 s later, through the whole test.
    const accepted = new Map<string, number>(); // job id → due time (ms)
    const answers: { at: number; ms: number; status: number; retryAfter: string | null; type: string | null; body: unknown }[] = [];
    let registering = true;
    let i = 0;
    const load = (async () => {
      while (registering) {
        const at = Date.now();
        const r = await client
          .post('/v1/jobs', {
            schedule: { type: 'delay', delayMs: 1000 + (i++ % 3000) },
            callback: { url: `${receiver.url}/failover`, timeoutMs: 2000 },
            retry: { strategy: 'fixed', maxAttempts: 30, initialDelayMs: 500 },
          })
          .then(
            (res) => res,
            (err: unknown) => ({ status: (err as Error).name === 'TimeoutError' ? -1 : 0, body: String(err), headers: new Headers() }),
          );
        answers.push({
          at,
          ms: Date.now() - at,
          status: r.status,
          retryAfter: r.headers.get('retry-after'),
          type: r.headers.get('content-type'),
          body: r.status === 201 ? null : r.body,
        });
        if (r.status === 201) accepted.set(r.body.jobId, Date.parse(r.body.nextRunAt));
        await new Promise((res) => setTimeout(res, 15));
      }
    })();
    try {
      await eventually(() => receiver.received.length >= 30, { timeoutMs: 40_000, what: 'callbacks before the failover' });
      await pg.killPrimary();
      const killedAt = Date.now();
      // While it is a standby no Chime session may run on it (postgres.js 3.4 took it for read-write: every statement
      // then failed with "cannot execute … in a read-only transaction").
      const standby = postgres(pg.urlOf(pg.standbyPort), { max: 1, onnotice: () => {} });
      const sessionsOnStandby = new Set<number>();
      try {
        while (Date.now() - killedAt < NO_PRIMARY_MS) {
          const rows = await standby<{ pid: number }[]>`select pid from pg_stat_activity where application_name = 'chime'`;
          for (const r of rows) sessionsOnStandby.add(r.pid);
          await new Promise((r) => setTimeout(r, 100));
        }
      } finally {
        await standby.end();
      }
      expect(sessionsOnStandby.size, 'Chime sessions on the standby before its promotion').toBe(0);
      await pg.promoteStandby();
      const promotedAt = Date.now();

      // The API reaches the new primary by itself.
      await eventually(() => answers.some((a) => a.at > promotedAt && a.status === 201), {
        timeoutMs: 60_000,
        what: 'a registration accepted by the new primary',
      });
      const firstAccepted = answers.find((a) => a.at > promotedAt && a.status === 201)!;
      const acceptedAfter = accepted.size;
      await eventually(() => accepted.size >= acceptedAfter + 50, { timeoutMs: 60_000, what: 'registrations to go on' });
      registering = false;
      await load;

      // Every accepted job is delivered, by the same dispatcher processes.
      const deliveredIds = () => new Set(receiver.received.map((r) => r.headers['chime-job-id'] as string));
      await eventually(() => [...accepted.keys()].every((id) => deliveredIds().has(id)), {
        timeoutMs: 60_000,
        what: `every accepted job to be delivered (${[...accepted.keys()].filter((id) => !deliveredIds().has(id)).length} missing)`,
      });
      for (const [name, p] of procs) expect(p.child.exitCode, `${name} exited`).toBeNull();

      // Never a 500, never a hang: 201, or 503 problem+json with Retry-After while no primary was reachable.
      const byStatus = new Map<number, number>();
      for (const a of answers) byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1);
      const unexpected = answers.filter((a) => a.status !== 201 && a.status !== 503);
      expect(unexpected.slice(0, 5), `answers other than 201 and 503: ${JSON.stringify([...byStatus])}`).toEqual([]);
      for (const a of answers.filter((x) => x.status === 503)) {
        expect(a.type).toContain('application/problem+json');
        expect(a.retryAfter).toMatch(/^\d+$/);
      }

      // The new primary holds every accepted job, and every run succeeded.
      const sql = postgres(pg.urlOf(pg.standbyPort), { max: 1, onnotice: () => {} });
      try {
        const ids = [...accepted.keys()];
        const found = await sql<{ n: string }[]>`select count(*) as n from jobs where id = any(${ids}::uuid[])`;
        expect(Number(found[0]!.n)).toBe(ids.length);
        await eventually(
          async () => {
            const rows = await sql<
              { n: string }[]
            >`select count(*) as n from runs where job_id = any(${ids}::uuid[]) and status = 'succeeded'`;
            return Number(rows[0]!.n) >= ids.length;
          },
          { timeoutMs: 30_000, what: 'every run recorded as succeeded' },
        );
      } finally {
        await sql.end();
      }

      const perRun = new Map<string, number>();
      for (const r of receiver.received)
        perRun.set(r.headers['webhook-id'] as string, (perRun.get(r.headers['webhook-id'] as string) ?? 0) + 1);
      // Dispatch is back once a run due after the kill (claimed from the new primary: the lookahead is 250 ms) arrives.
      const firstDeliveryAfter = Math.min(
        ...receiver.received
          .filter((r) => (accepted.get(r.headers['chime-job-id'] as string) ?? 0) >= killedAt + 1000 && r.at > promotedAt)
          .map((r) => r.at),
      );
      const dueDuringOutage = receiver.received.filter((r) => {
        const due = accepted.get(r.headers['chime-job-id'] as string) ?? 0;
        return due >= killedAt && due < promotedAt;
      });
      console.log(
        `failover test figures: ${JSON.stringify({
          noPrimaryMs: promotedAt - killedAt,
          accepted: accepted.size,
          answers: Object.fromEntries(byStatus),
          slowestAnswerMs: Math.max(...answers.map((a) => a.ms)),
          apiRecoveredAfterPromotionMs: firstAccepted.at - promotedAt,
          dispatchRecoveredAfterPromotionMs: firstDeliveryAfter - promotedAt,
          dueDuringOutageAllDeliveredAfterPromotionMs: dueDuringOutage.length
            ? Math.max(...dueDuringOutage.map((r) => r.at)) - promotedAt
            : null,
          deliveries: receiver.received.length,
          duplicates: receiver.received.length - perRun.size,
          lost: [...accepted.keys()].filter((id) => !deliveredIds().has(id)).length,
        })}`,
      );
    } finally {
      registering = false;
      await load;
    }
  });
});
