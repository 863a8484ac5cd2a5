/**
 * The built web assets the API serves (the console at `/console`, and Swagger UI at `/docs`): one JSON manifest,
 * `dist/console/assets.json`, written by `npm run build` (src/console/build.ts). Node reads it from disk at start
 * (load-node.ts); the Workers bundle imports it (src/worker/handlers.ts). Both hand it to `createApp` as
 * `deps.assets`, so both serve the same bytes with the same code (src/api/console.ts).
 */

/** The compressed forms of a file, by `Content-Encoding`, in the order they are preferred. */
export const ASSET_ENCODINGS = ['br', 'gzip'] as const;
export type AssetEncoding = (typeof ASSET_ENCODINGS)[number];
/** The file name suffix of each compressed form, written beside the manifest (`app-3F2A1B.js.br`). */
export const ENCODING_SUFFIX: Readonly<Record<AssetEncoding, string>> = { br: '.br', gzip: '.gz' };

/** One file: its media type and its text (every asset is text: JavaScript, CSS). */
export type AssetFile = {
  type: string;
  body: string;
  /** The size in bytes of each compressed form `npm run build` wrote beside the manifest. */
  encoded?: Partial<Record<AssetEncoding, number>>;
  /**
   * The compressed forms themselves, when the runtime loaded them (Node: load-node.ts reads them from disk). Without
   * them the file is served as it is (the Workers bundle: Cloudflare's edge compresses).
   */
  bodies?: Partial<Record<AssetEncoding, Uint8Array<ArrayBuffer>>>;
};

/**
 * The manifest. File names carry a content hash (`app-3F2A1B.js`), so they can be cached for a year; the pages
 * that name them are served fresh.
 */
export type WebAssets = {
  /** The console's script and stylesheet (names in `files`). */
  console: { js: string; css: string };
  /** Swagger UI's bundle and stylesheet, and the script that starts it on `/openapi.json`. */
  docs: { js: string; css: string; init: string };
  files: Record<string, AssetFile>;
};

/** Where assets are served from: `/console/assets/<name>`. */
export const ASSET_PATH = '/console/assets';
