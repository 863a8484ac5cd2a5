/**
 * `npm run build` step for the web assets: bundles the console (src/console/app/main.tsx, Preact, with its CSS) and the
 * script that starts Swagger UI, takes Swagger UI's own bundle and stylesheet from `swagger-ui-dist`, names every
 * file by its content hash, and writes them to `dist/console/` with the manifest `assets.json` (src/console/assets.ts) that Node and the Workers bundle serve from. Beside each file go
 * its brotli and gzip forms (`<name>.br`, `<name>.gz`), which Node serves to browsers that accept them. Prints the
 * size of what a first visit to `/console` loads, gzipped and with brotli.
 *
 * Usage: `node --import tsx src/console/build.ts [--out dir]` (default `dist/console`).
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { type AssetEncoding, ENCODING_SUFFIX, type WebAssets } from './assets.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };
/** How many times the new build is swapped in before giving up (another build swapping its own at the same moment). */
const SWAP_ATTEMPTS = 5;
/** Files larger than this are compressed with brotli at quality 9, not 11 (Swagger UI's 1.7 MB: 0.2 s, not 6 s). */
const BROTLI_BEST_MAX_BYTES = 1024 * 1024;

/** The compressed forms of `text`: gzip as `gzipSync` makes it by default (the build's printed figure), and brotli. */
function compress(text: string): Record<AssetEncoding, Buffer> {
  const bytes = Buffer.from(text);
  const quality = bytes.length > BROTLI_BEST_MAX_BYTES ? 9 : constants.BROTLI_MAX_QUALITY;
  const br = brotliCompressSync(bytes, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: quality,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
    },
  });
  return { br, gzip: gzipSync(bytes) };
}

/** `name-HASH.ext` for `text`: the first 10 hex digits of its SHA-256. */
function hashedName(name: string, text: string): string {
  const ext = extname(name);
  return `${basename(name, ext)}-${createHash('sha256').update(text).digest('hex').slice(0, 10)}${ext}`;
}

/** Bundles `entry` (TypeScript/TSX) for browsers: one minified script, and its CSS when it imports any. */
async function bundle(entry: string): Promise<{ js: string; css: string | null }> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    outdir: 'out',
    minify: true,
    format: 'iife',
    target: ['es2022', 'chrome120', 'firefox120', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    logLevel: 'warning',
  });
  const text = (ext: string) => result.outputFiles.find((f) => f.path.endsWith(ext))?.text ?? null;
  return { js: text('.js')!, css: text('.css') };
}

/**
 * Builds the assets into `outDir` and returns the manifest.
 * @throws when esbuild reports an error or swagger-ui-dist is missing
 */
export async function buildWebAssets(outDir: string): Promise<WebAssets> {
  const files: WebAssets['files'] = {};
  const add = (name: string, body: string): string => {
    const hashed = hashedName(name, body);
    files[hashed] = { type: TYPES[extname(name)]!, body };
    return hashed;
  };
  const app = await bundle(join(HERE, 'app', 'main.tsx'));
  const init = await bundle(join(HERE, 'app', 'docs-init.ts'));
  const swagger = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  // Swagger UI's bundle ends with a source-map comment naming a file that is not served.
  const swaggerJs = (await readFile(join(swagger, 'swagger-ui-bundle.js'), 'utf8')).replace(/\n\/\/# sourceMappingURL=.*$/, '\n');
  const swaggerCss = (await readFile(join(swagger, 'swagger-ui.css'), 'utf8')).replace(/\/\*# sourceMappingURL=.*?\*\/\s*$/, '');
  const assets: WebAssets = {
    console: { js: add('app.js', app.js), css: add('app.css', app.css ?? '') },
    docs: { js: add('swagger-ui.js', swaggerJs), css: add('swagger-ui.css', swaggerCss), init: add('docs.js', init.js) },
    files,
  };
  // Written beside `outDir` first, then swapped in: a service starting meanwhile (another test run's) finds the old
  // build or the new one, never a folder half written.
  const staging = `${outDir}.new-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  for (const [name, file] of Object.entries(files)) {
    await writeFile(join(staging, name), file.body);
    file.encoded = {};
    for (const [encoding, bytes] of Object.entries(compress(file.body)) as [AssetEncoding, Buffer][]) {
      await writeFile(join(staging, name + ENCODING_SUFFIX[encoding]), bytes);
      file.encoded[encoding] = bytes.length;
    }
  }
  await writeFile(join(staging, 'assets.json'), JSON.stringify(assets));
  const old = `${outDir}.old-${process.pid}`;
  // Another build may swap its own in between the two renames: then move that one aside too and try again.
  for (let attempt = 1; ; attempt++) {
    await rm(old, { recursive: true, force: true });
    await rename(outDir, old).catch(() => undefined);
    try {
      await rename(staging, outDir);
      break;
    } catch (err) {
      if (attempt >= SWAP_ATTEMPTS) throw err;
    }
  }
  await rm(old, { recursive: true, force: true });
  return assets;
}

/**
 * Gzipped bytes of what a first visit to `/console` loads (script and stylesheet; the HTML shell is ~0.5 KB): what a
 * browser that accepts gzip but not brotli receives (the `.gz` files are made the same way).
 */
export function consoleFirstVisitGzipBytes(assets: WebAssets): number {
  return [assets.console.js, assets.console.css].reduce((n, name) => n + gzipSync(assets.files[name]!.body).length, 0);
}

/** Bytes of the brotli forms of the console's script and stylesheet: what a browser that accepts brotli receives. */
export function consoleFirstVisitBrotliBytes(assets: WebAssets): number {
  return [assets.console.js, assets.console.css].reduce((n, name) => n + (assets.files[name]!.encoded?.br ?? 0), 0);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const i = process.argv.indexOf('--out');
  const out = i > 0 ? process.argv[i + 1]! : 'dist/console';
  const assets = await buildWebAssets(out);
  const kb = (bytes: number) => (bytes / 1024).toFixed(1);
  process.stdout.write(
    `web assets: ${out}/assets.json; a first visit to /console loads ${kb(consoleFirstVisitGzipBytes(assets))} KB gzipped ` +
      `(${kb(consoleFirstVisitBrotliBytes(assets))} KB with brotli)\n`,
  );
}
