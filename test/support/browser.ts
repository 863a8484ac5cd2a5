/**
 * A real Chromium for the console's browser tests, driven by playwright-core. The browser is the machine's:
 * `CHROME_PATH`, else Debian's `/usr/bin/chromium` (`apt-get install chromium`; `.ci/run` installs it), else none,
 * and the browser tests skip saying so. Each page records what a test must be able to see: every request's URL,
 * dialogs (an injected `alert` would show as one), uncaught page errors and console errors (CSP refusals among them).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

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
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Launches Chromium headless. @throws when no browser is found */
export async function launchBrowser(): Promise<Browser> {
  const executablePath = chromePath();
  if (!executablePath) throw new Error('no Chromium: set CHROME_PATH or apt-get install chromium');
  return chromium.launch({ executablePath, headless: true, args: FLAGS });
}

/** What a page did, as the tests check it. */
export type PageLog = { requests: string[]; dialogs: string[]; errors: string[] };

/**
 * A new context (its own sessionStorage) and page at `viewport`, recording into the returned log.
 */
export async function openPage(browser: Browser, viewport = { width: 1280, height: 800 }): Promise<{ context: BrowserContext; page: Page; log: PageLog }> {
  const context = await browser.newContext({ viewport });
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

/** Saves a full-page screenshot of `page` as `<name>.png` under SCREENSHOT_DIR. */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
