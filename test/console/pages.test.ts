/**
 * The console in Chromium (test/console/support.ts), its pages as a whole: /docs (Swagger UI, loading only its own
 * assets, compressed); the console's script and stylesheet served compressed with `Vary`, in the bytes the build
 * states; the pages' icon; an unknown path answered by a not-found page; the keyboard; 1280×800 and a 390×844 phone
 * without sideways scrolling and without a table cut off; the usage chart with its legend.
 */
import { request as httpRequest } from 'node:http';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { consoleFirstVisitBrotliBytes, consoleFirstVisitGzipBytes } from '../../src/console/build.ts';
import { loadWebAssets } from '../../src/console/load-node.ts';
import { apiClient } from '../support/api.ts';
import { focused, pageWidth, tabTo } from '../support/browser.ts';
import { BROWSER, DATABASE_TARGETS, DESKTOP, loaded, PHONE, useHarness, YEARLY } from './support.ts';

/** What /docs may transfer in all (its page, Swagger UI's script and stylesheet, its start script, the API document): compressed, about 450 KB; as they are, 2 MB. */
const DOCS_BUDGET_BYTES = 700 * 1024;

/** The bytes the service sends for `path` when asked with `accept-encoding` (the body as it comes, not decoded), and the headers. */
function rawGet(url: string, acceptEncoding: string): Promise<{ bytes: number; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { 'accept-encoding': acceptEncoding } }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => resolve({ bytes, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe.runIf(BROWSER).each(DATABASE_TARGETS)('the console in Chromium on $kind: the pages', (target) => {
  const h = useHarness(target);
  /** A's Paris cron job, a run of it that succeeded and a dead letter (made once, through the API). */
  let made: Promise<{ jobId: string; runId: string }> | undefined;
  const fixtures = () =>
    (made ??= (async () => {
      const jobId = await h.makeJob(h.a, {
        name: 'Paris morning report',
        schedule: { type: 'cron', expression: '0 9 * * 1-5', timezone: 'Europe/Paris' },
        callback: { url: `${h.receiver.url}/report` },
      });
      const runId = await h.triggered(h.a, jobId, 'succeeded');
      const failing = await h.makeJob(h.a, {
        name: 'failing export',
        schedule: YEARLY,
        callback: { url: `${h.receiver.url}/fail` },
        retry: { strategy: 'none' },
      });
      await h.triggered(h.a, failing, 'failed');
      return { jobId, runId };
    })());
  /** The paths of every page of the console, for A's cron job and its run. */
  const consolePaths = async () => {
    const { jobId, runId } = await fixtures();
    return [
      '/console/jobs',
      `/console/jobs/${jobId}`,
      `/console/jobs/${jobId}/edit`,
      '/console/jobs/new',
      '/console/runs',
      `/console/runs/${runId}`,
      '/console/dead-letters',
      '/console/keys',
      '/console/usage',
    ];
  };

  it('/docs: Swagger UI lists every operation, loading only what it needs, compressed, from this origin, nothing refused by the CSP', async () => {
    const page = await h.newPage();
    const transferred = await recordTransfers(page);
    const res = await page.goto(`${h.url}/docs`);
    expect(res?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    const spec = (await apiClient(h.url, null).get('/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const methods = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);
    const operations = Object.values(spec.paths).reduce((n, item) => n + Object.keys(item).filter((m) => methods.has(m)).length, 0);
    expect(operations).toBeGreaterThan(20);
    await expect.poll(() => page.locator('.opblock').count(), { timeout: 15_000 }).toBe(operations);
    await page
      .locator('.opblock-summary-path', { hasText: /^\/v1\/jobs$/ })
      .first()
      .waitFor();
    await page
      .locator('.opblock-summary-path', { hasText: /^\/v1\/usage$/ })
      .first()
      .waitFor();
    const log = h.logOf(page);
    expect(log.requests).toContain(`${h.url}/openapi.json`);
    // Only what it needs: its page, Swagger UI's script and stylesheet, its start script and the API document; each
    // asset compressed, all of it within the budget.
    const assets = (await loadWebAssets())!;
    const asset = (name: string) => `${h.url}/console/assets/${name}`;
    expect(new Set(log.requests)).toEqual(
      new Set([`${h.url}/docs`, asset(assets.docs.css), asset(assets.docs.js), asset(assets.docs.init), `${h.url}/openapi.json`]),
    );
    await expect.poll(() => transferred.length).toBe(log.requests.length);
    for (const r of transferred.filter((r) => r.url.includes('/console/assets/'))) expect(r.encoding, r.url).toBe('br');
    const total = transferred.reduce((n, r) => n + r.bytes, 0);
    expect(total, transferred.map((r) => `${r.url} ${r.bytes}`).join('\n')).toBeLessThanOrEqual(DOCS_BUDGET_BYTES);
    expect(log.errors.filter((e) => /Content Security Policy|CSP violation/i.test(e))).toEqual([]);
    await h.shot(page, 'docs', { fullPage: false });
  });

  it('works by keyboard: Tab reaches the sign-in, the navigation and the main buttons; Enter acts', async () => {
    const page = await h.newPage();
    await page.goto(`${h.url}/console`);
    // Signed in by keyboard alone.
    await tabTo(page, (f) => f.id === 'api-key');
    await page.keyboard.type(h.a.apiKey);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    // From the top of the job list, Tab goes through every link of the navigation, sign-out and "New job".
    await page.goto(`${h.url}/console/jobs`);
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
    await page.goto(`${h.url}/console/jobs`);
    await loaded(page);
    await tabTo(page, (f) => f.tag === 'A' && f.text === 'Runs', 20);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/runs$/);
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
  });

  it('fits 1280×800 and a 390×844 phone: no page scrolls sideways, and on the phone no table is cut off', async () => {
    const page = await h.newPage();
    /** Checks the page as laid out at each size, the desktop's last. */
    const fits = async (where: string) => {
      for (const size of [PHONE, DESKTOP]) {
        await page.setViewportSize(size);
        expect(await pageWidth(page), `${where} at ${size.width}×${size.height}`).toBeLessThanOrEqual(size.width);
      }
    };
    await page.goto(`${h.url}/console`);
    await page.getByLabel('API key').waitFor();
    await fits('sign-in');
    await h.signIn(page, h.a);
    const { jobId } = await fixtures();
    for (const path of await consolePaths()) {
      await page.goto(`${h.url}${path}`);
      await loaded(page);
      await fits(path);
      await page.setViewportSize(PHONE);
      expect(await cutCells(page), `${path} on a phone`).toEqual([]);
      await page.setViewportSize(DESKTOP);
      if (path === `/console/jobs/${jobId}`) {
        await page.setViewportSize(PHONE);
        await h.shot(page, 'phone-job');
        await page.setViewportSize(DESKTOP);
      }
    }
  });

  it('draws the usage of the last 14 days, with a legend of the four outcomes only', async () => {
    const page = await h.newPage();
    await h.signIn(page, h.a, '/console/usage');
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    await expect.poll(() => page.locator('canvas').count()).toBeGreaterThan(0);
    const table = page.getByRole('table', { name: 'Runs per day' });
    await expect.poll(() => table.getByRole('row').count()).toBe(15);
    // The legend names the four outcomes, in the order they stack, and nothing else (no "Day: —", no empty values).
    expect(await page.getByRole('list', { name: 'Legend' }).getByRole('listitem').allTextContents()).toEqual([
      'Succeeded',
      'Failed',
      'Expired',
      'Skipped',
    ]);
    expect(await page.locator('figure.chart').getByText(/—|Day/).count()).toBe(0);
    await h.shot(page, 'usage');
  });

  it("serves the console's script and stylesheet compressed, with Vary, in the bytes the build states", async () => {
    const assets = (await loadWebAssets())!;
    const page = await h.newPage();
    const transferred = await recordTransfers(page);
    await h.signIn(page, h.a);
    await loaded(page);
    const mine = [assets.console.js, assets.console.css].map((name) => `${h.url}/console/assets/${name}`);
    await expect.poll(() => transferred.filter((r) => mine.includes(r.url)).length).toBe(2);
    const sent = transferred.filter((r) => mine.includes(r.url));
    for (const r of sent) expect(r, r.url).toMatchObject({ encoding: 'br', vary: 'Accept-Encoding' });
    // Chromium accepts brotli: it receives the build's brotli figure; a browser that accepts only gzip, the gzip one.
    expect(sent.reduce((n, r) => n + r.bytes, 0)).toBe(consoleFirstVisitBrotliBytes(assets));
    let gzipped = 0;
    for (const url of mine) {
      const r = await rawGet(url, 'gzip');
      expect(r.headers['content-encoding'], url).toBe('gzip');
      expect(r.headers.vary, url).toBe('Accept-Encoding');
      gzipped += r.bytes;
    }
    expect(gzipped).toBe(consoleFirstVisitGzipBytes(assets));
    // Asked for neither (or refusing both), the text as it is.
    const plain = await rawGet(mine[0]!, 'identity, br;q=0, gzip;q=0');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.bytes).toBe(Buffer.byteLength(assets.files[assets.console.js]!.body));
  });

  it('has an icon, on the console and on /docs', async () => {
    const page = await h.newPage();
    for (const path of ['/console', '/docs']) {
      await page.goto(`${h.url}${path}`);
      const href = (await page.locator('link[rel="icon"]').getAttribute('href'))!;
      expect(href, path).toMatch(/^data:image\/svg\+xml,/);
      // It draws (the page's CSP allows data: images).
      const width = await page.evaluate(
        (src) =>
          new Promise<number>((done) => {
            const img = new (
              globalThis as unknown as { Image: new () => { src: string; naturalWidth: number; onload: () => void; onerror: () => void } }
            ).Image();
            img.onload = () => done(img.naturalWidth);
            img.onerror = () => done(0);
            img.src = src;
          }),
        href,
      );
      expect(width, path).toBeGreaterThan(0);
    }
  });

  it('answers a path that is no page of the console with a not-found page; /console leads to the jobs', async () => {
    const page = await h.newPage();
    await h.signIn(page, h.a, '/console/jobz');
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/console/jobz');
    expect(await page.getByText('There is no console page at /console/jobz.').count()).toBe(1);
    await h.shot(page, 'not-found');
    await page.goto(`${h.url}/console/runs/${'0'.repeat(8)}/attempts`);
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    await page.getByRole('link', { name: 'Go to the jobs' }).click();
    await page.getByRole('heading', { name: 'Jobs' }).waitFor();
    await page.goto(`${h.url}/console`);
    await page.waitForURL(/\/console\/jobs$/);
  });

  it('saved a screenshot of every page it shows', () => {
    expect([...h.shots]).toEqual(expect.arrayContaining(['docs', 'phone-job', 'usage', 'not-found']));
  });
});

/** A response as it came over the wire: its URL, encoding, `Vary` and body bytes (compressed, as transferred). */
type Transfer = { url: string; encoding: string | undefined; vary: string | undefined; bytes: number };

/** Records every response `page` receives from now on (filled in as they finish). */
async function recordTransfers(page: Page): Promise<Transfer[]> {
  const out: Transfer[] = [];
  page.on('requestfinished', (request) => {
    void (async () => {
      const response = await request.response();
      const sizes = await request.sizes();
      const headers = response ? await response.allHeaders() : {};
      out.push({ url: request.url(), encoding: headers['content-encoding'], vary: headers.vary, bytes: sizes.responseBodySize });
    })().catch(() => undefined); // the page closed first: nothing left to record
  });
  return out;
}

/**
 * The cells of the page's tables that a phone does not show whole: outside the viewport, or in a table that scrolls
 * sideways inside its box (its columns cut off at the edge).
 */
function cutCells(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    type Box = { left: number; right: number; width: number };
    type El = {
      className: string;
      textContent: string | null;
      scrollWidth: number;
      clientWidth: number;
      getBoundingClientRect(): Box;
      querySelector(s: string): El | null;
    };
    const doc = (
      globalThis as unknown as { document: { documentElement: { clientWidth: number }; querySelectorAll(s: string): Iterable<El> } }
    ).document;
    const width = doc.documentElement.clientWidth;
    const cut: string[] = [];
    for (const wrap of doc.querySelectorAll('main .table-wrap')) {
      if (wrap.scrollWidth > wrap.clientWidth + 1)
        cut.push(`table.${wrap.querySelector('table')?.className}: ${wrap.scrollWidth} px wide in ${wrap.clientWidth}`);
    }
    for (const cell of doc.querySelectorAll('main table tbody td, main table tbody th')) {
      const box = cell.getBoundingClientRect();
      if (box.width > 0 && (box.left < -1 || box.right > width + 1))
        cut.push(`"${cell.textContent?.trim().slice(0, 30)}" at ${Math.round(box.left)}..${Math.round(box.right)}`);
    }
    return cut;
  });
}
