/**
 * The tenant console in a real Chromium (playwright-core) against the real service (`dist/node/cli.mjs`, as
 * `npm start` runs it) on each database target, with a real receiver on 127.0.0.1. One test per flow: sign-in refused
 * then accepted; a cron job in a time zone made through the form with its preview; the callback received and the run
 * shown with its attempts; a dead letter replayed from the console; pause and resume; a key created, revoked and
 * then refused; tenant B seeing none of A's jobs; markup in a job's name and metadata shown as text with no script
 * run; the job list's pages, filters and cells; editing with the API's field errors beside the fields; cancel asking
 * first; the dead letters' bulk replays, dismiss and banner; the signing secret's rotation and copy button; the runs
 * feed's filters; a job of every other schedule kind made through the form; the usage cards; an expired key; /docs;
 * 1280×800 and a phone without sideways scrolling; the keyboard. On every page: the CSP header, same-origin requests
 * only, and no CSP refusal or page error. A screenshot of each page goes to test-results/console/. Without a Chromium
 * on the machine the file skips, saying so (CI installs one).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { apiClient, createTestTenant, type TestTenant } from '../support/api.ts';
import { chromePath, focused, launchBrowser, localDateTime, openPage, pageWidth, screenshot, tabTo, type PageLog } from '../support/browser.ts';
import { startChime, type ChimeProcess } from '../support/chime-process.ts';
import { DATABASE_TARGETS, freshDatabase, type FreshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';

/** What the receiver answers to `/markup`: the run page must show it as text. */
const RESPONSE_MARKUP = '<script>alert(4)</script><b>bold</b>';

const BROWSER = chromePath();
// CI sets CHIME_REQUIRE_BROWSER (.ci/run installs Chromium): there a missing browser is a failure, not a skip.
if (!BROWSER && process.env.CHIME_REQUIRE_BROWSER) throw new Error('CHIME_REQUIRE_BROWSER is set but no Chromium was found');
if (!BROWSER) console.warn('test/console: skipped, no Chromium on this machine (set CHROME_PATH or apt-get install chromium)');

/** The pages every run of this file must have a screenshot of (test-results/console/<target>-<name>.png). */
const PAGES_SHOWN = ['sign-in-refused', 'jobs', 'job', 'job-form', 'edit-form', 'run', 'runs', 'dead-letters', 'keys', 'signing-secret', 'usage', 'docs'];

/** A schedule that fires only on 1 January: jobs that must exist but not run during the tests. */
const YEARLY = { type: 'cron', expression: '0 0 1 1 *' } as const;
const DAY_MS = 86_400_000;
/** The two sizes every page must fit without scrolling sideways (issue 18). */
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

