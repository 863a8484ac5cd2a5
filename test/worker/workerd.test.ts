/**
 * The Worker under workerd itself: `wrangler dev` (local mode) with the Hyperdrive binding pointed at a fresh
 * database on the machine's PostgreSQL (through CLOUDFLARE_HYPERDRIVE_LOCAL_CONNECTION_STRING_HYPERDRIVE), migrated
 * first as an operator would (`chime migrate`; the Worker never migrates). A tenant and a job are made through the
 * Worker's API, the Cron Trigger is fired through `--test-scheduled` (`GET /__scheduled`), and the callback must
 * arrive at a real receiver on 127.0.0.1. Needs PostgreSQL: runs when TEST_DATABASE_URL is set (CI sets it).
 */

import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratePostgresUrl } from '../../src/store/migrate.ts';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { ADMIN_TOKEN, freePort } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase, TEST_ENCRYPTION_KEY } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { startWranglerDev, type WranglerDev } from './wrangler.ts';

/** Miniflare insists on a password in a Hyperdrive connection string; the test server trusts local connections. */
function withPassword(url: string): string {
  const u = new URL(url);
  if (!u.password) u.password = 'unused';
  return u.toString();
}

describe('the Worker under workerd (wrangler dev), misconfigured', () => {
  let dev: WranglerDev;

  beforeAll(async () => {
    dev = await startWranglerDev({
      port: await freePort(),
      inspectorPort: await freePort(),
      // No CHIME_ENCRYPTION_KEY (wrangler only warns about a missing required secret). The database is never reached:
      // the configuration fails first. (Miniflare's local Hyperdrive proxy takes wrangler down when the database is
      // unreachable, so that case is not tested here.)
      env: {
        CLOUDFLARE_HYPERDRIVE_LOCAL_CONNECTION_STRING_HYPERDRIVE: 'postgres://chime:unused@127.0.0.1:9/chime',
        CHIME_ADMIN_TOKEN: ADMIN_TOKEN,
      },
      vars: {},
    });
  }, 150_000);

  afterAll(async () => {
    await dev?.stop();
  }, 60_000);

  it('loads under workerd and answers 503 problem+json naming the missing secret', async () => {
    const res = await fetch(`${dev.url}/v1/jobs`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.json()).toMatchObject({
      type: 'urn:chime:problem:unavailable',
      detail: expect.stringContaining('CHIME_ENCRYPTION_KEY: required'),
    });
  });
});

