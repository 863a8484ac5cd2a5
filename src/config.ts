/**
 * Process configuration, parsed once at boot from the environment with zod; a bad value fails start-up with the
 * variable named (API.md "Start-up and configuration").
 */
import { z } from 'zod';
import { DISPATCHER_DEFAULTS } from './dispatch/defaults.ts';
import { MAX_QUOTA } from './domain/quotas.ts';
import { DEFAULT_DATA_DIR, DEFAULT_HOST, DEFAULT_PORT } from './process-defaults.ts';

export { DEFAULT_DATA_DIR, DEFAULT_HOST, DEFAULT_PORT };
/** Finished runs (and their attempts) older than this many days are pruned; 0 keeps them forever. */
export const DEFAULT_RETENTION_DAYS = 30;
/** Audit entries older than this many days are pruned; 0 keeps them forever. */
export const DEFAULT_AUDIT_RETENTION_DAYS = 365;
/** The JWT signing key is rotated when older than this many days; the retired key stays in the JWKS a while. */
export const DEFAULT_JWT_KEY_MAX_AGE_DAYS = 30;

const DAY_MS = 86_400_000;
const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const positiveInt = z.coerce.number().int().positive();
/** A quota's default (0 = no limit). */
const quota = z.coerce.number().int().min(0).max(MAX_QUOTA);

const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(DEFAULT_PORT),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  CHIME_DATA_DIR: z.string().min(1).default(DEFAULT_DATA_DIR),
  CHIME_EMBEDDED_SYNC: z.enum(['on', 'off']).default('on'),
  CHIME_MIGRATE: bool.optional(),
  CHIME_ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  CHIME_SIGNUP: z.enum(['open', 'closed']).default('closed'),
  CHIME_ENCRYPTION_KEY: z.string().optional(),
  CHIME_ALLOW_PRIVATE_DESTINATIONS: bool.default(false),
  HOST: z.string().min(1).default(DEFAULT_HOST),
  CHIME_METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  CHIME_PUBLIC_URL: z
    .string()
    .regex(/^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/, 'must be an http:// or https:// URL without query or fragment')
    .optional(),
  CHIME_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  CHIME_DISPATCH_CONCURRENCY: positiveInt.optional(),
  CHIME_DISPATCH_PER_DESTINATION: positiveInt.default(DISPATCHER_DEFAULTS.perDestination),
  CHIME_ADAPTIVE_CONCURRENCY: bool.default(DISPATCHER_DEFAULTS.adaptiveConcurrency),
  CHIME_DISPATCH_BATCH_SIZE: positiveInt.max(1000).default(DISPATCHER_DEFAULTS.batchSize),
  CHIME_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(DISPATCHER_DEFAULTS.shutdownGraceMs),
  CHIME_LEASE_MARGIN_MS: z.coerce.number().int().min(0).default(DISPATCHER_DEFAULTS.leaseMarginMs),
  CHIME_REAP_INTERVAL_MS: positiveInt.default(DISPATCHER_DEFAULTS.reapIntervalMs),
  CHIME_RATE_LIMIT_PER_SECOND: z.coerce.number().int().min(0).optional(),
  CHIME_RATE_LIMIT_BURST: positiveInt.optional(),
  CHIME_MAX_ACTIVE_JOBS: z.coerce.number().int().min(0).optional(),
  CHIME_QUOTA_MAX_JOBS: quota.optional(),
  CHIME_QUOTA_REQUESTS_PER_SECOND: quota.optional(),
  CHIME_QUOTA_CALLBACKS_PER_DAY: quota.optional(),
  CHIME_RETENTION_DAYS: z.coerce.number().min(0).default(DEFAULT_RETENTION_DAYS),
  CHIME_AUDIT_RETENTION_DAYS: z.coerce.number().min(0).default(DEFAULT_AUDIT_RETENTION_DAYS),
  CHIME_JWT_KEY_MAX_AGE_DAYS: z.coerce.number().positive().default(DEFAULT_JWT_KEY_MAX_AGE_DAYS),
});

export type Config = {
  port: number;
  /** Address to listen on (HOST). */
  host: string;
  databaseUrl: string | null;
  dataDir: string;
  /** Whether the embedded database syncs each commit to disk (CHIME_EMBEDDED_SYNC; off: not crash-safe). */
  embeddedSync: boolean;
  /**
   * Whether `serve` (and the other commands but `migrate`) applies pending migrations first (CHIME_MIGRATE); otherwise
   * it checks the schema and refuses a database that is behind. Default: on the embedded database, not on PostgreSQL,
   * where an operator migrates with a role that owns the schema (README "Database roles").
   */
  migrate: boolean;
  adminToken: string | null;
  signup: 'open' | 'closed';
  /** Base64 of 32 bytes, or null to use/generate the key file of the embedded database. */
  encryptionKey: string | null;
  allowPrivateDestinations: boolean;
  /** Bearer token that `GET /metrics` requires; null = `/metrics` answers 404. */
  metricsToken: string | null;
  /**
   * The service's public base URL (CHIME_PUBLIC_URL, no trailing slash): async jobs' receivers report to
   * `<publicUrl>/v1/runs/:runId/completion`. Null: `http://localhost:<the port the process listens on>`.
   */
  publicUrl: string | null;
  logLevel: string;
  dispatch: {
    concurrency: number;
    perDestination: number;
    /** Whether each destination's limit adapts between 1 and `perDestination` (CHIME_ADAPTIVE_CONCURRENCY). */
    adaptiveConcurrency: boolean;
    batchSize: number;
    shutdownGraceMs: number;
    /** Lease = callback timeout + this, in ms. */
    leaseMarginMs: number;
    /** How often expired leases are reaped, in ms. */
    reapIntervalMs: number;
  };
  /**
   * The default per-tenant quotas (a tenant's overrides in `tenants.quotas` take precedence; 0 = no limit):
   * `ratePerSecond` requests a second across all API processes together (CHIME_QUOTA_REQUESTS_PER_SECOND, else the
   * older CHIME_RATE_LIMIT_PER_SECOND), `burst` (CHIME_RATE_LIMIT_BURST, default twice the rate), `maxActiveJobs`
   * (CHIME_QUOTA_MAX_JOBS, else the older CHIME_MAX_ACTIVE_JOBS) and `callbacksPerDay` (CHIME_QUOTA_CALLBACKS_PER_DAY).
   */
  limits: { ratePerSecond: number; burst: number; maxActiveJobs: number; callbacksPerDay: number };
  /** Age in ms after which finished runs are pruned; 0 = never. */
  retentionMs: number;
  /** Age in ms after which audit entries are pruned; 0 = never. */
  auditRetentionMs: number;
  /** Age in ms after which the JWT signing key is rotated. */
  jwtKeyMaxAgeMs: number;
};

