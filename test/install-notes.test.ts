/**
 * What `npm ci` prints stays what the README says it prints (issue #16, README "What `npm ci` prints"): every
 * installed package with an install script is named in package.json `allowScripts` (each denied or allowed on
 * purpose, so npm ≥ 11 does not warn of scripts "not yet covered"), and the README names each; the packages whose
 * `engines` exclude the oldest Node the service supports (package.json `engines`) are exactly those the README names
 * for `EBADENGINE`. Read from package-lock.json, which is what `npm ci` installs.
 */
import { readFileSync } from 'node:fs';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const read = (file: string) => readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');
type LockEntry = { hasInstallScript?: boolean; engines?: { node?: string } | string[]; link?: boolean };
const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, LockEntry> };
const pkg = JSON.parse(read('package.json')) as { allowScripts: Record<string, boolean>; engines: { node: string } };
const readme = read('README.md');
const notes = readme.slice(
  readme.indexOf('**What `npm ci` prints.**'),
  readme.indexOf('\n\n', readme.indexOf('**What `npm ci` prints.**')),
);

/** The package name of a lock entry's path (`node_modules/a/node_modules/@s/b` → `@s/b`). */
const nameOf = (path: string) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
const installed = Object.entries(lock.packages).filter(([path, e]) => path.includes('node_modules/') && !e.link);

describe('what npm ci prints', () => {
  it('names every package with an install script in allowScripts, and the README names each', () => {
    expect(notes.length).toBeGreaterThan(0);
    const withScripts = new Set(installed.filter(([, e]) => e.hasInstallScript).map(([path]) => nameOf(path)));
    expect([...withScripts].sort()).toEqual(Object.keys(pkg.allowScripts).sort());
    for (const name of Object.keys(pkg.allowScripts)) expect(notes, name).toContain(`\`${name}\``);
  });

  it('warns EBADENGINE for exactly the packages the README names, on the oldest supported Node', () => {
    const oldest = semver.minVersion(pkg.engines.node)!.version;
    const excluded = installed
      .filter(([, e]) => e.engines && !Array.isArray(e.engines) && e.engines.node && !semver.satisfies(oldest, e.engines.node))
      .map(([path]) => nameOf(path));
    // "npm warns `EBADENGINE` for `a` and `b`: they are …"
    const list = notes.slice(notes.indexOf('`EBADENGINE`') + '`EBADENGINE`'.length, notes.indexOf(':', notes.indexOf('`EBADENGINE`')));
    const named = [...list.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    expect(excluded.sort()).toEqual(named.sort());
  });
});
