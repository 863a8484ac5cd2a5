/**
 * What the console's browser tests share (one test file per area of the console): the harness of a file (a fresh
 * database of one target, the real service as `npm start` runs it, a real receiver on 127.0.0.1, two tenants and a
 * Chromium), pages opened in the time zone of a demanding user (America/Los_Angeles, en-US), the checks every page
 * passes (same-origin requests only, no CSP refusal, no page error, no dialog), and the helpers that read the pages.
 * Without a Chromium on the machine the files skip, saying so (CI installs one).
 */

import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, vi } from 'vitest';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { chromePath, launchBrowser, openPage, type PageLog, screenshot } from '../support/browser.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { type DatabaseTarget, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

export { DATABASE_TARGETS } from '../support/databases.ts';

/** The Chromium the tests drive, or null (the files skip). */
export const BROWSER = chromePath();
// CI sets CHIME_REQUIRE_BROWSER (.ci/run installs Chromium): there a missing browser is a failure, not a skip.
if (!BROWSER && process.env.CHIME_REQUIRE_BROWSER) throw new Error('CHIME_REQUIRE_BROWSER is set but no Chromium was found');
if (!BROWSER) console.warn('test/console: skipped, no Chromium on this machine (set CHROME_PATH or apt-get install chromium)');

/** The zone the browser runs in unless a test says otherwise: the demanding user of issue 29 was in Los Angeles. */
export const USER_ZONE = 'America/Los_Angeles';
/** What the receiver answers to `/markup`: the run page must show it as text. */
export const RESPONSE_MARKUP = '<script>alert(4)</script><b>bold</b>';
/** A schedule that fires only on 1 January: jobs that must exist but not run during the tests. */
export const YEARLY = { type: 'cron', expression: '0 0 1 1 *' } as const;
export const DAY_MS = 86_400_000;
/** The two sizes every page must fit without scrolling sideways (issue 18). */
export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };
/** Final run states, as the API names them. */
const FINAL = ['succeeded', 'failed', 'expired', 'canceled', 'skipped'];