/** A configuration problem, naming the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * The dispatcher's default concurrency on the embedded database. There the database runs on the process's own event
 * loop: once that loop is busy, a callback's round trip is the callbacks in flight over the rate it can drive (Little's
 * law): beyond what it can drive, more in flight barely adds throughput but delays every callback, another tenant's
 * too (test/bench/README.md, "Measurements behind defaults").
 */
export const EMBEDDED_DISPATCH_CONCURRENCY = 64;

/**
 * The default quotas. The CHIME_QUOTA_* names (API.md "Operating tenants") came after CHIME_MAX_ACTIVE_JOBS and
 * CHIME_RATE_LIMIT_PER_SECOND; a deployment that set only the older names (or none) keeps the limits it had, with their
 * defaults (100,000 jobs, 100 requests a second): an unset CHIME_QUOTA_* variable falls back to its older name, and
 * sets no limit of its own (`CHIME_QUOTA_CALLBACKS_PER_DAY`, which has no older name: unset = unlimited). When both
 * are set, the CHIME_QUOTA_* one wins.
 */
function quotaDefaults(e: z.infer<typeof EnvSchema>): Config['limits'] {
  // Unset is unlimited (API.md "Access control and audit"); the older names still count where they are set.
  const ratePerSecond = e.CHIME_QUOTA_REQUESTS_PER_SECOND ?? e.CHIME_RATE_LIMIT_PER_SECOND ?? 0;
  return {
    ratePerSecond,
    burst: e.CHIME_RATE_LIMIT_BURST ?? 2 * ratePerSecond,
    maxActiveJobs: e.CHIME_QUOTA_MAX_JOBS ?? e.CHIME_MAX_ACTIVE_JOBS ?? 0,
    callbacksPerDay: e.CHIME_QUOTA_CALLBACKS_PER_DAY ?? 0,
  };
}

/**
 * Parses the environment.
 * @throws ConfigError naming every bad variable
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const r = EnvSchema.safeParse(env);
  if (!r.success) {
    throw new ConfigError(r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  }
  const e = r.data;
  if (e.DATABASE_URL && !e.CHIME_ENCRYPTION_KEY) {
    throw new ConfigError('CHIME_ENCRYPTION_KEY: required with DATABASE_URL (32 random bytes, base64: `openssl rand -base64 32`)');
  }
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL ?? null,
    dataDir: e.CHIME_DATA_DIR,
    embeddedSync: e.CHIME_EMBEDDED_SYNC === 'on',
    migrate: e.CHIME_MIGRATE ?? !e.DATABASE_URL,
    adminToken: e.CHIME_ADMIN_TOKEN ?? null,
    signup: e.CHIME_SIGNUP,
    encryptionKey: e.CHIME_ENCRYPTION_KEY ?? null,
    allowPrivateDestinations: e.CHIME_ALLOW_PRIVATE_DESTINATIONS,
    metricsToken: e.CHIME_METRICS_TOKEN ?? null,
    publicUrl: e.CHIME_PUBLIC_URL?.replace(/\/+$/, '') ?? null,
    logLevel: e.CHIME_LOG_LEVEL,
    dispatch: {
      concurrency: e.CHIME_DISPATCH_CONCURRENCY ?? (e.DATABASE_URL ? DISPATCHER_DEFAULTS.concurrency : EMBEDDED_DISPATCH_CONCURRENCY),
      perDestination: e.CHIME_DISPATCH_PER_DESTINATION,
      adaptiveConcurrency: e.CHIME_ADAPTIVE_CONCURRENCY,
      batchSize: e.CHIME_DISPATCH_BATCH_SIZE,
      shutdownGraceMs: e.CHIME_SHUTDOWN_GRACE_MS,
      leaseMarginMs: e.CHIME_LEASE_MARGIN_MS,
      reapIntervalMs: e.CHIME_REAP_INTERVAL_MS,
    },
    limits: quotaDefaults(e),
    retentionMs: Math.round(e.CHIME_RETENTION_DAYS * DAY_MS),
    auditRetentionMs: Math.round(e.CHIME_AUDIT_RETENTION_DAYS * DAY_MS),
    jwtKeyMaxAgeMs: Math.round(e.CHIME_JWT_KEY_MAX_AGE_DAYS * DAY_MS),
  };
}
