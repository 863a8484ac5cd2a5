/**
 * The tenant console in a real Chromium (playwright-core) against the real service (`dist/node/cli.mjs`, as
 * `npm start` runs it) on each database target, with a real receiver on 127.0.0.1. One test per flow: sign-in refused
 * then accepted; a cron job in a time zone made through the form with its preview; the callback received and the run
 * shown with its attempts; a dead letter replayed from the console; pause and resume; a key created, revoked and
 * then refused; tenant B seeing none of A's jobs; markup in a job's name and metadata shown as text with no script
 * run; and on every page the CSP header, same-origin requests only, and no CSP refusal or page error. Screenshots of
 * each page go to test-results/console/. Without a Chromium on the machine the file skips, saying so (CI installs one).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { chromePath, launchBrowser, openPage, screenshot, type PageLog } from '../support/browser.ts';
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

/** The hour of `iso` on the wall clock of `timeZone`. */
const hourIn = (iso: string, timeZone: string) => Number(new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', hourCycle: 'h23' }).format(new Date(iso)));

describe.runIf(BROWSER).each(DATABASE_TARGETS)('the console in Chromium on $kind', (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let receiver: Receiver;
  let browser: Browser;
  let a: TestTenant;
  let b: TestTenant;
  /** The receiver fails `/flaky` until healed. */
  let healed = false;
  const open: { context: BrowserContext; log: PageLog }[] = [];

  beforeAll(async () => {
    db = await freshDatabase(target);
    receiver = await startReceiver((r) => {
      if (r.path === '/flaky' && !healed) return { status: 500, body: 'flaky is down' };
      if (r.path === '/markup') return { status: 200, body: RESPONSE_MARKUP };
      return { status: 200, body: 'ok' };
    });
    chime = await startChime({ ...db.env, CHIME_RATE_LIMIT_PER_SECOND: '0' });
    a = await createTestTenant(chime.url, 'Tenant A');
    b = await createTestTenant(chime.url, 'Tenant B');
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
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

  const shot = (page: Page, name: string) => screenshot(page, `${target.kind}-${name}`);

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

  it('fits a 390×844 phone: no page scrolls sideways', async () => {
    const page = await newPage({ width: 390, height: 844 });
    await signIn(page, a);
    for (const path of ['/console/jobs', `/console/jobs/${cronJobId}`, '/console/runs', '/console/dead-letters', '/console/keys', '/console/usage', '/console/jobs/new']) {
      await page.goto(`${chime.url}${path}`);
      await page.getByRole('heading').first().waitFor();
      const width = await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
      expect(width, path).toBeLessThanOrEqual(390);
    }
    await shot(page, 'phone-job');
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
});
