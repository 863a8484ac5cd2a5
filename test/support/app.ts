/** The API in process over an in-memory PGlite: for fast HTTP-level tests of validation and problem details. */
import { createApp } from '../../src/api/app.ts';
import type { AppConfig } from '../../src/api/env.ts';
import { systemClock, type Clock } from '../../src/domain/clock.ts';
import { createCipher } from '../../src/store/cipher.ts';
import { openEmbedded } from '../../src/store/embedded.ts';
import { migrateEmbedded } from '../../src/store/migrate.ts';
import { apiClient, createTestTenant, type TestTenant } from './api.ts';
import { ADMIN_TOKEN } from './chime-process.ts';

export type TestApp = {
  fetch: (input: string, init?: RequestInit) => Promise<Response>;
  tenant(name?: string): Promise<TestTenant>;
  /** The app's routes as Hono registered them (`:param` form), middleware included (method ALL). */
  routes: { method: string; path: string }[];
  close(): Promise<void>;
};

export async function startTestApp(config: Partial<AppConfig> = {}, clock: Clock = systemClock): Promise<TestApp> {
  const database = await openEmbedded('memory://');
  await migrateEmbedded(database.pg);
  const cipher = await createCipher(new Uint8Array(32).fill(3));
  const app = createApp({
    store: { db: database.db, cipher, clock },
    database,
    config: { adminToken: ADMIN_TOKEN, signup: 'closed', allowPrivateDestinations: true, version: 'test', ...config },
  });
  const fetchFn = (input: string, init?: RequestInit) => Promise.resolve(app.request(input, init));
  return {
    fetch: fetchFn,
    routes: app.routes.map((r) => ({ method: r.method, path: r.path })),
    tenant: (name = 'tenant') => createTestTenant('http://chime.test', name, fetchFn),
    close: () => database.close(),
  };
}

export { apiClient };
