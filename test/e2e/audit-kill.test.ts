/**
 * The audit log is written in the transaction of its change (API.md "Access control and audit", docs/design.md
 * invariant 11): the real service is SIGKILLed while concurrent clients create, pause and cancel jobs, with changes in
 * flight; after a restart on the same database every change that exists has its entry, and every entry its change
 * (a job exists ⇔ `job.created`; paused or canceled after a pause ⇔ `job.paused`; canceled ⇔ `job.canceled`), and
 * every change acknowledged before the kill is there. On each database target.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, apiClient } from '../support/api.ts';
import { ADMIN_TOKEN, type ChimeProcess, startChime } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';

const CLIENTS = 8;
/** Changes acknowledged before the kill. */
const ACKNOWLEDGED_BEFORE_KILL = 120;

type Ack = { action: 'job.created' | 'job.paused' | 'job.canceled'; jobId: string };

/** Every page of `path` (a list answering `{ [field]: T[], nextCursor }`). */
async function all<T>(api: Api, path: string, field: string): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const r: { status: number; body: Record<string, unknown> } = await api.get(
      `${path}${sep}limit=100${cursor ? `&cursor=${cursor}` : ''}`,
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    out.push(...(r.body[field] as T[]));
    cursor = r.body.nextCursor as string | null;
  } while (cursor);
  return out;
}

describe.each(DATABASE_TARGETS)('audit entries and changes through a SIGKILL ($kind)', (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess | undefined;

  beforeAll(async () => {
    db = await freshDatabase(target);
  });
  afterAll(async () => {
    await chime?.stop('SIGKILL');
    await db?.drop();
  });

  it('has an entry exactly for each change that exists', async () => {
    chime = await startChime(db.env, ['serve', '--role', 'api']);
    const created = await fetch(`${chime.url}/v1/tenants`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ name: 'audited' }),
    });
    expect(created.status).toBe(201);
    const { apiKey } = (await created.json()) as { apiKey: string };
    const api = apiClient(chime.url, apiKey);

    const acks: Ack[] = [];
    let failed = 0;
    let stop = false;
    const body = { schedule: { type: 'delay', delayMs: 3_600_000 }, callback: { url: 'http://127.0.0.1:9/never' } };
    // Each client: create, pause, cancel, again; a request cut by the kill ends its client.
    const client = async () => {
      try {
        while (!stop) {
          const r = await api.post('/v1/jobs', body);
          if (r.status !== 201) throw new Error(`create: ${r.status}`);
          acks.push({ action: 'job.created', jobId: r.body.jobId });
          const p = await api.request('PATCH', `/v1/jobs/${r.body.jobId}`, { paused: true });
          if (p.status !== 200) throw new Error(`pause: ${p.status}`);
          acks.push({ action: 'job.paused', jobId: r.body.jobId });
          const d = await api.request('DELETE', `/v1/jobs/${r.body.jobId}`);
          if (d.status !== 204) throw new Error(`cancel: ${d.status}`);
          acks.push({ action: 'job.canceled', jobId: r.body.jobId });
        }
      } catch {
        failed++;
      }
    };
    const clients = Array.from({ length: CLIENTS }, client);
    await eventually(() => acks.length >= ACKNOWLEDGED_BEFORE_KILL, { timeoutMs: 60_000, what: `${ACKNOWLEDGED_BEFORE_KILL} changes` });
    const ackedBeforeKill = [...acks];
    await chime.stop('SIGKILL');
    stop = true;
    await Promise.all(clients);
    // The kill cut changes in flight (every client was mid-request: none stops on its own).
    expect(failed).toBe(CLIENTS);

    chime = await startChime(db.env, ['serve', '--role', 'api']);
    const after = apiClient(chime.url, apiKey);
    const jobs = await all<{ jobId: string; status: string }>(after, '/v1/jobs', 'jobs');
    const entries = await all<{ action: string; target: { id: string } }>(after, '/v1/audit-log', 'entries');
    const targets = (action: string) => new Set(entries.filter((e) => e.action === action).map((e) => e.target.id));
    const ids = (pred: (j: { status: string }) => boolean) => new Set(jobs.filter(pred).map((j) => j.jobId));

    expect(targets('job.created')).toEqual(ids(() => true));
    expect(targets('job.canceled')).toEqual(ids((j) => j.status === 'canceled'));
    // Every job here is paused before it is canceled, so a pause happened exactly for the paused and the canceled.
    expect(targets('job.paused')).toEqual(ids((j) => j.status === 'paused' || j.status === 'canceled'));
    // One entry per change (the tenant's creation wrote two more: tenant.created and its first key's api_key.created).
    expect(entries.filter((e) => e.action.startsWith('job.')).length).toBe(
      targets('job.created').size + targets('job.paused').size + targets('job.canceled').size,
    );
    expect(entries.filter((e) => !e.action.startsWith('job.')).map((e) => e.action)).toEqual(['api_key.created', 'tenant.created']);
    for (const a of ackedBeforeKill) expect(targets(a.action).has(a.jobId), `${a.action} ${a.jobId}`).toBe(true);
    // Changes made, one step short for the jobs a kill interrupted.
    expect(jobs.length).toBeGreaterThanOrEqual(ackedBeforeKill.filter((a) => a.action === 'job.created').length);
  });
});
