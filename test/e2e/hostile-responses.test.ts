/**
 * Issue #28, finding 1, end to end: receivers that answer with a NUL byte, invalid UTF-8 or a UTF-16 body (by malice or
 * by accident) have their runs recorded (the excerpt with U+FFFD where PostgreSQL cannot store a character), and
 * another job of the same tenant (so of the same bucket) to a well-behaved receiver keeps being recorded beside them.
 * Before the fix the NUL failed the bucket's finish: its outcomes were retried forever, every run of the bucket stayed
 * `running` until its lease was reaped, and SIGTERM never finished. Real process, real receiver, every database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, type Reply, startReceiver } from '../support/receiver.ts';

/** The answers, by path: each 200, so each run must end `succeeded`. */
const BODIES: Record<string, Buffer> = {
  '/nul': Buffer.from('a\u0000b', 'utf8'),
  '/invalid-utf8': Buffer.from([0x61, 0xff, 0xfe, 0xc3, 0x28, 0x62]),
  '/utf16': Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('ok then', 'utf16le')]),
};
const GRACE_MS = 3_000;

type Run = { runId: string; status: string };
type Attempt = { responseStatus: number | null; responseBodyExcerpt: string | null; error: string | null };

describe.each(DATABASE_TARGETS)('receivers answering bytes PostgreSQL cannot store, on $kind', (target) => {
  let db: FreshDatabase;
  let receiver: Receiver;
  let chime: ChimeProcess;
  let tenant: TestTenant;
  const jobs = new Map<string, string>();

  beforeAll(async () => {
    db = await freshDatabase(target);
    receiver = await startReceiver((r): Reply => ({ status: 200, body: BODIES[r.path] ?? 'fine' }));
    chime = await startChime({ ...db.env, CHIME_SHUTDOWN_GRACE_MS: String(GRACE_MS) });
    tenant = await createTestTenant(chime.url, 'hostile');
    for (const path of [...Object.keys(BODIES), '/good']) {
      const r = await tenant.api.post('/v1/jobs', {
        name: path,
        schedule: { type: 'interval', everyMs: 1000 },
        callback: { url: `${receiver.url}${path}` },
        retry: { strategy: 'none' },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      jobs.set(path, r.body.jobId);
    }
  });
  afterAll(async () => {
    await chime?.stop('SIGKILL');
    await receiver?.close();
    await db?.drop();
  });

  const succeeded = async (path: string): Promise<Run[]> =>
    (await tenant.api.get(`/v1/jobs/${jobs.get(path)}/runs?status=succeeded`)).body.runs;

  it("records every run, the other job's included, with the unstorable characters replaced", { timeout: 60_000 }, async () => {
    // Three recorded runs of each job: the bucket's finishes go on past the hostile answers.
    for (const path of jobs.keys()) {
      await eventually(async () => (await succeeded(path)).length >= 3, { timeoutMs: 30_000, what: `3 recorded runs of ${path}` });
    }
    const excerpt = async (path: string) => {
      const [run] = await succeeded(path);
      const detail = (await tenant.api.get(`/v1/runs/${run!.runId}`)).body as { attemptLog: Attempt[] };
      return detail.attemptLog[0]!.responseBodyExcerpt;
    };
    expect(await excerpt('/nul')).toBe('a\uFFFDb');
    expect(await excerpt('/invalid-utf8')).toBe('a\uFFFD\uFFFD\uFFFD(b');
    expect(await excerpt('/utf16')).toBe('\uFFFD\uFFFDo\uFFFDk\uFFFD \uFFFDt\uFFFDh\uFFFDe\uFFFDn\uFFFD');
    expect(await excerpt('/good')).toBe('fine');
    expect(chime.output()).not.toContain('recording outcomes failed');
  });

  it('SIGTERM ends the process within the grace period', { timeout: 60_000 }, async () => {
    const signaledAt = Date.now();
    const code = await chime.stop('SIGTERM');
    expect(code).toBe(0);
    // The grace period, plus the time to close the server and the database.
    expect(Date.now() - signaledAt).toBeLessThan(GRACE_MS + 10_000);
  });
});
