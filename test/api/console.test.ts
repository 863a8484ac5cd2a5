/**
 * How the console and the API reference are served (API.md "The console"), in process with the assets the global
 * setup built: the pages carry the Content-Security-Policy (self only, no inline or eval'd script, no framing),
 * name only same-origin assets, every path of the app gets the same page, assets are cached for a year by their
 * hashed names, a first visit stays within its size budget, and a service without a build says how to make one. The
 * browser flows are in test/console/.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleRoutes } from '../../src/api/console.ts';
import { consoleFirstVisitGzipBytes } from '../../src/console/build.ts';
import { loadWebAssets } from '../../src/console/load-node.ts';
import { startTestApp, TEST_APP_URL, type TestApp } from '../support/app.ts';

/** The directives of a CSP header, by name. */
function directives(csp: string | null): Map<string, string[]> {
  return new Map(
    (csp ?? '')
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...values]) => [name!, values]),
  );
}

/** What a first visit to `/console` may load, gzipped (issue 18: "aim: ≤ 150 KB"). */
const FIRST_VISIT_BUDGET_BYTES = 150 * 1024;

/** The URLs a page's HTML loads (script src, link href). */
const loaded = (html: string) => [...html.matchAll(/<(?:script|link)[^>]+(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);

describe('the console and /docs, as served', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app?.close());

  it.each(['/console', '/console/jobs', '/console/jobs/0190a000-0000-7000-8000-000000000001', '/console/keys', '/docs'])(
    '%s: a page whose policy allows only this origin',
    async (path) => {
      const r = await app.fetch(`${TEST_APP_URL}${path}`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const csp = directives(r.headers.get('content-security-policy'));
      expect(csp.get('default-src')).toEqual(["'self'"]);
      expect(csp.get('script-src')).toEqual(["'self'"]);
      expect(csp.get('frame-ancestors')).toEqual(["'none'"]);
      expect(csp.get('connect-src')).toEqual(["'self'"]);
      expect(r.headers.get('x-frame-options')).toBe('DENY');
      expect(r.headers.get('cache-control')).toBe('no-cache');
      const html = await r.text();
      expect(html).not.toMatch(/<script>|<script [^>]*>[^<]/); // no inline script
      const urls = loaded(html);
      expect(urls.length).toBeGreaterThanOrEqual(2);
      for (const u of urls) expect(u, `${path} loads ${u}`).toMatch(/^\/console\/assets\/[\w.-]+$/);
    },
  );

  it('serves each asset with its type and a year of caching, and 404 for a name it does not have', async () => {
    const html = await (await app.fetch(`${TEST_APP_URL}/console`)).text();
    for (const u of loaded(html)) {
      const r = await app.fetch(`${TEST_APP_URL}${u}`);
      expect(r.status, u).toBe(200);
      expect(r.headers.get('content-type'), u).toMatch(u.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
      expect(r.headers.get('cache-control'), u).toBe('public, max-age=31536000, immutable');
      expect(r.headers.get('x-content-type-options'), u).toBe('nosniff');
    }
    const missing = await app.fetch(`${TEST_APP_URL}/console/assets/app-0000000000.js`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('application/problem+json');
    const proto = await app.fetch(`${TEST_APP_URL}/console/assets/__proto__`);
    expect(proto.status).toBe(404);
  });

  it('loads nothing from a CDN: Swagger UI and the console come from the build', async () => {
    const assets = await loadWebAssets();
    // Sources may mention URLs in strings; what matters is that no page names another origin (checked above) and that
    // the docs' start script points at this origin's document.
    expect(assets?.files[assets.docs.init]?.body).toContain('/openapi.json');
    const docs = await (await app.fetch(`${TEST_APP_URL}/docs`)).text();
    expect(docs).not.toMatch(/https?:\/\//);
  });

  it('a first visit to /console loads at most 150 KB gzipped, the figure the build prints', async () => {
    // One manifest for the page and the figure (the served app read its own at start; a rebuild since would differ).
    const assets = (await loadWebAssets())!;
    const pages = consoleRoutes(assets);
    const html = await (await pages.request(`${TEST_APP_URL}/console`)).text();
    let assetBytes = 0;
    for (const u of loaded(html)) assetBytes += gzipSync(await (await pages.request(`${TEST_APP_URL}${u}`)).text()).length;
    // The build's figure (printed by `npm run build`, stated in the README) is all the page loads besides itself.
    expect(consoleFirstVisitGzipBytes(assets)).toBe(assetBytes);
    expect(assetBytes).toBeGreaterThan(10_000); // the real bundle, not an empty build
    expect(gzipSync(html).length + assetBytes).toBeLessThanOrEqual(FIRST_VISIT_BUDGET_BYTES);
  });

  it('answers 503 saying how to build when the service runs without its assets', async () => {
    const bare = consoleRoutes(undefined);
    for (const path of ['/console', '/console/jobs', '/console/assets/app.js', '/docs']) {
      const r = await bare.request(`${TEST_APP_URL}${path}`);
      expect(r.status, path).toBe(503);
      expect(((await r.json()) as { detail: string }).detail, path).toContain('npm run build');
    }
  });
});
