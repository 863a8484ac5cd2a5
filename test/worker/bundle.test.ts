/**
 * The Workers bundle, offline: `wrangler deploy --dry-run --outdir` must bundle src/worker.ts as wrangler.toml
 * says, and nothing Node-only may be reachable from it. The esbuild metafile wrangler writes lists every module in
 * the bundle and every import left to the runtime, so a future import of undici (or PGlite, pino, the Node server,
 * the Node composition root…) anywhere on the API or dispatch path fails here, naming the importer.
 */
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runWrangler, type WranglerResult } from './wrangler.ts';

type Metafile = {
  inputs: Record<string, { bytes: number; imports: { path: string; kind: string; external?: boolean; original?: string }[] }>;
  outputs: Record<string, { bytes: number; entryPoint?: string; exports: string[] }>;
};

/** Packages that must never be in the Worker: Node-only, or the Node side's choices (docs/design.md "Layers"). */
const FORBIDDEN_PACKAGES = [
  'undici',
  '@electric-sql/pglite',
  'pino',
  '@hono/node-server',
  'prom-client',
  'tsx',
  // The OpenTelemetry SDK (README "Traces"): the Node process loads it, and only when tracing is configured.
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/sdk-trace',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/otlp-exporter-base',
  '@opentelemetry/resources',
  '@opentelemetry/core',
];
/** Our Node-only modules (drivers, process wiring, undici delivery, DNS guard, the Node dispatcher loop). */
const FORBIDDEN_SOURCES = [
  'src/cli.ts',
  'src/serve.ts',
  'src/open-database.ts',
  'src/runtime.ts',
  'src/store/embedded.ts',
  'src/store/migrate.ts',
  'src/dispatch/deliver.ts',
  'src/dispatch/guard.ts',
  'src/dispatch/drivers/node-dispatcher.ts',
  'src/dispatch/metrics.ts',
  'src/listen.ts',
  'src/tracing.ts',
  'src/otel.ts',
];
/**
 * Imports left to the runtime, by importer. Anything else fails the test.
 * - sign.ts: node:crypto's createHmac/createHash, native in workerd under `nodejs_compat`;
 * - postgres.js's `workerd` build: its own polyfills over `cloudflare:sockets`;
 * - cron-parser's CronFileParser (re-exported by its index, never called by Chime): fs, which workerd provides
 *   under `nodejs_compat` (and wrangler maps to its node-built-in-modules shim).
 */
const ALLOWED_EXTERNALS: { importer: RegExp; paths: string[] }[] = [
  { importer: /^src\/dispatch\/sign\.ts$/, paths: ['node:crypto'] },
  { importer: /node_modules\/postgres\/cf\//, paths: ['node:buffer', 'node:events', 'node:stream', 'cloudflare:sockets'] },
  { importer: /node_modules\/cron-parser\/dist\/CronFileParser\.js$/, paths: ['fs', 'fs/promises'] },
  { importer: /^node-built-in-modules:(fs|fs\/promises)$/, paths: ['fs', 'fs/promises'] },
];

const packageOf = (input: string): string | null => input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//)?.[1] ?? null;

describe('wrangler deploy --dry-run', () => {
  let out: string;
  let result: WranglerResult;
  let meta: Metafile;
  let bundle: string;

  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'chime-worker-bundle-'));
    result = await runWrangler(['deploy', '--dry-run', '--outdir', out, '--metafile', join(out, 'meta.json')], { timeoutMs: 180_000 });
    if (result.code !== 0) throw new Error(`wrangler deploy --dry-run exited with ${result.code}:\n${result.output}`);
    meta = JSON.parse(await readFile(join(out, 'meta.json'), 'utf8')) as Metafile;
    bundle = await readFile(join(out, 'worker.js'), 'utf8');
  }, 200_000);

  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  it('bundles src/worker.ts with its bindings, within the Free plan size limit', async () => {
    expect(result.output).toContain('--dry-run: exiting now.');
    expect(result.output).toMatch(/env\.HYPERDRIVE .*Hyperdrive Config/);
    const entry = Object.values(meta.outputs).find((o) => o.entryPoint !== undefined);
    expect(entry?.entryPoint).toBe('src/worker.ts');
    expect(entry?.exports).toEqual(['default']);
    expect((await stat(join(out, 'worker.js'))).size).toBeGreaterThan(100_000);
    // Workers Free: 3 MB compressed (https://developers.cloudflare.com/workers/platform/limits/#worker-size).
    expect(gzipSync(bundle).byteLength).toBeLessThan(3 * 1024 * 1024);
  });

  it('takes postgres.js in its workerd build, and the shared API, store and attempt modules', () => {
    const inputs = Object.keys(meta.inputs);
    expect(inputs.some((i) => /node_modules\/postgres\/cf\/src\/index\.js$/.test(i))).toBe(true);
    expect(inputs.some((i) => /node_modules\/postgres\/src\/index\.js$/.test(i))).toBe(false);
    for (const shared of [
      'src/api/app.ts',
      'src/store/queue/claim-runs.ts',
      'src/store/queue/finish-runs.ts',
      'src/dispatch/attempt.ts',
      'src/config.ts',
    ]) {
      expect(inputs).toContain(shared);
    }
  });

  it('contains nothing Node-only: no undici, PGlite, pino, node server, prom-client, nor the Node wiring', () => {
    const inputs = Object.keys(meta.inputs);
    const forbidden = inputs.filter((i) => FORBIDDEN_PACKAGES.includes(packageOf(i) ?? '') || FORBIDDEN_SOURCES.includes(i));
    expect(forbidden).toEqual([]);
    // esbuild marks each bundled module with a `// <path>` comment: the text agrees with the metafile.
    expect(bundle).not.toMatch(/^\/\/ .*node_modules\/(undici|@electric-sql\/pglite|pino|@hono\/node-server|prom-client)\//m);
    expect(bundle).not.toMatch(/^\/\/ src\/(cli|runtime)\.ts$/m);
  });

  it('leaves to the runtime only the imports workerd provides under nodejs_compat', () => {
    const unexpected: string[] = [];
    for (const [importer, { imports }] of Object.entries(meta.inputs)) {
      for (const imp of imports) {
        if (!imp.external || imp.path === '<runtime>') continue;
        const ok = ALLOWED_EXTERNALS.some((a) => a.importer.test(importer) && a.paths.includes(imp.path));
        if (!ok) unexpected.push(`${imp.path} <- ${importer}`);
      }
    }
    expect(unexpected).toEqual([]);
  });

  it('is configured as issue #9 asks: nodejs_compat, Hyperdrive, a Cron Trigger, named secrets, no metrics', async () => {
    const toml = await readFile(join(ROOT, 'wrangler.toml'), 'utf8');
    expect(toml).toMatch(/^main = "src\/worker\.ts"$/m);
    expect(toml).toMatch(/^compatibility_flags = \["nodejs_compat"\]$/m);
    expect(toml).toMatch(/^send_metrics = false$/m);
    expect(toml).toMatch(/\[\[hyperdrive\]\]\nbinding = "HYPERDRIVE"\nid = "[^"]+"\nlocalConnectionString = "postgres:\/\/[^"]+"/);
    expect(toml).toMatch(/\[triggers\]\ncrons = \["\* \* \* \* \*"\]/);
    expect(toml).toMatch(/^required = \["CHIME_ENCRYPTION_KEY", "CHIME_ADMIN_TOKEN"\]$/m);
  });
});
