/**
 * Suspending a tenant through the real process and real HTTP (API.md "Operating tenants"), on each database: its keys
 * answer 403 tenant_suspended at once; its run that falls due while it is suspended is not delivered (another
 * tenant's run due later is, so the dispatcher was at work) and is not lost: resumed, the tenant's run reaches the
 * receiver on 127.0.0.1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, createTestTenant, type TestTenant } from '../support/api.ts';
import { ADMIN_TOKEN, type ChimeProcess, startChime } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

describe.each(DATABASE_TARGETS)('tenant suspension on $kind', (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let receiver: Receiver;
  let held: TestTenant;
  let control: TestTenant;
  const hits = (path: string) => receiver.received.filter((r) => r.path === path);

  beforeAll(async () => {
    db = await freshDatabase(target);
    chime = await startChime(db.env);
    receiver = await startReceiver();
    held = await createTestTenant(chime.url, 'held');
    control = await createTestTenant(chime.url, 'control');
  });
  afterAll(async () => {
    await chime?.stop();
    await receiver?.close();
    await db?.drop();
  });

  it('refuses its keys, holds its due run while suspended and delivers it once resumed', async () => {
    const admin = apiClient(chime.url, ADMIN_TOKEN);
    const job = await held.api.post('/v1/jobs', { schedule: { type: 'delay', delayMs: 1500 }, callback: { url: `${receiver.url}/held` } });
    expect(job.status).toBe(201);
    const suspended = await admin.request('PATCH', `/v1/admin/tenants/${held.tenantId}`, { status: 'suspended' });
    expect(suspended.status).toBe(200);
    const dueAt = Date.parse(job.body.nextRunAt);

    const refused = await held.api.get('/v1/tenant');
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(refused.body.type).toMatch(/tenant_suspended$/);

    // Another tenant's run due a second after the held one: once it has arrived, the held one would have too.
    const later = await control.api.post('/v1/jobs', {
      schedule: { type: 'once', at: new Date(dueAt + 1000).toISOString() },
      callback: { url: `${receiver.url}/control` },
    });
    expect(later.status).toBe(201);
    await eventually(() => hits('/control').length === 1, { what: "the other tenant's callback" });
    expect(Date.now()).toBeGreaterThan(dueAt);
    expect(hits('/held')).toEqual([]);
    const listed = await admin.get('/v1/admin/tenants');
    expect(listed.body.tenants.find((t: { tenantId: string }) => t.tenantId === held.tenantId)).toMatchObject({
      status: 'suspended',
      jobs: { active: 1, paused: 0 },
    });

    const resumed = await admin.request('PATCH', `/v1/admin/tenants/${held.tenantId}`, { status: 'active' });
    expect(resumed.body.status).toBe('active');
    await eventually(() => hits('/held').length === 1, { what: 'the held callback after resuming' });
    expect((await held.api.get('/v1/tenant')).status).toBe(200);
    await eventually(async () => (await held.api.get(`/v1/jobs/${job.body.jobId}/runs`)).body.runs[0]?.status === 'succeeded', {
      what: 'the held run recorded as succeeded',
    });
    // Not lost and not doubled: the one run of the once job.
    expect((await held.api.get(`/v1/jobs/${job.body.jobId}/runs`)).body.runs).toHaveLength(1);
  });
});
