/**
 * The repository's own API reference keeps up with the app: every route the app serves (read from its route table)
 * is named, as `METHOD /path`, in the README's table of routes and in docs/api.md, and neither names a route the app
 * no longer has.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';

const ROUTE = /`((?:GET|POST|PUT|PATCH|DELETE) \/[^`\s]*)(?:\s[^`]*)?`/g;

/** The `METHOD /path` names in `text` (paths with `:params`, as Hono lists them). */
function namedRoutes(text: string): Set<string> {
  return new Set([...text.matchAll(ROUTE)].map((m) => m[1]!.replace(/\?.*$/, '')));
}

describe('the API reference', () => {
  let app: TestApp;
  let served: string[];
  beforeAll(async () => {
    app = await startTestApp();
    served = [...new Set(app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${r.path}`))];
  });
  afterAll(() => app?.close());

  it("names every served route in the README's table, and no other", async () => {
    const readme = await readFile('README.md', 'utf8');
    const table = readme.slice(
      readme.indexOf('| method and path | what |'),
      readme.indexOf('\n\n', readme.indexOf('| method and path | what |')),
    );
    const named = namedRoutes(table);
    expect(served.filter((r) => !named.has(r))).toEqual([]);
    expect([...named].filter((r) => !served.includes(r))).toEqual([]);
  });

  it('names every served route in docs/api.md', async () => {
    const doc = await readFile('docs/api.md', 'utf8');
    const named = namedRoutes(doc);
    expect(served.filter((r) => !named.has(r))).toEqual([]);
    expect([...named].filter((r) => !served.includes(r) && !r.startsWith('POST <'))).toEqual([]);
  });
});
