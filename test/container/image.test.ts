/**
 * The production image (Dockerfile) as an operator runs it: real podman containers of the image named by
 * `CHIME_TEST_IMAGE`, real HTTP receivers on 127.0.0.1 and the machine's PostgreSQL, reached with `--network=host`.
 * - Embedded database: a named volume on /data, a read-only root file system, the non-root user; first-tenant.json,
 *   a verified callback, the HEALTHCHECK, `podman stop` draining to exit 0, jobs kept by the volume across containers.
 * - PostgreSQL: `chime migrate` in a one-shot container first (as the compose file does), then an API container and a
 *   dispatcher container, read-only too; under load the dispatcher is stopped mid-way and another takes over: every
 *   run delivered, the API never answers 5xx.
 * Without `CHIME_TEST_IMAGE` the tests skip, saying so; `.ci/container` builds the image and sets
 * `CHIME_REQUIRE_IMAGE=1`, and then a missing image or PostgreSQL is a failure, not a skip.
 */
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, createTestTenant, type TestTenant } from '../support/api.ts';
import { ADMIN_TOKEN, freePort } from '../support/chime-process.ts';
import { type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Received, type Receiver, startReceiver } from '../support/receiver.ts';
import { envArgs, IMAGE, logs, podman, podmanOk, removeAll, state, stop, uniqueName, waitReady } from './podman.ts';

const REQUIRED = !!process.env.CHIME_REQUIRE_IMAGE;
if (REQUIRED && !IMAGE) throw new Error('CHIME_REQUIRE_IMAGE is set but CHIME_TEST_IMAGE names no image');
if (REQUIRED && !process.env.TEST_DATABASE_URL) throw new Error('CHIME_REQUIRE_IMAGE is set but TEST_DATABASE_URL is not');

if (!IMAGE) console.warn('test/container: the image tests skipped, no CHIME_TEST_IMAGE (.ci/container builds one and sets it)');

const describeImage = IMAGE ? describe : describe.skip;
const describePostgres = IMAGE && process.env.TEST_DATABASE_URL ? describe : describe.skip;
const SKIPPED = ' (skipped: set CHIME_TEST_IMAGE to a built image, e.g. chime:test; see .ci/container)';
/** Container starts and stops take seconds each on a loaded two-core machine. */
const SLOW = 180_000;

/** The service's settings in every container: the test admin token, and callbacks to the receiver on 127.0.0.1. */
const BASE_ENV = { CHIME_ADMIN_TOKEN: ADMIN_TOKEN, CHIME_ALLOW_PRIVATE_DESTINATIONS: 'true', CHIME_LOG_LEVEL: 'info' };

/**
 * `podman run -d` of the image with `args` before it and `command` after, on the host's network, with a read-only root
 * file system: `--read-only-tmpfs=false` keeps podman from mounting its tmpfs on /tmp, /var/tmp and /run, so the root
 * is as read-only as Docker's `--read-only` makes it (the service writes only /data, and on PostgreSQL nothing).
 */
async function runDetached(name: string, args: string[], command: string[] = []): Promise<void> {
  await podmanOk(['run', '-d', '--name', name, '--network=host', '--read-only', '--read-only-tmpfs=false', ...args, IMAGE, ...command]);
}

/** Checks both signatures of a callback, as a receiver does: Standard Webhooks with the tenant's secret, the JWT with the JWKS. */
async function expectVerified(hit: Received, tenant: TestTenant, chimeUrl: string, callbackUrl: string): Promise<void> {
  expect(() => new Webhook(tenant.signingSecret).verify(hit.body, hit.headers as Record<string, string>)).not.toThrow();
  const jwks = createRemoteJWKSet(new URL(`${chimeUrl}/.well-known/jwks.json`));
  const { payload } = await jwtVerify(hit.headers['chime-signature'] as string, jwks, { issuer: 'chime', subject: callbackUrl });
  expect(payload.body).toBe(createHash('sha256').update(hit.body).digest('base64url'));
}

/** Registers a job due now to `callbackUrl` and waits for its run to succeed; returns the callback received. */
async function deliverOne(tenant: TestTenant, receiver: Receiver, callbackUrl: string): Promise<Received> {
  const created = await tenant.api.post('/v1/jobs', { schedule: { type: 'delay', delayMs: 0 }, callback: { url: callbackUrl } });
  expect(created.status).toBe(201);
  const jobId = created.body.jobId;
  await eventually(async () => (await tenant.api.get(`/v1/jobs/${jobId}/runs`)).body.runs[0]?.status === 'succeeded', {
    timeoutMs: 30_000,
    what: `the run of job ${jobId} to succeed`,
  });
  const hits = receiver.received.filter((r) => r.headers['chime-job-id'] === jobId);
  expect(hits).toHaveLength(1);
  return hits[0]!;
}

