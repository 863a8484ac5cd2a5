/**
 * Node's copy of the web assets (src/console/assets.ts): `dist/console/assets.json`, found beside the built CLI
 * (`dist/node/cli.mjs` → `dist/console/`) or, when the service runs from its sources, under the repository's `dist/`.
 */
import { readFile } from 'node:fs/promises';
import type { WebAssets } from './assets.ts';

const CANDIDATES = ['../console/assets.json', '../../dist/console/assets.json'];

/** @returns the manifest, or undefined when no build is there (the pages then answer 503 saying so) */
export async function loadWebAssets(): Promise<WebAssets | undefined> {
  for (const candidate of CANDIDATES) {
    const text = await readFile(new URL(candidate, import.meta.url), 'utf8').catch(() => null);
    if (text !== null) return JSON.parse(text) as WebAssets;
  }
  return undefined;
}