/** The hour of `iso` on the wall clock of `timeZone`. */
export const hourIn = (iso: string, timeZone: string) =>
  Number(new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', hourCycle: 'h23' }).format(new Date(iso)));

/** One file's service, receiver, tenants and browser, and what its tests do with them. */
export type Harness = {
  readonly url: string;
  readonly target: DatabaseTarget;
  readonly receiver: Receiver;
  /** Tenants A and B, made for the file. */
  readonly a: TestTenant;
  readonly b: TestTenant;
  /** The receiver fails `/flaky` until healed, `/fail` always, and any path in `down` while it is there. */
  heal(): void;
  readonly down: Set<string>;
  /** A fresh browser context (its own sessionStorage) on the console, in `timezoneId` (USER_ZONE by default). */
  newPage(opts?: { viewport?: { width: number; height: number }; timezoneId?: string }): Promise<Page>;
  /** What `page` (from newPage) requested and logged so far. */
  logOf(page: Page): PageLog;
  /** Signs `page` in with `tenant`'s key at `path`, checking the page's CSP on the way. */
  signIn(page: Page, tenant: TestTenant, path?: string): Promise<void>;
  /** A screenshot of `page` as test-results/console/<target>-<name>.png. */
  shot(page: Page, name: string, opts?: { fullPage?: boolean }): Promise<string>;
  /** The screenshots this file saved (names without the target). */
  readonly shots: ReadonlySet<string>;
  /** A new tenant of the file's service. */
  tenant(name: string): Promise<TestTenant>;
  /** Creates a job through the API. @returns its id */
  makeJob(t: TestTenant, body: Record<string, unknown>): Promise<string>;
  /** Triggers a job through the API, waits until the run is final and expects `status`. @returns the run id */
  triggered(t: TestTenant, jobId: string, status: 'succeeded' | 'failed'): Promise<string>;
  /** Waits until run `runId` of `t` is final. @returns its status */
  finalStatus(t: TestTenant, runId: string): Promise<string>;
};

/**
 * Sets up a file's harness on `target` (call it inside the file's `describe`): the service, receiver, tenants and
 * browser before its tests, and after each test the checks every page must pass; everything stopped after.
 */
export function useHarness(target: DatabaseTarget): Harness {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let receiver: Receiver;
  let browser: Browser;
  let a: TestTenant;
  let b: TestTenant;
  let healed = false;
  const down = new Set<string>();
  const open: { context: BrowserContext; page: Page; log: PageLog }[] = [];
  const shots = new Set<string>();

  beforeAll(async () => {
    // What a page shows after a request may take seconds on a busy machine: polls wait up to 10 s.
    vi.setConfig({ expect: { poll: { timeout: 10_000 } } });
    db = await freshDatabase(target);
    receiver = await startReceiver((r) => {
      if (r.path === '/flaky' && !healed) return { status: 500, body: 'flaky is down' };
      if (r.path === '/fail' || down.has(r.path)) return { status: 500, body: 'down' };
      if (r.path === '/markup') return { status: 200, body: RESPONSE_MARKUP };
      // An async job's receiver: it acknowledges and reports later (API.md "Long-running jobs").
      if (r.path === '/accepted') return { status: 202, headers: { 'x-export-id': 'exp-7' }, body: 'accepted' };
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
  // Every page of every flow: only this origin was asked for anything, nothing was refused by the CSP, no script
  // error and no dialog.
  afterEach(async () => {
    for (const { context, log } of open.splice(0)) {
      const foreign = log.requests.filter((u) => !u.startsWith(`${chime.url}/`));
      expect(foreign, 'requests to another origin').toEqual([]);
      // A 401 or 404 the app handles still logs "Failed to load resource"; anything else is a real error.
      expect(
        log.errors.filter((e) => !e.includes('Failed to load resource')),
        'page errors',
      ).toEqual([]);
      expect(log.dialogs, 'dialogs').toEqual([]);
      await context.close();
    }
  });

  const h: Harness = {
    get url() {
      return chime.url;
    },
    target,
    get receiver() {
      return receiver;
    },
    get a() {
      return a;
    },
    get b() {
      return b;
    },
    heal: () => void (healed = true),
    down,
    async newPage({ viewport, timezoneId = USER_ZONE } = {}) {
      const p = await openPage(browser, viewport);
      // The zone of the page's clock (Chromium's own emulation, as Playwright's `timezoneId` sets it), before it loads.
      const cdp = await p.context.newCDPSession(p.page);
      await cdp.send('Emulation.setTimezoneOverride', { timezoneId });
      open.push(p);
      return p.page;
    },
    logOf: (page) => open.find((o) => o.page === page)!.log,
    async signIn(page, tenant, path = '/console') {
      const res = await page.goto(`${chime.url}${path}`);
      expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
      await page.getByLabel('API key').fill(tenant.apiKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
    },
    shot(page, name, opts) {
      shots.add(name);
      return screenshot(page, `${target.kind}-${name}`, opts);
    },
    shots,
    tenant: (name) => createTestTenant(chime.url, name),
    async makeJob(t, body) {
      const r = await t.api.post('/v1/jobs', body);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body.jobId as string;
    },
    async finalStatus(t, runId) {
      return eventually(
        async () => {
          const s = (await t.api.get(`/v1/runs/${runId}`)).body.status as string;
          return FINAL.includes(s) && s;
        },
        { what: `run ${runId} to finish` },
      );
    },
    async triggered(t, jobId, status) {
      const r = await t.api.post(`/v1/jobs/${jobId}/trigger`);
      expect(r.status).toBe(202);
      const id = r.body.runId as string;
      expect(await h.finalStatus(t, id), `run ${id}`).toBe(status);
      return id;
    },
  };
  return h;
}

/** The run ids a page's runs or dead letters table lists (from the links of their rows), sorted. */
export const listedRuns = (page: Page) =>
  page.locator('main table tbody tr td.when a').evaluateAll((links) => links.map((l) => l.getAttribute('href')!.split('/').pop()!).sort());
/** The names of the jobs the job list shows, sorted. */
export const listedJobs = (page: Page) =>
  page
    .locator('table.jobs-table tbody tr td:first-child a')
    .allTextContents()
    .then((names) => names.sort());
/** The row of the job named `name` in the job list. */
export const jobRow = (page: Page, name: string) =>
  page.locator('table.jobs-table tbody tr').filter({ has: page.getByRole('link', { name, exact: true }) });
/** The text of a card of the usage page. */
export const card = (page: Page, label: string) =>
  page
    .locator('.card')
    .filter({ has: page.locator('.label', { hasText: new RegExp(`^${label}$`) }) })
    .locator('.value')
    .textContent();
/** The text of the facts list's entry `term` (a job's or a run's page). */
export const fact = (page: Page, term: string | RegExp) =>
  page.locator('dl.facts dt').filter({ hasText: term }).first().locator('xpath=following-sibling::dd[1]').textContent();

/** Waits until `page` shows what it loaded: a heading, and nothing "Loading…" or busy any more. */
export async function loaded(page: Page): Promise<void> {
  await page.getByRole('heading').first().waitFor();
  const busy = page.getByText('Loading…').or(page.locator('[aria-busy="true"], [aria-label="loading"]'));
  await expect.poll(() => busy.count(), { timeout: 15_000 }).toBe(0);
}

/**
 * The instants of the column a table says it is sorted by (`aria-sort`), top to bottom, and that column's header.
 * @throws when no column of the table is marked as sorted
 */
export async function sortedColumn(
  page: Page,
  table = page.locator('main table').first(),
): Promise<{ header: string; sort: string; times: number[] }> {
  return table.evaluate((t) => {
    const headers = [...t.querySelectorAll('thead th')];
    const i = headers.findIndex((th) => th.getAttribute('aria-sort'));
    if (i < 0) throw new Error('no column is marked with aria-sort');
    const rows = [...t.querySelectorAll('tbody tr')];
    const times = rows.map((r) => Date.parse(r.children[i]!.querySelector('time')!.getAttribute('datetime')!));
    return { header: headers[i]!.textContent!.trim(), sort: headers[i]!.getAttribute('aria-sort')!, times };
  });
}

/** Whether `times` never goes up (newest first). */
export const newestFirst = (times: readonly number[]) => times.every((t, i) => i === 0 || t <= times[i - 1]!);
