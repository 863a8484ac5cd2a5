/**
 * The documents a user reads agree with each other and with the code (issue #29, "Docs that match"): docs/api.md lists
 * every configuration variable the README does, with the same text, and every variable the code reads is in them;
 * `chime --version` prints the package's version; every file a command's help names exists; the packages' READMEs
 * link nothing outside their tarball, name the README's variables, and do not tell users to install from a registry
 * that does not have them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import pkg from '../package.json' with { type: 'json' };
import { COMMANDS, commandHelp } from '../src/cli-args.ts';
import { runChime } from './support/chime-run.ts';

const ROOT = join(import.meta.dirname, '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** The rows of every configuration table in `markdown`: lines starting `| \`NAME\` |` with an upper-case name. */
function configRows(markdown: string): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of markdown.split('\n')) {
    const m = /^\| `([A-Z][A-Z0-9_]+)` \|/.exec(line);
    if (m) rows.set(m[1]!, line);
  }
  return rows;
}

/** The environment variables a configuration module reads: the keys of its zod object (`NAME: schema`) and `env.X` reads. */
function variablesRead(source: string): Set<string> {
  return new Set(
    [
      ...source.matchAll(/^\s+((?:CHIME|DATABASE|PORT|HOST)[A-Z0-9_]*): [a-z]/gm),
      ...source.matchAll(/\benv\.((?:CHIME|DATABASE)_[A-Z0-9_]+)/g),
    ].map((m) => m[1]!),
  );
}

describe('the documents agree', () => {
  it('docs/api.md has every configuration row of the README, word for word, and no other', () => {
    const readme = configRows(read('README.md'));
    const api = configRows(read('docs/api.md'));
    expect(readme.size).toBeGreaterThan(20);
    expect([...api.keys()].sort()).toEqual([...readme.keys()].sort());
    for (const [name, row] of readme) expect(api.get(name), name).toBe(row);
  });

  it('every variable the service and the Worker read is documented', () => {
    const documented = configRows(read('README.md'));
    const read_ = new Set([...variablesRead(read('src/config.ts')), ...variablesRead(read('src/worker/config.ts'))]);
    expect(read_.size).toBeGreaterThan(20);
    for (const name of read_) expect(documented.has(name), `${name} is read by the code but not in the README's tables`).toBe(true);
  });

  it('every repository file a command help names exists', () => {
    for (const spec of COMMANDS) {
      for (const [path] of commandHelp(spec).matchAll(/\b[\w./-]+\.md\b/g))
        expect(existsSync(join(ROOT, path)), `${spec.name} --help names ${path}`).toBe(true);
    }
    expect(commandHelp(COMMANDS.find((c) => c.name === 'node')!)).toContain('docs/protocol.md');
  });

  it('chime --version prints the version and exits 0', async () => {
    for (const flag of ['--version', '-v']) {
      const run = await runChime({}, [flag], 20_000);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe(`chime ${pkg.version}\n`);
    }
  });

  it.each(['receiver', 'client'])("@chime/%s's README works inside its tarball and says how to install it today", (name) => {
    const text = read(`packages/${name}/README.md`);
    // Markdown links to relative paths would point outside the package once packed.
    for (const [, target] of text.matchAll(/\]\(([^)]+)\)/g)) expect(target, `link ${target}`).toMatch(/^(https?:|#)/);
    expect(text).not.toMatch(/npm install @chime\//);
    expect(text).toContain(`npm pack ./packages/${name}`);
    // The variables it names are the main README's.
    const readme = read('README.md');
    for (const [variable] of text.matchAll(/\bCHIME_[A-Z_]+/g)) {
      if (variable === 'CHIME_PREVIOUS_SIGNING_SECRET') continue; // the app's own, during a rotation
      expect(readme, variable).toContain(variable);
    }
  });
});
