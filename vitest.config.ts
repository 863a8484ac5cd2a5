import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The Worker entry imports the built web assets under this name (wrangler.toml [alias]); the global setup builds them.
  resolve: {
    alias: [
      { find: 'chime-web-assets', replacement: new URL('./dist/console/assets.json', import.meta.url).pathname },
      // The workspace packages from their sources, subpaths included (their dist/ is what `npm pack` ships:
      // test/packages installs that).
      { find: /^@chime\/(receiver|client)$/, replacement: new URL('./packages/$1/src/index.ts', import.meta.url).pathname },
      { find: /^@chime\/(receiver|client)\/([\w-]+)$/, replacement: new URL('./packages/$1/src/$2.ts', import.meta.url).pathname },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // The process tests run the built service (`npm run build`), as `npm start` does.
    // and every fresh embedded database starts from one migrated once (test/support/pglite-template.ts).
    globalSetup: ['test/support/build.ts', 'test/support/pglite-template.ts'],
    exclude: ['test/bench/**', 'node_modules/**'],
    pool: 'forks',
    testTimeout: 30_000,
    // expect.poll waits for an eventual state (a page re-rendered, a run recorded): 1 s, vitest's default, was too short
    // on a loaded CI machine with Chromium and two test files running (the console suite failed on it).
    expect: { poll: { timeout: 10_000 } },
    hookTimeout: 60_000,
    // e2e files start real processes; two cores, so two files at a time.
    maxWorkers: 2,
  },
});
