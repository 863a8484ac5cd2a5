/**
 * The console in Chromium (test/console/support.ts), runs: a job triggered, the callback received and the run shown
 * with its attempts; pause and resume; a dead letter replayed; the dead letters' bulk replays, dismiss and banner,
 * with messages that agree with the list; the runs feed's filters; the lists' order, shown as the column they are
 * sorted by; live lists and their pause control; a one-off whose only run failed, and the last run of any trigger;
 * the usage cards; an async run awaiting its report, its output and response headers, and a job's result deliveries.
 */
import { describe, expect, it } from 'vitest';
import type { TestTenant } from '../support/api.ts';
import { localDateTime } from '../support/browser.ts';
import { eventually } from '../support/eventually.ts';
import {
  BROWSER,
  card,
  DATABASE_TARGETS,
  fact,
  jobRow,
  listedRuns,
  loaded,
  newestFirst,
  sortedColumn,
  useHarness,
  YEARLY,
} from './support.ts';

describe.runIf(BROWSER).each(DATABASE_TARGETS)('the console in Chromium on $kind: runs', (target) => {
  const h = useHarness(target);
  /** A's cron job at 09:00 in Paris on weekdays (made once, through the API). */
  let cron: Promise<string> | undefined;
  const cronJob = () =>
    (cron ??= h.makeJob(h.a, {
      name: 'Paris morning report',
      schedule: { type: 'cron', expression: '0 9 * * 1-5', timezone: 'Europe/Paris' },
      callback: { url: `${h.receiver.url}/report` },
    }));

  it('triggers the job: the receiver gets the callback and the run shows its attempt', async () => {
    const page = await h.newPage();
    const cronJobId = await cronJob();
    await h.signIn(page, h.a, `/console/jobs/${cronJobId}`);
    await page.getByRole('button', { name: 'Trigger now' }).click();
    const [cb] = await h.receiver.waitFor(1);
    expect(cb!.headers['chime-job-id']).toBe(cronJobId);
    // "Run <runId> queued", the id a link to the run.
    await page.locator('.notice', { hasText: 'queued' }).getByRole('link').click();
    await page.waitForURL(/\/console\/runs\/[0-9a-f-]{36}$/);
    await page.getByRole('heading', { name: 'Run' }).waitFor();
    // The page polls until the run is final: then its status reads succeeded and its one attempt answered 200.
    await expect.poll(() => page.locator('dl.facts').textContent(), { timeout: 15_000 }).toMatch(/succeeded/);
    const attempts = page.getByRole('table').last();
    await expect.poll(() => attempts.getByRole('cell', { name: '200', exact: true }).count(), { timeout: 15_000 }).toBe(1);
    await h.shot(page, 'run');
  });

  it('a failing receiver makes a dead letter; replayed from the console, it succeeds', async () => {
    const made = await h.a.api.post('/v1/jobs', {
      name: 'flaky export',
      schedule: { type: 'delay', delayMs: 0 },
      callback: { url: `${h.receiver.url}/flaky` },
      retry: { strategy: 'none' },
    });
    expect(made.status).toBe(201);
    const deadRunId = await eventually(
      async () =>
        (await h.a.api.get('/v1/dead-letters')).body.runs.find((r: { jobId: string }) => r.jobId === made.body.jobId)?.runId as
          | string
          | undefined,
      {
        what: 'the dead letter',
      },
    );
    const page = await h.newPage();
    await h.signIn(page, h.a);
    await page.getByRole('link', { name: 'Dead letters' }).first().click();
    await page.getByRole('heading', { name: 'Dead letters' }).waitFor();
    const row = page.getByRole('row').filter({ has: page.getByRole('checkbox', { name: `Select run ${deadRunId}` }) });
    await row.waitFor();
    await h.shot(page, 'dead-letters');
    h.heal();
    await row.getByRole('button', { name: 'Replay' }).click();
    const replay = await eventually(
      async () =>
        (await h.a.api.get(`/v1/jobs/${made.body.jobId}/runs`)).body.runs.find(
          (r: { trigger: string; status: string }) => r.trigger === 'replay' && r.status === 'succeeded',
        ),
      { what: 'the replay to succeed' },
    );
    await page.goto(`${h.url}/console/runs/${replay.runId}`);
    await expect.poll(() => page.locator('dl.facts').textContent()).toMatch(/succeeded/);
    await expect.poll(() => page.getByRole('table').last().getByRole('cell', { name: '200', exact: true }).count()).toBe(1);
    // The dead letter is gone from the list once replayed.
    await page.goto(`${h.url}/console/dead-letters`);
    await page.getByRole('heading', { name: 'Dead letters' }).waitFor();
    await expect.poll(() => page.getByRole('checkbox', { name: `Select run ${deadRunId}` }).count()).toBe(0);
  });

  it('pauses and resumes a job', async () => {
    const page = await h.newPage();
    const cronJobId = await cronJob();
    await h.signIn(page, h.a, `/console/jobs/${cronJobId}`);
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await page.getByRole('button', { name: 'Resume', exact: true }).waitFor();
    expect((await h.a.api.get(`/v1/jobs/${cronJobId}`)).body).toMatchObject({ status: 'paused', pausedReason: 'manual' });
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await page.getByRole('button', { name: 'Pause', exact: true }).waitFor();
    expect((await h.a.api.get(`/v1/jobs/${cronJobId}`)).body.status).toBe('active');
  });

  it("dead letters: replays the selected, all of a job's, and from the job page; dismisses one; the banner goes when none is left", async () => {
    const t = await h.tenant('Tenant D');
    const job = (path: string) =>
      h.makeJob(t, {
        name: `export ${path}`,
        schedule: YEARLY,
        callback: { url: `${h.receiver.url}${path}` },
        retry: { strategy: 'none' },
      });
    for (const path of ['/dl-x', '/dl-y', '/dl-z']) h.down.add(path);
    const [x, y, z] = [await job('/dl-x'), await job('/dl-y'), await job('/dl-z')];
    const runs = await Promise.all([x, x, x, y, y, z].map((jobId) => h.triggered(t, jobId, 'failed')));
    const [xRuns, yRuns, zRun] = [runs.slice(0, 3).sort(), runs.slice(3, 5).sort(), runs[5]!];
    for (const path of ['/dl-x', '/dl-y', '/dl-z']) h.down.delete(path);
    const deadLetters = async () => ((await t.api.get('/v1/dead-letters')).body.runs as { runId: string }[]).map((r) => r.runId).sort();
    /** Waits until `jobId` has `n` replays that succeeded. */
    const replaysSucceeded = (jobId: string, n: number) =>
      eventually(
        async () =>
          ((await t.api.get(`/v1/jobs/${jobId}/runs`)).body.runs as { trigger: string; status: string }[]).filter(
            (r) => r.trigger === 'replay' && r.status === 'succeeded',
          ).length === n,
        { what: `${n} replays of ${jobId} to succeed` },
      );

    const page = await h.newPage();
    await h.signIn(page, t, '/console/dead-letters');
    await expect.poll(() => listedRuns(page)).toEqual([...xRuns, ...yRuns, zRun].sort());
    await page.getByText('6 dead letters.').waitFor();
    // Two of x's selected, then replayed: only those two.
    const [x1, x2, x3] = xRuns as [string, string, string];
    await page.getByRole('checkbox', { name: `Select run ${x1}` }).check();
    await page.getByRole('checkbox', { name: `Select run ${x2}` }).check();
    await page.getByText('2 selected').waitFor();
    await page.getByRole('button', { name: 'Replay selected' }).click();
    // The message says what was replayed; what is left is the list's own count (the API's `remaining` of a replay by
    // run ids counts the selected ones left, not the list).
    await page.getByRole('status').filter({ hasText: 'Replayed 2 of the 2 selected.' }).waitFor();
    await expect.poll(() => listedRuns(page)).toEqual([x3, ...yRuns, zRun].sort());
    await page.getByText('4 dead letters.').waitFor();
    expect(await page.locator('.outcome').textContent()).toBe('Replayed 2 of the 2 selected.');
    expect(await deadLetters()).toEqual([x3, ...yRuns, zRun].sort());
    await replaysSucceeded(x, 2);
    // Dismissed: gone from the list, its run kept with dismissedAt.
    const row = page.getByRole('row').filter({ has: page.getByRole('checkbox', { name: `Select run ${x3}` }) });
    await row.getByRole('button', { name: 'Dismiss' }).click();
    expect(await deadLetters(), 'the first click only asks').toContain(x3);
    await row.getByRole('button', { name: 'Yes, dismiss' }).click();
    await page.getByRole('status').filter({ hasText: 'Dismissed 1 dead letter.' }).waitFor();
    await expect.poll(() => listedRuns(page)).toEqual([...yRuns, zRun].sort());
    const dismissed = (await t.api.get(`/v1/runs/${x3}`)).body;
    expect(dismissed.status).toBe('failed');
    expect(Date.parse(dismissed.dismissedAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(await deadLetters()).toEqual([...yRuns, zRun].sort());
    await h.shot(page, 'dead-letters-after');
    // All of y's, from its own list (the bulk replay by jobId).
    await page.goto(`${h.url}/console/dead-letters?jobId=${y}`);
    await page.getByText('2 dead letters of this job.').waitFor();
    await expect.poll(() => listedRuns(page)).toEqual(yRuns);
    await page.getByRole('button', { name: "Replay all of this job's" }).click();
    await page.getByRole('status').filter({ hasText: "Replayed 2 of this job's dead letters; 0 left." }).waitFor();
    await page.getByText('No dead letters').waitFor();
    await replaysSucceeded(y, 2);
    expect(await deadLetters()).toEqual([zRun]);
    // z's from its job page.
    await page.goto(`${h.url}/console/jobs/${z}`);
    await page.getByRole('button', { name: 'Replay failed runs' }).click();
    await page.getByText('Replayed 1 failed run; 0 remaining.').waitFor();
    await replaysSucceeded(z, 1);
    expect(await deadLetters()).toEqual([]);
    // No dead letter left: the job list has no banner.
    const checked = page.waitForResponse((r) => new URL(r.url()).pathname === '/v1/dead-letters');
    await page.goto(`${h.url}/console/jobs`);
    await (await checked).finished();
    await loaded(page);
    await page.evaluate('new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))');
    expect(await page.getByText('There are failed runs waiting').count()).toBe(0);
  });

  /** Tenant R: "feed ok" (three runs succeeded) and "feed failing" (one run failed, then paused); memoized. */
  let feed: Promise<{ r: TestTenant; ok: string; failing: string; okRuns: string[]; failedRun: string }> | undefined;
  const feedTenant = () =>
    (feed ??= (async () => {
      const r = await h.tenant('Tenant R');
      const ok = await h.makeJob(r, { name: 'feed ok', schedule: YEARLY, callback: { url: `${h.receiver.url}/ok` } });
      const failing = await h.makeJob(r, {
        name: 'feed failing',
        schedule: YEARLY,
        callback: { url: `${h.receiver.url}/fail` },
        retry: { strategy: 'none' },
      });
      const [failedRun, ...okRuns] = await Promise.all([
        h.triggered(r, failing, 'failed'),
        ...[1, 2, 3].map(() => h.triggered(r, ok, 'succeeded')),
      ]);
      okRuns.sort();
      expect((await r.api.request('PATCH', `/v1/jobs/${failing}`, { paused: true })).status).toBe(200);
      return { r, ok, failing, okRuns, failedRun };
    })());

  it('filters the runs feed by status, job and a span of scheduled times', async () => {
    const { r, ok, okRuns, failedRun } = await feedTenant();
    /** The runs the API lists for `query`, sorted. */
    const apiRuns = async (query: string) =>
      ((await r.api.get(`/v1/runs?${query}`)).body.runs as { runId: string }[]).map((x) => x.runId).sort();
    const page = await h.newPage();
    await h.signIn(page, r, '/console/runs');
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    const everything = await apiRuns('');
    expect(everything).toEqual(expect.arrayContaining([...okRuns, failedRun]));
    await expect.poll(() => listedRuns(page)).toEqual(everything);
    await loaded(page);
    await h.shot(page, 'runs');
    // Status.
    const status = page.getByLabel('Status', { exact: true });
    await status.selectOption('failed');
    await expect.poll(() => listedRuns(page)).toEqual([failedRun]);
    expect(new URL(page.url()).searchParams.get('status')).toBe('failed');
    // Job (an id; anything else is explained beside the field), with the status.
    const job = page.getByLabel('Job ID', { exact: true });
    await job.fill('feed ok');
    await job.press('Enter');
    await expect.poll(() => page.locator('#runs-job-error').textContent()).toMatch(/UUID/);
    await job.fill(ok);
    await job.press('Enter');
    await expect.poll(() => page.getByText('No runs match these filters.').count()).toBe(1);
    await status.selectOption('succeeded');
    await expect.poll(() => listedRuns(page)).toEqual(okRuns);
    await status.selectOption('');
    await expect.poll(() => listedRuns(page)).toEqual(await apiRuns(`jobId=${ok}`));
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(() => listedRuns(page)).toEqual(everything);
    // Since tomorrow: only the runs still scheduled (1 January); until tomorrow: only the four that ran today.
    const tomorrow = await localDateTime(page, 1, 0);
    await page.getByLabel('Since', { exact: true }).fill(tomorrow.text);
    const later = await apiRuns(`since=${tomorrow.iso}`);
    expect(later.length).toBeGreaterThan(0);
    for (const ran of [...okRuns, failedRun]) expect(later).not.toContain(ran);
    await expect.poll(() => listedRuns(page)).toEqual(later);
    expect(new URL(page.url()).searchParams.get('since')).toBe(tomorrow.iso);
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.getByLabel('Until', { exact: true }).fill(tomorrow.text);
    await expect.poll(() => listedRuns(page)).toEqual([...okRuns, failedRun].sort());
  });

  it('shows the usage cards: success rate, fire lag p50 and p99, active and paused jobs', async () => {
    const { r } = await feedTenant();
    const page = await h.newPage();
    await h.signIn(page, r, '/console/usage');
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    await expect.poll(() => card(page, 'Active jobs')).toBe('1');
    const usage = (await r.api.get('/v1/usage?days=14')).body;
    expect(usage.jobs).toEqual({ active: 1, paused: 1 });
    // Three of the four runs that finished succeeded.
    expect(await card(page, 'Success rate')).toMatch(/^75\s?%$/);
    expect(await card(page, 'Paused jobs')).toBe('1');
    const ms = (text: string | null) => Number(text!.replace(/\D/g, ''));
    expect(usage.fireLagMs).not.toBeNull();
    expect(ms(await card(page, 'Fire lag p50'))).toBe(usage.fireLagMs.p50);
    expect(ms(await card(page, 'Fire lag p99'))).toBe(usage.fireLagMs.p99);
    expect(await card(page, 'Fire lag p99')).toMatch(/ ms$/);
    // The table's columns add up to the same runs: 3 succeeded, 1 failed, 4 attempts.
    const days = page.getByRole('table', { name: 'Runs per day' }).locator('tbody tr');
    const totals = await days.evaluateAll((rows) =>
      rows.reduce(
        (sum: number[], row) => sum.map((n: number, i: number) => n + Number(row.querySelectorAll('td')[i]!.textContent)),
        [0, 0, 0, 0, 0],
      ),
    );
    expect(totals).toEqual([3, 1, 0, 0, 4]);
  });

  it("lists say what they are sorted by, in the column they mark: the runs feed, a job's runs and the dead letters", async () => {
    const t = await h.tenant('Tenant O');
    // A yearly job's next run is created at once, for 1 January; a manual run created after it is due now: the order
    // of creation (the API's) is not that of the scheduled times.
    const yearly = await h.makeJob(t, { name: 'order yearly', schedule: YEARLY, callback: { url: `${h.receiver.url}/ok` } });
    await h.triggered(t, yearly, 'succeeded');
    // A run that retries fails after a run created later that fails at once: creation is not the order of failure.
    const retrying = await h.makeJob(t, {
      name: 'order slow',
      schedule: YEARLY,
      callback: { url: `${h.receiver.url}/fail` },
      retry: { strategy: 'fixed', maxAttempts: 2, initialDelayMs: 2000, jitter: false },
    });
    const atOnce = await h.makeJob(t, {
      name: 'order fast',
      schedule: YEARLY,
      callback: { url: `${h.receiver.url}/fail` },
      retry: { strategy: 'none' },
    });
    const slow = (await t.api.post(`/v1/jobs/${retrying}/trigger`)).body.runId as string;
    await h.triggered(t, atOnce, 'failed');
    expect(await h.finalStatus(t, slow)).toBe('failed');

    const page = await h.newPage();
    /** The table's order: the column marked, newest first; and whether the scheduled times alone are in that order. */
    const check = async (what: string, table = page.locator('main table').first()) => {
      await loaded(page);
      const order = await sortedColumn(page, table);
      expect(order, what).toMatchObject({ header: 'Created ↓', sort: 'descending' });
      expect(newestFirst(order.times), `${what}: ${order.times}`).toBe(true);
      expect(await table.locator('caption').textContent(), what).toMatch(/^Newest first, by when each run was created/);
    };
    const scheduled = () =>
      page.locator('main table td.when time').evaluateAll((els) => els.map((e) => Date.parse(e.getAttribute('datetime')!)));
    await h.signIn(page, t, '/console/runs');
    await check('runs feed');
    expect(newestFirst(await scheduled()), 'the scheduled times are not the order').toBe(false);
    await page.goto(`${h.url}/console/jobs/${yearly}`);
    await check("a job's runs", page.getByRole('table', { name: /^Newest first/ }));
    await page.goto(`${h.url}/console/dead-letters`);
    await expect.poll(() => listedRuns(page)).toHaveLength(2);
    await check('dead letters');
    expect(await page.locator('table.dead-letters caption').textContent()).toMatch(/\(not by when it failed\)/);
    const failedAt = await scheduled();
    expect(newestFirst(failedAt), `failure times ${failedAt} are not the order`).toBe(false);
  });

  it('a one-off whose only run failed says so; the last run counts manual runs, the last scheduled run says it does not', async () => {
    const t = await h.tenant('Tenant F');
    const once = await h.makeJob(t, {
      name: 'one-off export',
      schedule: { type: 'delay', delayMs: 0 },
      callback: { url: `${h.receiver.url}/fail` },
      retry: { strategy: 'none' },
    });
    await eventually(async () => (await t.api.get(`/v1/jobs/${once}`)).body.status === 'completed', { what: 'the one-off to complete' });
    await eventually(async () => (await t.api.get(`/v1/jobs/${once}/runs`)).body.runs[0]?.status === 'failed', { what: 'its run to fail' });
    const page = await h.newPage();
    await h.signIn(page, t, `/console/jobs/${once}`);
    await expect.poll(() => fact(page, 'Status')).toBe('completed — its last run failed');
    await expect.poll(() => fact(page, /^Last run$/)).toMatch(/^failed .+ \(schedule\)$/);
    await h.shot(page, 'job-failed-one-off');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Jobs' }).click();
    await expect.poll(() => jobRow(page, 'one-off export').getByRole('cell').nth(4).textContent()).toBe('failed');
    // A manual run is a last run; the schedule's last run is labelled as not counting it.
    const yearly = await h.makeJob(t, { name: 'manual only', schedule: YEARLY, callback: { url: `${h.receiver.url}/ok` } });
    const manual = await h.triggered(t, yearly, 'succeeded');
    await page.goto(`${h.url}/console/jobs/${yearly}`);
    await expect.poll(() => fact(page, /^Last run$/)).toMatch(/^succeeded .+ \(manual\)$/);
    expect(
      await page
        .locator('dl.facts')
        .getByRole('link', { name: /P[SD]T/ })
        .getAttribute('href'),
    ).toBe(`/console/runs/${manual}`);
    expect(await fact(page, 'Last scheduled run')).toBe("— (the schedule's own; manual runs and replays are not counted)");
    expect(await fact(page, 'Status')).toBe('active');
  });

  it('the lists of runs and jobs update themselves, and hold still while paused, on every page until resumed', async () => {
    const t = await h.tenant('Tenant L');
    const jobId = await h.makeJob(t, { name: 'live one', schedule: YEARLY, callback: { url: `${h.receiver.url}/ok` } });
    const page = await h.newPage();
    await h.signIn(page, t, '/console/runs');
    await loaded(page);
    await page.getByText('Live: updates every 5 s.').waitFor();
    const first = await h.triggered(t, jobId, 'succeeded');
    // No reload: the list reads itself again.
    await expect.poll(() => listedRuns(page), { timeout: 12_000 }).toContain(first);
    await page.getByRole('button', { name: 'Pause live updates' }).click();
    await page.getByText('Paused: this list does not update itself.').waitFor();
    const second = await h.triggered(t, jobId, 'succeeded');
    await page.waitForTimeout(6_500);
    expect(await listedRuns(page)).not.toContain(second);
    // The pause holds on the other lists (the job list), until resumed there.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Jobs' }).click();
    const resume = page.getByRole('button', { name: 'Resume live updates' });
    await resume.waitFor();
    expect(await resume.getAttribute('aria-pressed')).toBe('true');
    await loaded(page);
    await h.makeJob(t, { name: 'live two', schedule: YEARLY, callback: { url: `${h.receiver.url}/ok` } });
    expect(await page.getByRole('link', { name: 'live two' }).count()).toBe(0);
    await resume.click();
    await expect.poll(() => page.getByRole('link', { name: 'live two' }).count(), { timeout: 12_000 }).toBe(1);
    await page.getByRole('link', { name: 'Runs', exact: true }).click();
    await expect.poll(() => listedRuns(page)).toContain(second);
  });

  it("an async run: awaiting its report with the deadline, then its output; the attempt's response headers; the job's result deliveries", async () => {
    const jobId = await h.makeJob(h.a, {
      name: 'nightly export',
      schedule: YEARLY,
      callback: { url: `${h.receiver.url}/accepted` },
      completion: { mode: 'async', timeoutMs: 3_600_000 },
      onSuccess: { url: `${h.receiver.url}/results` },
    });
    const runId = (await h.a.api.post(`/v1/jobs/${jobId}/trigger`)).body.runId as string;
    await eventually(async () => (await h.a.api.get(`/v1/runs/${runId}`)).body.awaitingCompletion === true, {
      what: 'the run to await its report',
    });
    const page = await h.newPage();
    await h.signIn(page, h.a, `/console/runs/${runId}`);
    await expect.poll(() => fact(page, 'Awaiting completion')).toMatch(/reports its end by/);
    await page.getByText('Headers (').first().click();
    expect(await page.locator('table.attempts').textContent()).toContain('x-export-id: exp-7');
    await h.shot(page, 'run-awaiting');

    const sent = h.receiver.received.find((r) => r.path === '/accepted')!;
    const report = await fetch(String(sent.headers['chime-completion-url']), {
      method: 'POST',
      headers: { authorization: `Bearer ${sent.headers['chime-completion-token']}`, 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'succeeded', output: { rowsExported: 4242 } }),
    });
    expect(report.status).toBe(200);
    await expect.poll(() => page.locator('#output').textContent()).toContain('"rowsExported": 4242');
    await expect.poll(() => fact(page, 'Status')).toBe('succeeded');
    expect(await page.locator('table.attempts').textContent()).toContain('succeeded');

    await page.goto(`${h.url}/console/jobs/${jobId}`);
    await expect.poll(() => fact(page, 'Completion')).toBe('reported by the receiver, within 1 hour');
    expect(await fact(page, 'Results to')).toBe(`succeeded runs: ${h.receiver.url}/results`);
    const deliveries = page.getByRole('region', { name: 'Result deliveries' });
    await expect.poll(() => deliveries.getByRole('row').count()).toBe(2);
    expect(await deliveries.textContent()).toContain('run.succeeded');
    await h.shot(page, 'result-deliveries');
  });

  it('saved a screenshot of every page it shows', () => {
    expect([...h.shots]).toEqual(
      expect.arrayContaining([
        'run',
        'dead-letters',
        'dead-letters-after',
        'runs',
        'job-failed-one-off',
        'run-awaiting',
        'result-deliveries',
      ]),
    );
  });
});
