/** The typed Hono environment: services reach handlers through `c.var.deps`, built once at start-up. */
import type { Database } from '../store/db.ts';
import type { StoreContext } from '../store/context.ts';

/** Resolves a callback host at registration and refuses non-public addresses (Node: DNS; Workers: none). */
export type ResolveHost = (hostname: string) => Promise<{ ok: true } | { ok: false; reason: string }>;

export type AppConfig = {
  /** Bearer token allowed to create tenants; null = only the CLI creates tenants (unless signup is open). */
  adminToken: string | null;
  signup: 'open' | 'closed';
  allowPrivateDestinations: boolean;
  version: string;
};

export type AppDeps = {
  store: StoreContext;
  database: Pick<Database, 'db'>;
  config: AppConfig;
  resolveHost?: ResolveHost;
  /** Called with unexpected errors (5xx); the response never carries them. */
  onUnexpectedError?: (err: unknown) => void;
};

export type AppEnv = { Variables: { deps: AppDeps; tenantId: string } };
