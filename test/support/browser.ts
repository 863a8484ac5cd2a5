/**
 * A real Chromium for the console's browser tests, driven by playwright-core. The browser is the machine's:
 * `CHROME_PATH`, else Debian's `/usr/bin/chromium` (`apt-get install chromium`; `.ci/run` installs it), else none,
 * and the browser tests skip saying so. Each page records what a test must be able to see: every request's URL,
 * dialogs (an injected `alert` would show as one), uncaught page errors and console errors (CSP refusals among them:
 * Chromium logs them, and every `securitypolicyviolation` event is reported as a console error too).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/** The Chromium executable to use, or null when the machine has none. */
export function chromePath(): string | null {
  const fromEnv = process.env.CHROME_PATH;
  if (fromEnv) return existsSync(fromEnv) ? fromEnv : null;
  return CANDIDATES.find((p) => existsSync(p)) ?? null;
}

/**
 * Flags for a headless Chromium on a machine without a network beyond loopback: no background traffic (its
 * refused connections would otherwise fill the log) and no sandbox (CI runs as root).
 */
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Launches Chromium headless. @throws when no browser is found */
export async function launchBrowser(): Promise<Browser> {
  const executablePath = chromePath();
  if (!executablePath) throw new Error('no Chromium: set CHROME_PATH or apt-get install chromium');
  return chromium.launch({ executablePath, headless: true, args: FLAGS });
}

/**
 * Runs in every document before its own scripts (injected by the browser, so the page's CSP does not apply to it): a
 * violation of the page's policy becomes a console error, whether or not Chromium logs one itself.
 */
const REPORT_CSP_VIOLATIONS = `document.addEventListener('securitypolicyviolation', (e) => console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline')));`;

/** How long a page's actions and waits may take (less than a test's 30 s, so that a failing wait says what it waited for). */
const ACTION_TIMEOUT_MS = 10_000;

/** What a page did, as the tests check it. */
export type PageLog = { requests: string[]; dialogs: string[]; errors: string[] };

/**
 * A new context (its own sessionStorage) and page at `viewport`, recording into the returned log.
 */
export async function openPage(
  browser: Browser,
  viewport = { width: 1280, height: 800 },
): Promise<{ context: BrowserContext; page: Page; log: PageLog }> {
  const context = await browser.newContext({ viewport });
  // An element that never shows fails its wait with Playwright's message (what it waited for) before the test times out.
  context.setDefaultTimeout(ACTION_TIMEOUT_MS);
  await context.addInitScript({ content: REPORT_CSP_VIOLATIONS });
  const page = await context.newPage();
  const log: PageLog = { requests: [], dialogs: [], errors: [] };
  page.on('request', (r) => log.requests.push(r.url()));
  page.on('dialog', (d) => {
    log.dialogs.push(`${d.type()}: ${d.message()}`);
    void d.dismiss();
  });
  page.on('pageerror', (e) => log.errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') log.errors.push(`console: ${m.text()}`);
  });
  return { context, page, log };
}

/** Where screenshots go (kept with the test output; not committed). */
export const SCREENSHOT_DIR = 'test-results/console';

/** Saves a screenshot of `page` as `<name>.png` under SCREENSHOT_DIR: the whole page, or with `fullPage: false` the viewport. */
export async function screenshot(page: Page, name: string, { fullPage = true }: { fullPage?: boolean } = {}): Promise<string> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage });
  return path;
}

/** The page's width as laid out (`scrollWidth` of the root): more than the viewport's width means it scrolls sideways. */
export function pageWidth(page: Page): Promise<number> {
  return page.evaluate(
    () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth,
  );
}

/** The element that has the keyboard focus: its tag, id and accessible text (its text, else its aria-label). */
export type Focused = { tag: string; id: string; text: string };

/** What has the focus in `page` (tag 'BODY' when nothing does). */
export function focused(page: Page): Promise<Focused> {
  return page.evaluate(() => {
    type El = { tagName: string; id: string; textContent: string | null; getAttribute(n: string): string | null };
    const el = (globalThis as unknown as { document: { activeElement: El | null } }).document.activeElement;
    return { tag: el?.tagName ?? 'BODY', id: el?.id ?? '', text: (el?.textContent?.trim() || el?.getAttribute('aria-label')) ?? '' };
  });
}

/**
 * Presses Tab until the focus is on an element `wanted` accepts, as a keyboard user would.
 * @returns every element the focus passed through, the wanted one last
 * @throws when `max` presses do not reach one
 */
export async function tabTo(page: Page, wanted: (f: Focused) => boolean, max = 80): Promise<Focused[]> {
  const path: Focused[] = [];
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const f = await focused(page);
    path.push(f);
    if (wanted(f)) return path;
  }
  throw new Error(
    `Tab did not reach the element within ${max} presses; it went through ${path.map((f) => `${f.tag}#${f.id} "${f.text.slice(0, 30)}"`).join(', ')}`,
  );
}

/**
 * A wall-clock time in the browser's time zone, `days` from today at `hh:mm`: as a `datetime-local` value (what a user
 * types) and as the UTC instant the console must send for it.
 */
export function localDateTime(page: Page, days: number, hh: number, mm = 0): Promise<{ text: string; iso: string }> {
  return page.evaluate(
    ([days, hh, mm]) => {
      const d = new Date();
      d.setDate(d.getDate() + days);
      d.setHours(hh, mm, 0, 0);
      const p = (n: number) => String(n).padStart(2, '0');
      return { text: `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(hh)}:${p(mm)}`, iso: d.toISOString() };
    },
    [days, hh, mm] as const,
  );
}
