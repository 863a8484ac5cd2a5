/**
 * Cloudflare Workers entry (wrangler.toml `main`): the HTTP API on `fetch` (the same `createApp` as the Node
 * process) and a bounded dispatch tick on `scheduled` (Cron Trigger). Only runtime-portable modules are reachable
 * from here: no undici, PGlite, pino, node:fs, @hono/node-server, src/runtime.ts or src/cli.ts
 * (test/worker/import-graph.test.ts checks it). Wiring lives in src/worker/handlers.ts.
 */
import webAssets from 'chime-web-assets';
import { createWorkerHandlers } from './worker/handlers.ts';

// `chime-web-assets` is dist/console/assets.json (wrangler.toml [alias]): `npm run build` writes it before a deploy.
export default createWorkerHandlers({ assets: webAssets });