/** The hour of `iso` on the wall clock of `timeZone`. */
const hourIn = (iso: string, timeZone: string) => Number(new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', hourCycle: 'h23' }).format(new Date(iso)));

describe.runIf(BROWSER).each(DATABASE_TARGETS)('the console in Chromium on $kind', (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let receiver: Receiver;
  let browser: Browser;
  let a: TestTenant;
  let b: TestTenant;
  /** The receiver fails `/flaky` until healed, `/fail` always, and any path in `down` while it is there. */
  let healed = false;
  const down = new Set<string>();
  const open: { context: BrowserContext; page: Page; log: PageLog }[] = [];
  /** The screenshots this run saved (names without the target). */
  const shots = new Set<string>();
  /** A run of A's cron job (the trigger flow), for the pages that show one. */
  let cronRunId: string;

  beforeAll(async () => {
    // What a page shows after a request may take seconds on a busy machine: polls wait up to 10 s (not 1 s), as
    // Playwright's own waits do (test/support/browser.ts).
    vi.setConfig({ expect: { poll: { timeout: 10_000 } } });
    db = await freshDatabase(target);
    receiver = await startReceiver((r) => {
      if (r.path === '/flaky' && !healed) return { status: 500, body: 'flaky is down' };
      if (r.path === '/fail' || down.has(r.path)) return { status: 500, body: 'down' };
      if (r.path === '/markup') return { status: 200, body: RESPONSE_MARKUP };
      return { status: 200, body: 'ok' };
    });
    chime = await startChime({ ...db.env, CHIME_RATE_LIMIT_PER_SECOND: '0' });
    a = await createTestTenant(chime.url, 'Tenant A');
    b = await createTestTenant(chime.url, 'Tenant B');
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    vi.resetConfig();
    await browser?.close();
    await chime?.stop();
    await receiver?.close();
    await db?.drop();
  });

  /** A fresh browser context (its own sessionStorage) on the console. */
  async function newPage(viewport?: { width: number; height: number }): Promise<Page> {
    const p = await openPage(browser, viewport);
    open.push(p);
    return p.page;
  }
  /** What `page` (from newPage) requested and logged so far. */
  const logOf = (page: Page): PageLog => open.find((o) => o.page === page)!.log;

  // Every page of every flow: only this origin was asked for anything, nothing was refused by the CSP, no script
  // error and no dialog.
  afterEach(async () => {
    for (const { context, log } of open.splice(0)) {
      const foreign = log.requests.filter((u) => !u.startsWith(`${chime.url}/`));
      expect(foreign, 'requests to another origin').toEqual([]);
      // A 401 or 404 the app handles still logs "Failed to load resource"; anything else is a real error.
      expect(log.errors.filter((e) => !e.includes('Failed to load resource')), 'page errors').toEqual([]);
      expect(log.dialogs, 'dialogs').toEqual([]);
      await context.close();
    }
  });

  async function signIn(page: Page, tenant: TestTenant, path = '/console'): Promise<void> {
    const res = await page.goto(`${chime.url}${path}`);
    expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
    await page.getByLabel('API key').fill(tenant.apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  }

  const shot = (page: Page, name: string, opts?: { fullPage?: boolean }) => {
    shots.add(name);
    return screenshot(page, `${target.kind}-${name}`, opts);
  };

  /** Creates a job through the API. @returns its id */
  async function makeJob(t: TestTenant, body: Record<string, unknown>): Promise<string> {
    const r = await t.api.post('/v1/jobs', body);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.jobId as string;
  }
  /** Triggers a job through the API, waits until the run is final and expects `status`. @returns the run id */
  async function triggered(t: TestTenant, jobId: string, status: 'succeeded' | 'failed'): Promise<string> {
    const r = await t.api.post(`/v1/jobs/${jobId}/trigger`);
    expect(r.status).toBe(202);
    const id = r.body.runId as string;
    const final = await eventually(
      async () => {
        const s = (await t.api.get(`/v1/runs/${id}`)).body.status as string;
        return ['succeeded', 'failed', 'expired', 'canceled', 'skipped'].includes(s) && s;
      },
      { what: `run ${id} to finish` },
    );
    expect(final, `run ${id}`).toBe(status);
    return id;
  }
  /** The run ids a page's runs or dead letters table lists (from the links of their rows), sorted. */
  const listedRuns = (page: Page) =>
    page.locator('main table tbody tr td.when a').evaluateAll((links) => links.map((l) => l.getAttribute('href')!.split('/').pop()!).sort());
  /** The names of the jobs the job list shows, sorted. */
  const listedJobs = (page: Page) => page.locator('table.jobs-table tbody tr td:first-child a').allTextContents().then((names) => names.sort());
  /** The row of the job named `name` in the job list. */
  const jobRow = (page: Page, name: string) => page.locator('table.jobs-table tbody tr').filter({ has: page.getByRole('link', { name, exact: true }) });
  /** The text of a card of the usage page. */
  const card = (page: Page, label: string) => page.locator('.card').filter({ has: page.locator('.label', { hasText: new RegExp(`^${label}$`) }) }).locator('.value').textContent();

  it('refuses a wrong key with a message, accepts the right one, shows the tenant, and signs out', async () => {
    const page = await newPage();
    await page.goto(`${chime.url}/console`);
    await page.getByLabel('API key').fill('chk_not_a_key_at_all_000000000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/not accepted/);
    await shot(page, 'sign-in-refused');
    await page.getByLabel('API key').fill(a.apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Jobs' }).waitFor();
    expect(await page.getByText('Tenant A').count()).toBeGreaterThan(0);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate(() => Object.keys((globalThis as unknown as { sessionStorage: Record<string, string> }).sessionStorage).length)).toBe(0);
  });

  let cronJobId: string;

  it('creates a cron job in a time zone through the form, its next occurrences previewed as the user types', async () => {
    const page = await newPage();
    await signIn(page, a);
    await page.getByRole('link', { name: 'New job' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Paris morning report');
    await page.getByLabel('Schedule type', { exact: true }).selectOption('cron');
    await page.getByLabel('Cron expression', { exact: true }).fill('0 9 * * 1-5');
    await page.getByLabel('Time zone', { exact: true }).selectOption('Europe/Paris');
    await page.getByLabel('Callback URL', { exact: true }).fill(`${receiver.url}/report`);
    const preview = page.getByRole('list', { name: 'Next occurrences' });
    await expect.poll(() => preview.locator('time').count(), { timeout: 10_000 }).toBe(10);
    const times = await preview.locator('time').evaluateAll((els) => els.map((e) => e.getAttribute('datetime')!));
    for (const t of times) expect(hourIn(t, 'Europe/Paris'), t).toBe(9);
    await shot(page, 'job-form');
    await page.getByRole('button', { name: 'Create job' }).click();
    await page.waitForURL(/\/console\/jobs\/[0-9a-f-]{36}$/);
    cronJobId = page.url().split('/').pop()!;
    await page.getByRole('heading', { name: 'Paris morning report' }).waitFor();
    const job = (await a.api.get(`/v1/jobs/${cronJobId}`)).body;
    expect(job.schedule).toMatchObject({ type: 'cron', expression: '0 9 * * 1-5', timezone: 'Europe/Paris' });
    expect(hourIn(job.nextRunAt, 'Europe/Paris')).toBe(9);
    await expect.poll(() => page.getByRole('list', { name: 'Next occurrences' }).locator('time').count()).toBe(10);
    await shot(page, 'job');
  });

  it('triggers the job: the receiver gets the callback and the run shows its attempt', async () => {
    const page = await newPage();
    await signIn(page, a, `/console/jobs/${cronJobId}`);
    await page.getByRole('button', { name: 'Trigger now' }).click();
    const [cb] = await receiver.waitFor(1);
    expect(cb!.headers['chime-job-id']).toBe(cronJobId);
    // "Run <runId> queued", the id a link to the run.
    await page.locator('.notice', { hasText: 'queued' }).getByRole('link').click();
    await page.waitForURL(/\/console\/runs\/[0-9a-f-]{36}$/);
    cronRunId = page.url().split('/').pop()!;
    await page.getByRole('heading', { name: 'Run' }).waitFor();
    // The page polls until the run is final: then its status reads succeeded and its one attempt answered 200.
    await expect.poll(() => page.locator('dl.facts').textContent(), { timeout: 15_000 }).toMatch(/succeeded/);
    const attempts = page.getByRole('table').last();
    await expect.poll(() => attempts.getByRole('cell', { name: '200', exact: true }).count(), { timeout: 15_000 }).toBe(1);
    await shot(page, 'run');
  });

  it('a failing receiver makes a dead letter; replayed from the console, it succeeds', async () => {
    const made = await a.api.post('/v1/jobs', { name: 'flaky export', schedule: { type: 'delay', delayMs: 0 }, callback: { url: `${receiver.url}/flaky` }, retry: { strategy: 'none' } });
    expect(made.status).toBe(201);
    const deadRunId = await eventually(async () => (await a.api.get('/v1/dead-letters')).body.runs.find((r: { jobId: string }) => r.jobId === made.body.jobId)?.runId as string | undefined, {
      what: 'the dead letter',
    });
    const page = await newPage();
    await signIn(page, a);
    await page.getByRole('link', { name: 'Dead letters' }).first().click();
    await page.getByRole('heading', { name: 'Dead letters' }).waitFor();
    const row = page.getByRole('row').filter({ has: page.getByRole('checkbox', { name: `Select run ${deadRunId}` }) });
    await row.waitFor();
    await shot(page, 'dead-letters');
    healed = true;
    await row.getByRole('button', { name: 'Replay' }).click();
    const replay = await eventually(
      async () => (await a.api.get(`/v1/jobs/${made.body.jobId}/runs`)).body.runs.find((r: { trigger: string; status: string }) => r.trigger === 'replay' && r.status === 'succeeded'),
      { what: 'the replay to succeed' },
    );
    await page.goto(`${chime.url}/console/runs/${replay.runId}`);
    await expect.poll(() => page.locator('dl.facts').textContent()).toMatch(/succeeded/);
    await expect.poll(() => page.getByRole('table').last().getByRole('cell', { name: '200', exact: true }).count()).toBe(1);
    // The dead letter is gone from the list once replayed.
    await page.goto(`${chime.url}/console/dead-letters`);
    await page.getByRole('heading', { name: 'Dead letters' }).waitFor();
    await expect.poll(() => page.getByRole('checkbox', { name: `Select run ${deadRunId}` }).count()).toBe(0);
  });

  it('pauses and resumes a job', async () => {
    const page = await newPage();
    await signIn(page, a, `/console/jobs/${cronJobId}`);
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    expect((await a.api.get(`/v1/jobs/${cronJobId}`)).body).toMatchObject({ status: 'paused', pausedReason: 'manual' });
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    expect((await a.api.get(`/v1/jobs/${cronJobId}`)).body.status).toBe('active');
  });

  it('creates an API key shown once, revokes it, and the key can no longer sign in', async () => {
    const page = await newPage();
    await signIn(page, a);
    await page.getByRole('link', { name: 'Keys and secrets' }).click();
    await page.getByLabel('Key name', { exact: true }).fill('laptop');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.locator('.secret code').first();
    await shown.waitFor();
    const key = (await shown.textContent())!.trim();
    expect(key).toMatch(/^chk_/);
    await shot(page, 'keys');
    const row = page.getByRole('row').filter({ hasText: 'laptop' });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Yes, revoke' }).click();
    await expect.poll(() => page.getByRole('row').filter({ hasText: 'laptop' }).count()).toBe(0);
    const other = await newPage();
    await other.goto(`${chime.url}/console`);
    await other.getByLabel('API key').fill(key);
    await other.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => other.getByRole('alert').textContent()).toMatch(/not accepted/);
  });

  it("shows tenant B none of tenant A's jobs", async () => {
    const page = await newPage();
    await signIn(page, b);
    await page.getByRole('heading', { name: 'Jobs' }).waitFor();
    await expect.poll(() => page.getByText('No jobs yet').count()).toBe(1);
    expect(await page.getByText('Paris morning report').count()).toBe(0);
    await page.goto(`${chime.url}/console/jobs/${cronJobId}`);
    await expect.poll(() => page.getByText(/No such job/).count()).toBeGreaterThan(0);
    expect(await page.getByText('Paris morning report').count()).toBe(0);
  });

  it('renders markup in a job name, metadata and a response as text, running no script', async () => {
    const name = '<img src=x onerror=alert(1)>';
    const made = await a.api.post('/v1/jobs', {
      name,
      schedule: { type: 'cron', expression: '0 0 1 1 *' },
      callback: { url: `${receiver.url}/markup` },
      metadata: { note: '<script>alert(2)</script>', '<b>k</b>': '<iframe src="javascript:alert(3)">' },
    });
    expect(made.status).toBe(201);
    const page = await newPage();
    await signIn(page, a);
    await expect.poll(() => page.getByText(name, { exact: true }).count()).toBeGreaterThan(0);
    await page.getByText(name, { exact: true }).first().click();
    await page.waitForURL(new RegExp(`/console/jobs/${made.body.jobId}$`));
    await expect.poll(() => page.getByText('<script>alert(2)</script>').count()).toBeGreaterThan(0);
    expect(await page.locator('img[src="x"], iframe, main script').count()).toBe(0);
    await shot(page, 'markup');
    // A response excerpt holding markup, on the run page.
    const runId = (await a.api.post(`/v1/jobs/${made.body.jobId}/trigger`)).body.runId;
    await eventually(async () => (await a.api.get(`/v1/runs/${runId}`)).body.status === 'succeeded', { what: 'the run to succeed' });
    await page.goto(`${chime.url}/console/runs/${runId}`);
    await expect.poll(() => page.getByText(RESPONSE_MARKUP).count()).toBeGreaterThan(0);
    expect(await page.locator('main b, main script').count()).toBe(0);
  });

  it('lists jobs 25 a page with their schedule in words, next run and last outcome, filtered by status, name or key, and metadata', async () => {
    const c = await createTestTenant(chime.url, 'Tenant C');
    // 24 jobs made at once (every other one of team ops, the 7th with a key), then 4 that each show something.
    const filler = Array.from({ length: 24 }, (_, i) => ({
      name: `filler ${String(i + 1).padStart(2, '0')}`,
      ...(i === 6 ? { key: 'report-eu' } : {}),
      schedule: YEARLY,
      callback: { url: `${receiver.url}/ok` },
      metadata: { team: i % 2 === 0 ? 'ops' : 'dev' },
    }));
    const batch = await c.api.post('/v1/jobs/batch', { jobs: filler });
    expect(batch.body.results.map((r: { status: number }) => r.status)).toEqual(filler.map(() => 201));
    const backup = await makeJob(c, {
      name: 'nightly backup',
      schedule: { type: 'cron', expression: '0 9 * * *', timezone: 'Europe/Berlin' },
      callback: { url: `${receiver.url}/ok` },
      metadata: { team: 'ops', env: 'prod' },
    });
    const sweep = await makeJob(c, { name: 'paused sweep', schedule: { type: 'interval', everyMs: 1_800_000 }, callback: { url: `${receiver.url}/ok` } });
    expect((await c.api.request('PATCH', `/v1/jobs/${sweep}`, { paused: true })).status).toBe(200);
    const once = { schedule: YEARLY, retry: { strategy: 'none' } };
    const [okJob, failingJob] = [await makeJob(c, { name: 'ok once', ...once, callback: { url: `${receiver.url}/ok` } }), await makeJob(c, { name: 'failing once', ...once, callback: { url: `${receiver.url}/fail` } })];
    const [, failedRun] = await Promise.all([triggered(c, okJob, 'succeeded'), triggered(c, failingJob, 'failed')]);
    const all = [...filler.map((f) => f.name), 'nightly backup', 'paused sweep', 'ok once', 'failing once'].sort();

    const page = await newPage();
    await signIn(page, c);
    await page.getByRole('heading', { name: 'Jobs' }).waitFor();
    // 25 a page, newest first; "Older →" shows the other 3, "← Newer" goes back.
    await expect.poll(() => listedJobs(page)).toHaveLength(25);
    const first = await listedJobs(page);
    expect(first).toEqual(expect.arrayContaining(['nightly backup', 'paused sweep', 'ok once', 'failing once']));
    // Each job's schedule in words, next run and the outcome of its newest finished run.
    const cells = (name: string) => jobRow(page, name).getByRole('cell');
    expect(await cells('nightly backup').nth(2).textContent()).toBe('Every day at 09:00 (Europe/Berlin)');
    expect(await cells('paused sweep').nth(2).textContent()).toMatch(/^Every 30 minutes from /);
    expect(await cells('paused sweep').nth(1).textContent()).toBe('paused');
    expect(await cells('nightly backup').nth(3).locator('time').getAttribute('datetime')).toBe((await c.api.get(`/v1/jobs/${backup}`)).body.nextRunAt);
    await expect.poll(() => cells('ok once').nth(4).textContent()).toBe('succeeded');
    await expect.poll(() => cells('failing once').nth(4).textContent()).toBe('failed');
    await expect.poll(() => cells('nightly backup').nth(4).textContent()).toBe('—');
    // A failure is impossible to miss: the banner above the list leads to it.
    const banner = page.getByRole('status').filter({ hasText: 'There are failed runs waiting' });
    await banner.waitFor();
    await loaded(page);
    await shot(page, 'jobs');
    await page.getByRole('button', { name: 'Older →' }).click();
    await expect.poll(() => listedJobs(page)).toHaveLength(3);
    expect([...first, ...(await listedJobs(page))].sort()).toEqual(all);
    expect(await page.getByRole('button', { name: 'Older →' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: '← Newer' }).click();
    await expect.poll(() => listedJobs(page)).toEqual(first);

    // Status: applied at once, and kept in the URL.
    const status = page.getByLabel('Status', { exact: true });
    await status.selectOption('paused');
    await expect.poll(() => listedJobs(page)).toEqual(['paused sweep']);
    expect(new URL(page.url()).searchParams.get('status')).toBe('paused');
    await status.selectOption('completed');
    await expect.poll(() => page.getByText('No job matches').count()).toBe(1);
    await status.selectOption('');
    await expect.poll(() => listedJobs(page)).toEqual(first);
    // Search: a case-insensitive part of the name, or of the key.
    // (Typing applies after a pause; Enter at once.)
    const search = page.getByLabel('Search', { exact: true });
    await search.fill('BACKUP');
    await expect.poll(() => listedJobs(page)).toEqual(['nightly backup']);
    expect(new URL(page.url()).searchParams.get('q')).toBe('BACKUP');
    await search.fill('report-EU');
    await search.press('Enter');
    await expect.poll(() => listedJobs(page)).toEqual(['filler 07']);
    await search.fill('');
    // Metadata: key=value pairs, all of which must match; a malformed one is explained beside the field.
    const metadata = page.getByLabel('Metadata', { exact: true });
    await metadata.fill('team=ops');
    await metadata.press('Enter');
    await expect.poll(() => listedJobs(page)).toEqual([...filler.filter((f) => f.metadata.team === 'ops').map((f) => f.name), 'nightly backup'].sort());
    await metadata.fill('team=ops, env=prod');
    await metadata.press('Enter');
    await expect.poll(() => listedJobs(page)).toEqual(['nightly backup']);
    await metadata.fill('team');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => page.locator('#jobs-metadata-error').textContent()).toMatch(/is not key=value/);
    await metadata.fill('env=dev');
    await metadata.press('Enter');
    await expect.poll(() => page.getByText('No job matches').count()).toBe(1);
    // The banner's link: the dead letters, with the failed run.
    await banner.getByRole('link', { name: 'see dead letters' }).click();
    await page.getByRole('heading', { name: 'Dead letters' }).waitFor();
    await expect.poll(() => listedRuns(page)).toEqual([failedRun]);
  });

  it("edits a job: the API's field errors beside the fields, a valid change saved; cancel asks first", async () => {
    const jobId = await makeJob(a, { name: 'edit me', schedule: { type: 'cron', expression: '0 8 * * *' }, callback: { url: `${receiver.url}/report` } });
    const page = await newPage();
    await signIn(page, a, `/console/jobs/${jobId}`);
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit job' }).waitFor();
    const url = page.getByLabel('Callback URL', { exact: true });
    expect(await url.inputValue()).toBe(`${receiver.url}/report`);
    // What the API says about each mistake, shown beside its field.
    const urlProblem = await a.api.request('PATCH', `/v1/jobs/${jobId}`, { callback: { url: 'not a url' } });
    expect(urlProblem.status).toBe(400);
    const urlMessage = urlProblem.body.errors.find((e: { path: string }) => e.path === 'callback.url').message as string;
    const cronProblem = await a.api.post('/v1/schedules/preview', { schedule: { type: 'cron', expression: '61 * * * *', timezone: 'UTC' } });
    expect(cronProblem.status).toBe(400);
    const cronMessage = cronProblem.body.errors.find((e: { path: string }) => e.path === 'schedule.expression').message as string;

    await url.fill('not a url');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(() => page.locator('#f-url-error').textContent()).toBe(urlMessage);
    expect(await url.getAttribute('aria-invalid')).toBe('true');
    expect(await url.getAttribute('aria-describedby')).toBe('f-url-error');
    // Preact runs effects (the focus move) after the next paint: the errors can show a frame before it.
    await expect.poll(async () => (await focused(page)).id, { message: 'the first field in error has the focus' }).toBe('f-url');
    await page.getByText('Not saved: see the messages above.').waitFor();
    // A cron expression the API refuses: its message beside the field as it is typed (the live preview asks).
    await page.getByLabel('Cron expression', { exact: true }).fill('61 * * * *');
    await expect.poll(() => page.locator('#f-expr-error').textContent()).toBe(cronMessage);
    await shot(page, 'edit-form');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Not saved: see the messages above.').waitFor();
    await expect.poll(() => page.locator('#f-expr-error').textContent()).toBe(cronMessage);
    expect((await a.api.get(`/v1/jobs/${jobId}`)).body).toMatchObject({ name: 'edit me', schedule: { expression: '0 8 * * *' }, callback: { url: `${receiver.url}/report` } });
    // Corrected, it is saved.
    await url.fill(`${receiver.url}/edited`);
    await expect.poll(() => page.locator('#f-url-error').count()).toBe(0);
    await page.getByLabel('Cron expression', { exact: true }).fill('30 6 * * 1');
    await expect.poll(() => page.locator('#f-expr-error').count()).toBe(0);
    await page.getByLabel('Name', { exact: true }).fill('edited job');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(new RegExp(`/console/jobs/${jobId}$`));
    await page.getByRole('heading', { name: 'edited job' }).waitFor();
    const saved = (await a.api.get(`/v1/jobs/${jobId}`)).body;
    expect(saved).toMatchObject({ name: 'edited job', schedule: { type: 'cron', expression: '30 6 * * 1' }, callback: { url: `${receiver.url}/edited` } });
    expect(hourIn(saved.nextRunAt, 'UTC')).toBe(6);

    // Cancel asks first: the first click only asks, "Keep" keeps it; only the confirmation cancels.
    const jobStatus = async () => (await a.api.get(`/v1/jobs/${jobId}`)).body.status as string;
    await page.getByRole('button', { name: 'Cancel job' }).click();
    const question = page.getByRole('group', { name: /^Cancel this job\?/ });
    await question.waitFor();
    expect(await jobStatus()).toBe('active');
    await question.getByRole('button', { name: 'Keep' }).click();
    await page.getByRole('button', { name: 'Cancel job' }).waitFor();
    expect(await question.count()).toBe(0);
    expect(await jobStatus()).toBe('active');
    await page.getByRole('button', { name: 'Cancel job' }).click();
    await question.getByRole('button', { name: 'Yes, cancel job' }).click();
    await page.getByText('The job is canceled.').waitFor();
    expect(await jobStatus()).toBe('canceled');
    await page.getByText('This job is canceled: it will not run again.').waitFor();
  });

  it("dead letters: replays the selected, all of a job's, and from the job page; dismisses one; the banner goes when none is left", async () => {
    const t = await createTestTenant(chime.url, 'Tenant D');
    const job = (path: string) => makeJob(t, { name: `export ${path}`, schedule: YEARLY, callback: { url: `${receiver.url}${path}` }, retry: { strategy: 'none' } });
    for (const path of ['/dl-x', '/dl-y', '/dl-z']) down.add(path);
    const [x, y, z] = [await job('/dl-x'), await job('/dl-y'), await job('/dl-z')];
    const runs = await Promise.all([x, x, x, y, y, z].map((jobId) => triggered(t, jobId, 'failed')));
    const [xRuns, yRuns, zRun] = [runs.slice(0, 3).sort(), runs.slice(3, 5).sort(), runs[5]!];
    for (const path of ['/dl-x', '/dl-y', '/dl-z']) down.delete(path);
    const deadLetters = async () => ((await t.api.get('/v1/dead-letters')).body.runs as { runId: string }[]).map((r) => r.runId).sort();
    /** Waits until `jobId` has `n` replays that succeeded. */
    const replaysSucceeded = (jobId: string, n: number) =>
      eventually(
        async () => ((await t.api.get(`/v1/jobs/${jobId}/runs`)).body.runs as { trigger: string; status: string }[]).filter((r) => r.trigger === 'replay' && r.status === 'succeeded').length === n,
        { what: `${n} replays of ${jobId} to succeed` },
      );

    const page = await newPage();
    await signIn(page, t, '/console/dead-letters');
    await expect.poll(() => listedRuns(page)).toEqual([...xRuns, ...yRuns, zRun].sort());
    await page.getByText('6 dead letters.').waitFor();
    // Two of x's selected, then replayed: only those two.
    const [x1, x2, x3] = xRuns as [string, string, string];
    await page.getByRole('checkbox', { name: `Select run ${x1}` }).check();
    await page.getByRole('checkbox', { name: `Select run ${x2}` }).check();
    await page.getByText('2 selected').waitFor();
    await page.getByRole('button', { name: 'Replay selected' }).click();
    await page.getByRole('status').filter({ hasText: 'Replayed 2; 0 left' }).waitFor();
    await expect.poll(() => listedRuns(page)).toEqual([x3, ...yRuns, zRun].sort());
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
    await shot(page, 'dead-letters-after');
    // All of y's, from its own list (the bulk replay by jobId).
    await page.goto(`${chime.url}/console/dead-letters?jobId=${y}`);
    await page.getByText('2 dead letters of this job.').waitFor();
    await expect.poll(() => listedRuns(page)).toEqual(yRuns);
    await page.getByRole('button', { name: "Replay all of this job's" }).click();
    await page.getByRole('status').filter({ hasText: 'Replayed 2; 0 left' }).waitFor();
    await page.getByText('No dead letters').waitFor();
    await replaysSucceeded(y, 2);
    expect(await deadLetters()).toEqual([zRun]);
    // z's from its job page.
    await page.goto(`${chime.url}/console/jobs/${z}`);
    await page.getByRole('button', { name: 'Replay failed runs' }).click();
    await page.getByText('Replayed 1 failed run; 0 remaining.').waitFor();
    await replaysSucceeded(z, 1);
    expect(await deadLetters()).toEqual([]);
    // No dead letter left: the job list has no banner.
    const checked = page.waitForResponse((r) => new URL(r.url()).pathname === '/v1/dead-letters');
    await page.goto(`${chime.url}/console/jobs`);
    await (await checked).finished();
    await loaded(page);
    await page.evaluate('new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))');
    expect(await page.getByText('There are failed runs waiting').count()).toBe(0);
  });

  it('rotates the signing secret: shown once with the overlap end, copied to the clipboard, and it signs the callbacks', async () => {
    const s = await createTestTenant(chime.url, 'Tenant S');
    const jobId = await makeJob(s, { name: 'signed', schedule: YEARLY, callback: { url: `${receiver.url}/signed` } });
    const page = await newPage();
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: chime.url });
    await signIn(page, s, '/console/keys');
    await page.getByRole('heading', { name: 'Signing secret' }).waitFor();
    await page.getByRole('button', { name: 'Rotate signing secret' }).click();
    expect(await page.getByText(/whsec_/).count(), 'the first click only asks').toBe(0);
    const rotatedAt = Date.now();
    await page.getByRole('button', { name: 'Yes, rotate' }).click();
    const box = page.locator('.secret').filter({ hasText: 'New signing secret (shown once)' });
    const secret = (await box.locator('code').textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(s.signingSecret);
    const until = await page.getByText('The previous secret keeps signing until').locator('time').getAttribute('datetime');
    expect(Date.parse(until!) - rotatedAt).toBeGreaterThan(DAY_MS - 60_000);
    expect(Date.parse(until!) - rotatedAt).toBeLessThan(DAY_MS + 60_000);
    await box.getByRole('button', { name: 'Copy' }).click();
    await box.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
    await shot(page, 'signing-secret');
    // The secret shown is the one that signs now; the previous one still does, alongside.
    const runId = await triggered(s, jobId, 'succeeded');
    const callback = receiver.received.find((r) => r.headers['chime-run-id'] === runId)!;
    const headers = callback.headers as Record<string, string>;
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(() => new Webhook(secret).verify(callback.body, headers)).not.toThrow();
    expect(() => new Webhook(s.signingSecret).verify(callback.body, headers)).not.toThrow();
    // Shown once: not after a reload.
    await page.reload();
    await page.getByRole('heading', { name: 'Signing secret' }).waitFor();
    await loaded(page);
    expect(await page.getByText(/whsec_/).count()).toBe(0);
  });

  it('creates once, delay, interval and dates jobs through the form, with their retry policy, relevancy window and delivery mode', async () => {
    const page = await newPage();
    await signIn(page, a);
    const at = await localDateTime(page, 2, 9, 15);
    const start = await localDateTime(page, 1, 9);
    const end = await localDateTime(page, 1, 11);
    const day = await localDateTime(page, 3, 18, 30);
    const kinds: {
      type: string;
      fill: () => Promise<void>;
      schedule: Record<string, unknown>;
      form: Record<string, string>;
      expected: Record<string, unknown>;
      occurrences?: string[];
    }[] = [
      {
        type: 'once',
        fill: () => page.getByLabel('At', { exact: true }).fill(at.text),
        schedule: { type: 'once', at: at.iso },
        occurrences: [at.iso],
        form: { 'Retry strategy': 'fixed', 'Max attempts': '2', 'Initial delay (ms)': '5000', 'Relevancy window (seconds)': '90', 'Delivery mode': 'at-most-once' },
        expected: { retry: { strategy: 'fixed', maxAttempts: 2, initialDelayMs: 5000 }, relevancyWindowMs: 90_000, deliveryMode: 'at-most-once' },
      },
      {
        type: 'delay',
        fill: () => page.getByLabel('Delay (seconds)', { exact: true }).fill('3600'),
        schedule: { type: 'delay', delayMs: 3_600_000 },
        form: { 'Retry strategy': 'none', 'Delivery mode': 'at-least-once' },
        expected: { retry: { strategy: 'none', maxAttempts: 1 }, relevancyWindowMs: null, deliveryMode: 'at-least-once' },
      },
      {
        type: 'interval',
        fill: async () => {
          await page.getByLabel('Every (seconds)', { exact: true }).fill('1800');
          await page.getByLabel('Start at', { exact: true }).fill(start.text);
          await page.getByLabel('End at', { exact: true }).fill(end.text);
        },
        schedule: { type: 'interval', everyMs: 1_800_000, startAt: start.iso, endAt: end.iso },
        occurrences: [0, 1, 2, 3, 4].map((i) => new Date(Date.parse(start.iso) + i * 1_800_000).toISOString()),
        form: { 'Retry strategy': 'linear', 'Max attempts': '3', 'Initial delay (ms)': '2000', 'Max delay (ms)': '60000', 'Relevancy window (seconds)': '600', 'Delivery mode': 'at-most-once' },
        expected: { retry: { strategy: 'linear', maxAttempts: 3, initialDelayMs: 2000, maxDelayMs: 60_000 }, relevancyWindowMs: 600_000, deliveryMode: 'at-most-once' },
      },
      {
        type: 'dates',
        fill: () => page.getByLabel('Dates (one per line)', { exact: true }).fill(`${day.text}\n2030-06-01T12:00:00+02:00`),
        schedule: { type: 'dates', dates: [day.iso, '2030-06-01T10:00:00.000Z'] },
        occurrences: [day.iso, '2030-06-01T10:00:00.000Z'],
        form: { 'Retry strategy': 'exponential', 'Max attempts': '7', 'Initial delay (ms)': '500', 'Max delay (ms)': '120000', 'Relevancy window (seconds)': '30' },
        expected: { retry: { strategy: 'exponential', maxAttempts: 7, initialDelayMs: 500, maxDelayMs: 120_000, multiplier: 2 }, relevancyWindowMs: 30_000, deliveryMode: 'at-least-once' },
      },
    ];
    for (const kind of kinds) {
      await page.goto(`${chime.url}/console/jobs/new`);
      await page.getByRole('heading', { name: 'New job' }).waitFor();
      await page.getByLabel('Name', { exact: true }).fill(`form ${kind.type}`);
      await page.getByLabel('Schedule type', { exact: true }).selectOption(kind.type);
      await kind.fill();
      await page.getByLabel('Callback URL', { exact: true }).fill(`${receiver.url}/form-${kind.type}`);
      for (const [label, value] of Object.entries(kind.form)) {
        const control = page.getByLabel(label, { exact: true });
        if ((await control.evaluate((el) => el.tagName)) === 'SELECT') await control.selectOption(value);
        else await control.fill(value);
      }
      // The live preview: the schedule's next occurrences (a delay's one, an hour from now).
      const preview = page.getByRole('list', { name: 'Next occurrences' }).locator('time');
      const times = () => preview.evaluateAll((els) => els.map((e) => e.getAttribute('datetime')!));
      if (kind.occurrences) await expect.poll(times).toEqual(kind.occurrences);
      else {
        await expect.poll(() => preview.count()).toBe(1);
        expect(Math.abs(Date.parse((await times())[0]!) - Date.now() - 3_600_000)).toBeLessThan(120_000);
      }
      if (kind.type === 'interval') await shot(page, 'job-form-interval');
      await page.getByRole('button', { name: 'Create job' }).click();
      await page.waitForURL(/\/console\/jobs\/[0-9a-f-]{36}$/);
      await page.getByRole('heading', { name: `form ${kind.type}` }).waitFor();
      const job = (await a.api.get(`/v1/jobs/${page.url().split('/').pop()}`)).body;
      expect(job.schedule, kind.type).toMatchObject(kind.schedule);
      expect(job, kind.type).toMatchObject({ status: 'active', callback: { url: `${receiver.url}/form-${kind.type}` }, ...kind.expected });
    }
  });

  /** Tenant R: "feed ok" (three runs succeeded) and "feed failing" (one run failed, then paused); memoized. */
  let feed: Promise<{ r: TestTenant; ok: string; failing: string; okRuns: string[]; failedRun: string }> | undefined;
  const feedTenant = () =>
    (feed ??= (async () => {
      const r = await createTestTenant(chime.url, 'Tenant R');
      const ok = await makeJob(r, { name: 'feed ok', schedule: YEARLY, callback: { url: `${receiver.url}/ok` } });
      const failing = await makeJob(r, { name: 'feed failing', schedule: YEARLY, callback: { url: `${receiver.url}/fail` }, retry: { strategy: 'none' } });
      const [failedRun, ...okRuns] = await Promise.all([triggered(r, failing, 'failed'), ...[1, 2, 3].map(() => triggered(r, ok, 'succeeded'))]);
      okRuns.sort();
      expect((await r.api.request('PATCH', `/v1/jobs/${failing}`, { paused: true })).status).toBe(200);
      return { r, ok, failing, okRuns, failedRun };
    })());

  it('filters the runs feed by status, job and a span of scheduled times', async () => {
    const { r, ok, okRuns, failedRun } = await feedTenant();
    /** The runs the API lists for `query`, sorted. */
    const apiRuns = async (query: string) => ((await r.api.get(`/v1/runs?${query}`)).body.runs as { runId: string }[]).map((x) => x.runId).sort();
    const page = await newPage();
    await signIn(page, r, '/console/runs');
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    const everything = await apiRuns('');
    expect(everything).toEqual(expect.arrayContaining([...okRuns, failedRun]));
    await expect.poll(() => listedRuns(page)).toEqual(everything);
    await loaded(page);
    await shot(page, 'runs');
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
    const page = await newPage();
    await signIn(page, r, '/console/usage');
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
    const totals = await days.evaluateAll((rows) => rows.reduce((sum: number[], row) => sum.map((n: number, i: number) => n + Number(row.querySelectorAll('td')[i]!.textContent)), [0, 0, 0, 0, 0]));
    expect(totals).toEqual([3, 1, 0, 0, 4]);
  });

  it('refuses an expired key with a clear message, and signs out a tab whose key is revoked, saying why', async () => {
    const short = await a.api.post('/v1/api-keys', { name: 'short-lived', expiresAt: new Date(Date.now() + 2_000).toISOString() });
    expect(short.status).toBe(201);
    const shortApi = apiClient(chime.url, short.body.key);
    await eventually(async () => (await shortApi.get('/v1/tenant')).status === 401, { what: 'the key to expire' });
    const page = await newPage();
    await page.goto(`${chime.url}/console`);
    await page.getByLabel('API key').fill(short.body.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('This API key was not accepted: it is wrong, revoked or expired.');
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    // A key revoked while a tab uses it: the next request signs the tab out with the reason.
    const other = await a.api.post('/v1/api-keys', { name: 'revoked while signed in' });
    // (On a page that is done loading: a request of the page still in flight would sign it out first.)
    await signIn(page, { ...a, apiKey: other.body.key }, '/console/keys');
    await loaded(page);
    expect((await a.api.request('DELETE', `/v1/api-keys/${other.body.keyId}`)).status).toBe(204);
    await page.getByRole('link', { name: 'Runs', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('Signed out: this API key is no longer accepted (revoked or expired).');
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate('Object.keys(sessionStorage).length')).toBe(0);
  });

  it('/docs: Swagger UI lists every operation, from this origin only, with nothing refused by the CSP', async () => {
    const page = await newPage();
    const res = await page.goto(`${chime.url}/docs`);
    expect(res?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    const spec = (await apiClient(chime.url, null).get('/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const methods = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);
    const operations = Object.values(spec.paths).reduce((n, item) => n + Object.keys(item).filter((m) => methods.has(m)).length, 0);
    expect(operations).toBeGreaterThan(20);
    await expect.poll(() => page.locator('.opblock').count(), { timeout: 15_000 }).toBe(operations);
    await page.locator('.opblock-summary-path', { hasText: /^\/v1\/jobs$/ }).first().waitFor();
    await page.locator('.opblock-summary-path', { hasText: /^\/v1\/usage$/ }).first().waitFor();
    const log = logOf(page);
    expect(log.requests).toContain(`${chime.url}/openapi.json`);
    expect(log.errors.filter((e) => /Content Security Policy|CSP violation/i.test(e))).toEqual([]);
    await shot(page, 'docs', { fullPage: false });
  });

  it('works by keyboard: Tab reaches the sign-in, the navigation and the main buttons; Enter acts', async () => {
    const page = await newPage();
    await page.goto(`${chime.url}/console`);
    // Signed in by keyboard alone.
    await tabTo(page, (f) => f.id === 'api-key');
    await page.keyboard.type(a.apiKey);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    // From the top of the job list, Tab goes through every link of the navigation, sign-out and "New job".
    await page.goto(`${chime.url}/console/jobs`);
    await loaded(page);
    const path = await tabTo(page, (f) => f.text === 'New job', 20);
    const texts = path.map((f) => `${f.tag} ${f.text}`);
    for (const label of ['Jobs', 'Runs', 'Dead letters', 'Usage', 'Keys and secrets']) expect(texts).toContain(`A ${label}`);
    expect(texts).toContain('BUTTON Sign out');
    // Enter follows a link: "New job", and a link of the navigation.
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/jobs\/new$/);
    await page.getByRole('heading', { name: 'New job' }).waitFor();
    // Enter on "Create job" with nothing filled in submits: the form says what is missing, focus on the first field.
    await tabTo(page, (f) => f.tag === 'BUTTON' && f.text === 'Create job', 80);
    await page.keyboard.press('Enter');
    await page.getByText('Not saved: see the messages above.').waitFor();
    await expect.poll(() => page.locator('#f-expr-error').textContent()).toMatch(/enter a cron expression/);
    await expect.poll(async () => (await focused(page)).id).toBe('f-expr');
    await page.goto(`${chime.url}/console/jobs`);
    await loaded(page);
    await tabTo(page, (f) => f.tag === 'A' && f.text === 'Runs', 20);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/runs$/);
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
  });

  /** Waits until `page` shows what it loaded: a heading, and nothing "Loading…" or busy any more. */
  async function loaded(page: Page): Promise<void> {
    await page.getByRole('heading').first().waitFor();
    const busy = page.getByText('Loading…').or(page.locator('[aria-busy="true"], [aria-label="loading"]'));
    await expect.poll(() => busy.count(), { timeout: 15_000 }).toBe(0);
  }

  /** The paths of every page of the console, for A's cron job and its run. */
  const consolePaths = () => [
    '/console/jobs',
    `/console/jobs/${cronJobId}`,
    `/console/jobs/${cronJobId}/edit`,
    '/console/jobs/new',
    '/console/runs',
    `/console/runs/${cronRunId}`,
    '/console/dead-letters',
    '/console/keys',
    '/console/usage',
  ];

  it('fits 1280×800 and a 390×844 phone: no page scrolls sideways', async () => {
    const page = await newPage();
    /** Checks the page as laid out at each size, the desktop's last. */
    const fits = async (where: string) => {
      for (const size of [PHONE, DESKTOP]) {
        await page.setViewportSize(size);
        expect(await pageWidth(page), `${where} at ${size.width}×${size.height}`).toBeLessThanOrEqual(size.width);
      }
    };
    await page.goto(`${chime.url}/console`);
    await page.getByLabel('API key').waitFor();
    await fits('sign-in');
    await signIn(page, a);
    for (const path of consolePaths()) {
      await page.goto(`${chime.url}${path}`);
      await loaded(page);
      await fits(path);
      if (path === `/console/jobs/${cronJobId}`) {
        await page.setViewportSize(PHONE);
        await shot(page, 'phone-job');
        await page.setViewportSize(DESKTOP);
      }
    }
  });

  it('draws the usage of the last 14 days', async () => {
    const page = await newPage();
    await signIn(page, a, '/console/usage');
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    await expect.poll(() => page.locator('canvas').count()).toBeGreaterThan(0);
    const table = page.getByRole('table', { name: 'Runs per day' });
    await expect.poll(() => table.getByRole('row').count()).toBe(15);
    await shot(page, 'usage');
  });

  it('saved a screenshot of every page', () => {
    expect([...shots]).toEqual(expect.arrayContaining(PAGES_SHOWN));
  });
});