describe.each(DATABASE_TARGETS.filter((t) => t.kind === 'postgres'))('the Worker under workerd (wrangler dev) on $kind', (target) => {
  let fresh: FreshDatabase;
  let receiver: Receiver;
  let dev: WranglerDev;
  let tenant: TestTenant;

  beforeAll(async () => {
    fresh = await freshDatabase(target);
    await migratePostgresUrl(fresh.url!);
    receiver = await startReceiver();
    dev = await startWranglerDev({
      port: await freePort(),
      inspectorPort: await freePort(),
      env: {
        CLOUDFLARE_HYPERDRIVE_LOCAL_CONNECTION_STRING_HYPERDRIVE: withPassword(fresh.url!),
        CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
        CHIME_ADMIN_TOKEN: ADMIN_TOKEN,
      },
      vars: { CHIME_ALLOW_PRIVATE_DESTINATIONS: 'true', CHIME_LOG_LEVEL: 'info' },
    });
  }, 150_000);

  afterAll(async () => {
    await dev?.stop();
    await receiver?.close();
    await fresh?.drop();
  }, 60_000);

  it('serves the API: health, readiness through Hyperdrive, a tenant, problem details', async () => {
    expect(await (await fetch(`${dev.url}/healthz`)).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${dev.url}/readyz`)).json()).toEqual({ status: 'ready' });
    tenant = await createTestTenant(dev.url, 'workerd');
    expect((await tenant.api.get('/v1/tenant')).body).toMatchObject({ tenantId: tenant.tenantId, name: 'workerd' });
    const bad = await tenant.api.post('/v1/jobs', { schedule: { type: 'interval', everyMs: 5 }, callback: { url: `${receiver.url}/x` } });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toBe('application/problem+json');
    expect(bad.body.errors).toEqual([expect.objectContaining({ path: 'schedule.everyMs' })]);
  });

  it('serves the console and /docs from the same code as Node, with their assets and policy', async () => {
    for (const page of ['/console', '/console/jobs', '/docs']) {
      const res = await fetch(`${dev.url}${page}`);
      expect(res.status, page).toBe(200);
      expect(res.headers.get('content-security-policy'), page).toContain("frame-ancestors 'none'");
      const html = await res.text();
      const assets = [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]!);
      expect(assets.length, page).toBeGreaterThanOrEqual(2);
      for (const a of assets) {
        const asset = await fetch(`${dev.url}${a}`);
        expect(asset.status, a).toBe(200);
        expect(asset.headers.get('cache-control'), a).toContain('immutable');
        expect((await asset.text()).length, a).toBeGreaterThan(50);
      }
    }
  });

  it('fires the scheduled handler: the callback arrives at the receiver, signed, and the run is recorded', async () => {
    tenant ??= await createTestTenant(dev.url, 'workerd');
    receiver.received.length = 0;
    const job = await tenant.api.post('/v1/jobs', {
      schedule: { type: 'delay', delayMs: 0 },
      callback: { url: `${receiver.url}/hooks/report` },
      payload: { report: 'nightly' },
    });
    expect(job.status).toBe(201);
    const fired = await dev.fireScheduled();
    expect(fired.status).toBe(200);
    const [cb] = await receiver.waitFor(1, 30_000);
    expect(cb).toMatchObject({ method: 'POST', path: '/hooks/report' });
    expect(cb!.headers['chime-job-id']).toBe(job.body.jobId);
    expect(cb!.headers['chime-attempt']).toBe('1');
    const body = new Webhook(tenant.signingSecret).verify(cb!.body, {
      'webhook-id': String(cb!.headers['webhook-id']),
      'webhook-timestamp': String(cb!.headers['webhook-timestamp']),
      'webhook-signature': String(cb!.headers['webhook-signature']),
    });
    expect(body).toEqual({ report: 'nightly' });
    const run = await eventually(
      async () => {
        const r = await tenant.api.get(`/v1/runs/${cb!.headers['webhook-id']}`);
        return r.body.status === 'succeeded' ? r.body : undefined;
      },
      { timeoutMs: 30_000, what: 'the run to be recorded succeeded' },
    );
    expect(run.attemptLog).toEqual([expect.objectContaining({ attempt: 1, responseStatus: 200, responseBodyExcerpt: 'ok' })]);
    expect(dev.output()).toMatch(/"msg":"tick finished"/);
  });

  it('a failed callback is retried by a later tick, with the same webhook-id', async () => {
    tenant ??= await createTestTenant(dev.url, 'workerd');
    receiver.received.length = 0;
    receiver.respond = (r) => (r.headers['chime-attempt'] === '1' ? { status: 503, body: 'try later' } : { status: 200 });
    try {
      const job = await tenant.api.post('/v1/jobs', {
        schedule: { type: 'delay', delayMs: 0 },
        callback: { url: `${receiver.url}/flaky` },
        retry: { strategy: 'fixed', maxAttempts: 3, initialDelayMs: 1000, jitter: false },
      });
      expect(job.status).toBe(201);
      // Fire the Cron Trigger until the retry is due and sent (a real Cron Trigger fires every minute).
      const received = await eventually(
        async () => {
          await dev.fireScheduled();
          return receiver.received.length >= 2 ? receiver.received : undefined;
        },
        { timeoutMs: 45_000, intervalMs: 500, what: 'the retry of the failed callback' },
      );
      expect(received.map((r) => r.headers['chime-attempt'])).toEqual(['1', '2']);
      expect(received[1]!.headers['webhook-id']).toBe(received[0]!.headers['webhook-id']);
      const run = await eventually(
        async () => {
          const r = await tenant.api.get(`/v1/runs/${received[0]!.headers['webhook-id']}`);
          return r.body.status === 'succeeded' ? r.body : undefined;
        },
        { timeoutMs: 30_000, what: 'the run to succeed on its second attempt' },
      );
      expect(run.attemptLog.map((a: { responseStatus: number }) => a.responseStatus)).toEqual([503, 200]);
    } finally {
      receiver.respond = () => ({ status: 200 });
    }
  });
});
