import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The process tests run the built service (`npm run build`), as `npm start` does.
    globalSetup: ['test/support/build.ts'],
    exclude: ['test/bench/**', 'node_modules/**'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // e2e files start real processes; two cores, so two files at a time.
    maxWorkers: 2,
  },
});
