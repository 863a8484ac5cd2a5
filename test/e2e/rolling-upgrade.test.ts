/**
 * An upgrade without downtime (issue #31, point 3; README "Upgrades"), as an operator runs it on PostgreSQL: the
 * previous release (a fixed earlier commit, checked out with `git worktree` and built: test/support/previous-release.ts)
 * serves an API and two dispatchers under load; this version's `chime migrate` runs while they do; this version's
 * dispatchers and API start (their schema check passes) and take the traffic; then the old processes get SIGTERM.
 * Must hold: every job that got a `201` is delivered (0 lost), no answer is a `5xx` (or no answer at all), and the new
 * processes keep running. Migrations expand only (docs/design.md "Upgrades", test/store/migrations-expand.test.ts), so
 * the old release keeps working on the migrated schema while it drains.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { apiClient, createTestTenant } from '../support/api.ts';
import { type ChimeProcess, killAll, startChime } from '../support/chime-process.ts';
import { runChime } from '../support/chime-run.ts';
import { type FreshDatabase, freshDatabase, TEST_ENCRYPTION_KEY } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { buildPreviousRelease, PREVIOUS_RELEASE, type Release } from '../support/previous-release.ts';
import { allArrived, type Receiver, startReceiver } from '../support/receiver.ts';

describe.runIf(process.env.TEST_DATABASE_URL)(`a rolling upgrade from ${PREVIOUS_RELEASE.slice(0, 7)} on PostgreSQL`, () => {
  let release: Release | undefined;
  let db: FreshDatabase | undefined;
  let receiver: Receiver | undefined;
  const procs: [string, ChimeProcess][] = [];

  afterAll(async () => {
    await killAll(procs);
    await receiver?.close();
    await db?.drop();
    await release?.remove();
  });

  it('loses nothing and answers no 5xx while the schema is migrated and the processes are replaced', { timeout: 420_000 }, async () => {
    release = await buildPreviousRelease();
    db = await freshDatabase({ kind: 'postgres' });
    receiver = await startReceiver();
    // The previous release migrated at every start; this env is what its operator ran.
    const env = { DATABASE_URL: db.url!, CHIME_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, CHIME_REAP_INTERVAL_MS: '1000' };
    const oldApi = await startChime(env, ['serve', '--role', 'api'], release.root);
    procs.push(['old api', oldApi]);
    for (const name of ['old dispatcher 1', 'old dispatcher 2'])
      procs.push([name, await startChime(env, ['serve', '--role', 'dispatcher'], release.root)]);
    const tenant = await createTestTenant(oldApi.url, 'upgrade');

    // Clients register a job every 10 ms, each due 0.5–2.5 s later, through whichever API the load balancer points at.
    let apiUrl = oldApi.url;
    const accepted = new Set<string>();
    const refused: { status: number; body: unknown }[] = [];
    let registering = true;
    let i = 0;
    const load = (async () => {
      while (registering) {
        const r = await apiClient(apiUrl, tenant.apiKey, (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(15_000) }))
          .post('/v1/jobs', {
            schedule: { type: 'delay', delayMs: 500 + (i++ % 2000) },
            callback: { url: `${receiver!.url}/upgrade` },
            retry: { strategy: 'fixed', maxAttempts: 20, initialDelayMs: 500 },
          })
          .catch((err: unknown) => ({ status: 0, body: String(err) }));
        if (r.status === 201) accepted.add(r.body.jobId);
        else refused.push({ status: r.status, body: r.body });
        await new Promise((res) => setTimeout(res, 10));
      }
    })();
    const delivered = () => new Set(receiver!.received.map((r) => r.headers['chime-job-id'] as string));

    try {
      await eventually(() => delivered().size >= 50, { timeoutMs: 60_000, what: 'callbacks sent by the previous release' });

      // 1. This version migrates while the old processes run.
      const migrated = await runChime(env, ['migrate']);
      expect(migrated.code, migrated.stderr).toBe(0);
      const status = await runChime(env, ['migrate', '--status']);
      expect(status.stdout).toMatch(/\d+ applied, 0 pending\n$/);

      // 2. This version's dispatchers and API start on the migrated schema (no --migrate: the check must pass).
      for (const name of ['new dispatcher 1', 'new dispatcher 2'])
        procs.push([name, await startChime(env, ['serve', '--role', 'dispatcher'])]);
      const newApi = await startChime(env, ['serve', '--role', 'api']);
      procs.push(['new api', newApi]);
      const beforeSwitch = accepted.size;
      apiUrl = newApi.url;
      await eventually(() => accepted.size >= beforeSwitch + 50, { timeoutMs: 60_000, what: 'registrations through the new API' });

      // 3. The old processes drain and exit (SIGTERM, as an orchestrator's rolling update sends).
      for (const name of ['old api', 'old dispatcher 1', 'old dispatcher 2']) {
        const at = procs.findIndex(([n]) => n === name);
        const [, proc] = procs.splice(at, 1)[0]!;
        expect(await proc.stop(), `${name} exit code\n${proc.output()}`).toBe(0);
      }
      const afterOld = accepted.size;
      await eventually(() => accepted.size >= afterOld + 100, { timeoutMs: 60_000, what: 'registrations after the old processes left' });
      registering = false;
      await load;

      await eventually(() => allArrived(accepted, delivered()), { timeoutMs: 90_000, what: 'every accepted job to be delivered' });
      expect(refused.slice(0, 5), `${refused.length} registrations not accepted`).toEqual([]);
      for (const [name, p] of procs) expect(p.child.exitCode, `${name} exited:\n${p.output()}`).toBeNull();
      // The jobs the old release accepted and the new one sent, and the reverse, are one history: every run succeeded.
      const runs = await apiClient(newApi.url, tenant.apiKey).get('/v1/runs?status=failed&limit=10');
      expect(runs.status).toBe(200);
      expect(runs.body.runs).toEqual([]);
      console.log(
        `rolling upgrade from ${PREVIOUS_RELEASE.slice(0, 7)}: ${accepted.size} jobs accepted, all delivered; ${receiver.received.length} callbacks (${receiver.received.length - accepted.size} duplicates)`,
      );
    } finally {
      registering = false;
      await load;
    }
  });
});
