/**
 * The audit log's vocabulary (API.md "Access control and audit"): who made a change, and what it was. The store writes
 * entries in the transaction of their change (src/store/audit-log.ts); the API lists them (`GET /v1/audit-log`).
 */

/** Who made a change: a tenant's API key, the operator (admin token), or Chime itself, saying why. */
export type AuditActor = { type: 'api_key'; keyId: string; prefix: string } | { type: 'admin' } | { type: 'system'; reason: string };

/** The actions an entry may name; `job.*` and `run.*` targets are jobs and runs, the rest name their own type. */
export const AUDIT_ACTIONS = [
  'job.created',
  'job.updated',
  'job.replaced',
  'job.paused',
  'job.resumed',
  'job.canceled',
  'job.triggered',
  'job.backfilled',
  'jobs.bulk',
  'run.replayed',
  'dead_letter.dismissed',
  'api_key.created',
  'api_key.revoked',
  'signing_secret.rotated',
  'notification_endpoint.created',
  'notification_endpoint.deleted',
  'tenant.created',
  'tenant.suspended',
  'tenant.resumed',
  'tenant.quotas_changed',
  'flow_control.created',
  'flow_control.updated',
  'flow_control.deleted',
  'calendar.created',
  'calendar.updated',
  'calendar.deleted',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * One change to record: its action, what it changed (`target.type`: `job`, `run`, `api_key`, `signing_secret`,
 * `notification_endpoint`, `tenant`), and for updates the names of the fields it changed (never their values).
 */
export type AuditChange = { action: AuditAction; target: { type: string; id: string }; changes?: readonly string[] };

/**
 * Where a change comes from: its actor and the request that carried it (`X-Request-Id`; null for a change no request
 * made), with the request's W3C `traceparent` when tracing is on (a created job keeps it, so its runs link to it).
 */
export type ChangeSource = { actor: AuditActor; requestId: string | null; traceParent?: string | null };
