/**
 * Node's copy of the web assets (src/console/assets.ts): `dist/console/assets.json`, found beside the built CLI
 * (`dist/node/cli.mjs` → `dist/console/`) or, when the service runs from its sources, under the repository's `dist/`,
 * with the compressed forms of each file the build wrote beside it (`<name>.br`, `<name>.gz`), kept in memory so that
 * browsers that accept them receive them.
 */
import { readFile } from 'node:fs/promises';
import { type AssetEncoding, ENCODING_SUFFIX, type WebAssets } from './assets.ts';

const CANDIDATES = ['../console/assets.json', '../../dist/console/assets.json'];

/** @returns the manifest, or undefined when no build is there (the pages then answer 503 saying so) */
export async function loadWebAssets(): Promise<WebAssets | undefined> {
  for (const candidate of CANDIDATES) {
    const url = new URL(candidate, import.meta.url);
    const text = await readFile(url, 'utf8').catch(() => null);
    if (text === null) continue;
    const assets = JSON.parse(text) as WebAssets;
    for (const [name, file] of Object.entries(assets.files)) {
      for (const encoding of Object.keys(file.encoded ?? {}) as AssetEncoding[]) {
        // A missing compressed file (a partial copy of dist/) only means that form is not offered.
        const bytes = await readFile(new URL(name + ENCODING_SUFFIX[encoding], url)).catch(() => null);
        if (bytes) (file.bodies ??= {})[encoding] = new Uint8Array(bytes);
      }
    }
    return assets;
  }
  return undefined;
}