describeImage(`the image ${IMAGE || ''} on the embedded database${IMAGE ? '' : SKIPPED}`, () => {
  const volume = uniqueName('data');
  const first = uniqueName('embedded-1');
  const second = uniqueName('embedded-2');
  let port: number;
  let url: string;
  let receiver: Receiver;
  let tenant: TestTenant;
  let futureJobId: string;

  /** The named volume on /data, as `docker run -v chime-data:/data` mounts it. */
  const start = (name: string) => runDetached(name, ['-v', `${volume}:/data`, ...envArgs({ ...BASE_ENV, PORT: String(port) })]);

  beforeAll(async () => {
    await podmanOk(['image', 'exists', IMAGE]).catch(() => {
      throw new Error(`no image ${IMAGE} in podman's storage: build it first (.ci/container)`);
    });
    receiver = await startReceiver();
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    await podmanOk(['volume', 'create', volume]);
    await start(first);
    await waitReady(first, url);
  }, SLOW);
  afterAll(async () => {
    await removeAll([first, second], [volume]);
    await receiver?.close();
  }, SLOW);

  it('runs as the non-root node user, and its first start writes the first tenant to /data/first-tenant.json', async () => {
    expect((await podmanOk(['exec', first, 'id', '-un'])).trim()).toBe('node');
    const firstTenant = JSON.parse(await podmanOk(['exec', first, 'cat', '/data/first-tenant.json']));
    const me = await apiClient(url, firstTenant.apiKey).get('/v1/tenant');
    expect(me.status).toBe(200);
    expect(me.body.name).toBe('default');
    // The root file system is read-only: nothing but /data can be written.
    const write = await podman(['exec', first, 'sh', '-c', 'touch /app/x || touch /tmp/x']);
    expect(write.code).not.toBe(0);
    expect(write.stderr).toContain('Read-only file system');
  });

  it('delivers a callback that verifies with both signatures', async () => {
    tenant = await createTestTenant(url, 'container');
    const callbackUrl = `${receiver.url}/embedded`;
    await expectVerified(await deliverOne(tenant, receiver, callbackUrl), tenant, url, callbackUrl);
  });

  it('reports healthy through the HEALTHCHECK (node asking /readyz)', async () => {
    const r = await podman(['healthcheck', 'run', first]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect((await state(first)).health).toBe('healthy');
  });

  it(
    'drains on podman stop (exit 0), and a new container on the same volume has the jobs and delivers',
    async () => {
      const created = await tenant.api.post('/v1/jobs', {
        name: 'next year',
        schedule: { type: 'delay', delayMs: 365 * 86_400_000 },
        callback: { url: `${receiver.url}/later` },
      });
      expect(created.status).toBe(201);
      futureJobId = created.body.jobId;

      const stopped = await stop(first);
      expect(stopped.exitCode, stopped.logs).toBe(0);
      expect(stopped.logs).toMatch(/"signal":"SIGTERM","msg":"draining"/);
      expect(stopped.logs).toContain('"msg":"stopped"');
      await removeAll([first]);

      await start(second);
      await waitReady(second, url);
      const job = await tenant.api.get(`/v1/jobs/${futureJobId}`);
      expect(job.status).toBe(200);
      expect(job.body).toMatchObject({ name: 'next year', status: 'active', nextRunAt: created.body.nextRunAt });
      // Not a second first tenant: the database is the volume's.
      expect(await logs(second)).not.toContain('first start');
      // The encryption key is the volume's too: the sealed signing secret still signs.
      const callbackUrl = `${receiver.url}/after-restart`;
      await expectVerified(await deliverOne(tenant, receiver, callbackUrl), tenant, url, callbackUrl);
    },
    SLOW,
  );
});

describePostgres(
  `the image ${IMAGE || ''} on PostgreSQL${IMAGE ? (process.env.TEST_DATABASE_URL ? '' : ' (skipped: set TEST_DATABASE_URL)') : SKIPPED}`,
  () => {
    const api = uniqueName('api');
    const dispatchers = [uniqueName('dispatcher-1'), uniqueName('dispatcher-2')] as const;
    let db: FreshDatabase;
    let apiUrl: string;
    let receiver: Receiver;
    let tenant: TestTenant;
    /** Every API answer the tests saw, and requests that got none. */
    const statuses: number[] = [];
    const failures: string[] = [];
    const recordingFetch = async (input: string, init?: RequestInit) => {
      try {
        const r = await fetch(input, init);
        statuses.push(r.status);
        return r;
      } catch (err) {
        failures.push(`${init?.method ?? 'GET'} ${input}: ${String(err)}`);
        throw err;
      }
    };

    /** A dispatcher container; its /readyz on its own port (host network: every container shares the ports). */
    const startDispatcher = async (name: string) => {
      const port = await freePort();
      await runDetached(name, envArgs({ ...db.env, ...BASE_ENV, PORT: String(port) }), ['serve', '--role', 'dispatcher']);
      await waitReady(name, `http://127.0.0.1:${port}`);
    };

    beforeAll(async () => {
      db = await freshDatabase({ kind: 'postgres' });
      // A little latency, so that a dispatcher stopped under load has callbacks in flight to drain.
      receiver = await startReceiver(() => ({ status: 200, delayMs: 20 }));
    }, SLOW);
    afterAll(async () => {
      await removeAll([api, ...dispatchers]);
      await receiver?.close();
      await db?.drop();
    }, SLOW);

    it(
      'migrates with a one-shot container, then an API container and a dispatcher container deliver',
      async () => {
        // As an operator does (and compose.yaml): the schema first, by `chime migrate`, then the services.
        const migrate = await podman(
          ['run', '--rm', '--network=host', '--read-only', '--read-only-tmpfs=false', ...envArgs(db.env), IMAGE, 'migrate'],
          120_000,
        );
        expect(migrate.code, migrate.stderr).toBe(0);
        expect(migrate.stderr).toContain('migrations applied');

        const apiPort = await freePort();
        apiUrl = `http://127.0.0.1:${apiPort}`;
        // No rate limit: the load below registers and polls as fast as it can.
        const apiEnv = { ...db.env, ...BASE_ENV, PORT: String(apiPort), CHIME_RATE_LIMIT_PER_SECOND: '0' };
        await runDetached(api, envArgs(apiEnv), ['serve', '--role', 'api']);
        await waitReady(api, apiUrl);
        await startDispatcher(dispatchers[0]);

        tenant = await createTestTenant(apiUrl, 'postgres', recordingFetch);
        const callbackUrl = `${receiver.url}/postgres`;
        await expectVerified(await deliverOne(tenant, receiver, callbackUrl), tenant, apiUrl, callbackUrl);
      },
      SLOW,
    );

    it(
      'delivers every run when the dispatcher is stopped mid-way under load and another takes over; the API never answers 5xx',
      async () => {
        const N = 400;
        // Due over 4 s, from 2 s after registration: 100 runs a second.
        const t0 = Date.now() + 2_000;
        const jobs = Array.from({ length: N }, (_, i) => ({
          name: `load-${i}`,
          schedule: { type: 'once', at: new Date(t0 + Math.floor((i * 4_000) / N)).toISOString() },
          callback: { url: `${receiver.url}/load/${i}` },
        }));
        const batch = await tenant.api.post('/v1/jobs/batch', { jobs });
        expect(batch.status).toBe(200);
        expect(batch.body.results.every((r: { status: number }) => r.status === 201)).toBe(true);
        const jobIds: string[] = batch.body.results.map((r: { job: { jobId: string } }) => r.job.jobId);
        const loadHits = () => receiver.received.filter((r) => r.path.startsWith('/load/'));
        let byFirst = 0;

        // Clients keep reading while the dispatchers change hands.
        let polling = true;
        const poller = (async () => {
          while (polling) {
            await tenant.api.get('/v1/runs?limit=20').catch(() => {});
            await new Promise((r) => setTimeout(r, 50));
          }
        })();

        try {
          await eventually(() => loadHits().length >= N / 3, { timeoutMs: 30_000, what: `a third of ${N} callbacks` });
          const stopped = await stop(dispatchers[0]);
          expect(stopped.exitCode, stopped.logs).toBe(0);
          expect(stopped.logs).toMatch(/"signal":"SIGTERM","msg":"draining"/);
          byFirst = loadHits().length;
          expect(byFirst).toBeLessThan(N);

          await startDispatcher(dispatchers[1]);
          await eventually(() => new Set(loadHits().map((h) => h.path)).size === N, {
            timeoutMs: 60_000,
            intervalMs: 100,
            what: `all ${N} callbacks (got ${new Set(loadHits().map((h) => h.path)).size} distinct)`,
          });
        } finally {
          polling = false;
          await poller;
        }

        // Every job's one run succeeded, as the API reports it.
        const notSucceeded: string[] = [];
        for (let i = 0; i < N; i += 20) {
          await Promise.all(
            jobIds.slice(i, i + 20).map(async (jobId) => {
              const runs = (await tenant.api.get(`/v1/jobs/${jobId}/runs`)).body.runs;
              if (runs.length !== 1 || runs[0].status !== 'succeeded') notSucceeded.push(`${jobId}: ${JSON.stringify(runs)}`);
            }),
          );
        }
        expect(notSucceeded).toEqual([]);
        expect(new Set(loadHits().map((h) => h.headers['chime-job-id']))).toEqual(new Set(jobIds));
        expect(failures).toEqual([]);
        expect(statuses.filter((s) => s >= 500)).toEqual([]);
        expect(statuses.length).toBeGreaterThan(N / 20);
        console.log(
          `container load: ${N} runs; ${byFirst} delivered before the first dispatcher's stop, ${loadHits().length - N} ` +
            `delivered twice; ${statuses.length} API answers, none 5xx`,
        );
      },
      SLOW,
    );
  },
);
