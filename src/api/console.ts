/**
 * The web pages of the API (API.md "The console"): the tenant console at `/console` (a single-page app on the same
 * origin, using only the public `/v1` API) and the interactive API reference at `/docs` (Swagger UI on
 * `/openapi.json`). Both load only from this origin: their assets come from the manifest `npm run build` writes
 * (src/console/assets.ts), served with content-hashed names and a year of caching, compressed (brotli or gzip, with
 * `Vary: Accept-Encoding`) when the runtime has the build's compressed forms and the browser accepts one, and the
 * pages carry a Content-Security-Policy without inline or eval'd script and with `frame-ancestors 'none'`.
 */
import { type Context, Hono } from 'hono';
import { ASSET_ENCODINGS, ASSET_PATH, type AssetEncoding, type AssetFile, type WebAssets } from '../console/assets.ts';
import type { AppEnv } from './env.ts';
import { ApiError, problemResponse } from './problems.ts';

/**
 * The console's policy: scripts, styles, fonts, images and API calls from this origin only; no framing, no plugins,
 * no `<base>`, forms post here only.
 */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** Swagger UI renders some styles inline (a style attribute is not script); everything else as the console's. */
export const DOCS_CSP = CONSOLE_CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'");

/** Headers of every page: the policy, and no sniffing, framing or referrer. */
function pageHeaders(csp: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': csp,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    // The page names the current hashed assets: always revalidated, so a new build is picked up at once.
    'cache-control': 'no-cache',
  };
}

/** The HTML shell of a page that loads `css` and `scripts` (asset names) into `<div id="app">`. */
function shell(title: string, css: string, scripts: string[], body = '<div id="app"></div>'): string {
  const tags = scripts.map((s) => `<script src="${ASSET_PATH}/${s}" defer></script>`).join('');
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${title}</title><link rel="stylesheet" href="${ASSET_PATH}/${css}">${tags}</head>` +
    `<body>${body}<noscript>This page needs JavaScript.</noscript></body></html>`
  );
}

/**
 * The compressed form of `file` to send for an `Accept-Encoding` header (RFC 9110 section 12.5.3): the accepted form
 * with the highest weight (`q=0` refuses; `*` stands for any not named), brotli before gzip on a tie.
 * @returns the encoding, or null to send the file as it is
 */
export function chooseEncoding(acceptEncoding: string | undefined, file: AssetFile): AssetEncoding | null {
  if (!acceptEncoding || !file.bodies) return null;
  const weights = new Map<string, number>();
  for (const part of acceptEncoding.toLowerCase().split(',')) {
    const [token, ...params] = part.split(';').map((p) => p.trim());
    if (!token) continue;
    const q = params.find((p) => p.startsWith('q='));
    const weight = q ? Number(q.slice(2)) : 1;
    weights.set(token, Number.isFinite(weight) ? weight : 0);
  }
  let best: AssetEncoding | null = null;
  let bestWeight = 0;
  for (const encoding of ASSET_ENCODINGS) {
    const weight = weights.get(encoding) ?? weights.get('*') ?? 0;
    if (file.bodies[encoding] && weight > bestWeight) [best, bestWeight] = [encoding, weight];
  }
  return best;
}

/**
 * Routes `/console`, `/console/*` (pages of the app, and `/console/assets/<name>`) and `/docs`.
 * @param assets the built manifest; absent (the service was not built): the pages answer `503` saying how to build
 */
export function consoleRoutes(assets: WebAssets | undefined): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const notBuilt = (c: Context<AppEnv>) =>
    problemResponse(c, new ApiError('unavailable', 'the web assets are not built: run `npm run build` (npm start does) and restart'));

  const consolePage = (c: Context<AppEnv>) => {
    if (!assets) return notBuilt(c);
    return c.body(shell('Chime console', assets.console.css, [assets.console.js]), 200, pageHeaders(CONSOLE_CSP));
  };

  app.get('/console', consolePage);
  app.get('/console/*', (c) => {
    const prefix = `${ASSET_PATH}/`;
    if (!c.req.path.startsWith(prefix)) return consolePage(c);
    if (!assets) return notBuilt(c);
    const name = c.req.path.slice(prefix.length);
    const file = Object.hasOwn(assets.files, name) ? assets.files[name] : undefined;
    if (!file) return problemResponse(c, new ApiError('not_found', `no asset ${name}`));
    const headers: Record<string, string> = {
      'content-type': file.type,
      'x-content-type-options': 'nosniff',
      // Names carry their content's hash: a name never changes content.
      'cache-control': 'public, max-age=31536000, immutable',
    };
    // The answer depends on Accept-Encoding whenever a compressed form exists, so caches must key on it.
    if (file.bodies) headers.vary = 'Accept-Encoding';
    const encoding = chooseEncoding(c.req.header('accept-encoding'), file);
    if (!encoding) return c.body(file.body, 200, headers);
    return c.body(file.bodies![encoding]!, 200, { ...headers, 'content-encoding': encoding });
  });

  app.get('/docs', (c) => {
    if (!assets) return notBuilt(c);
    return c.body(
      shell('Chime API reference', assets.docs.css, [assets.docs.js, assets.docs.init], '<div id="swagger-ui"></div>'),
      200,
      pageHeaders(DOCS_CSP),
    );
  });
  return app;
}
