/**
 * The API's shapes as the console reads them, inferred from the service's own zod schemas (type-only imports:
 * nothing of zod reaches the browser bundle), so a change of the API is a type error here.
 */
import type { z } from 'zod';
import type { AuditEntrySchema } from '../../api/routes/audit-log.ts';
import type { CalendarSchema } from '../../api/routes/calendars.ts';
import type { FlowControlSchema } from '../../api/routes/flow-controls.ts';
import type { ResultDeliverySchema } from '../../api/routes/result-deliveries.ts';
import type { ApiKeySchema, CallerTenantSchema, SigningSecretRotationSchema } from '../../api/routes/tenants.ts';
import type { UsageSchema } from '../../api/routes/usage.ts';
import type { AttemptSchema, JobBodySchema, JobSchema, RunSchema, ScheduleSchema } from '../../api/schemas.ts';

export type Job = z.infer<typeof JobSchema>;
export type JobInput = z.input<typeof JobBodySchema>;
export type Schedule = z.infer<typeof ScheduleSchema>;
/** A schedule a union may hold (not `delay`, not another union). */
export type UnionMember = Extract<Schedule, { type: 'union' }>['schedules'][number];
export type Run = z.infer<typeof RunSchema>;
export type Attempt = z.infer<typeof AttemptSchema>;
export type RunWithAttempts = Run & { attemptLog: Attempt[] };
export type ApiKey = z.infer<typeof ApiKeySchema>;
/** `GET /v1/tenant`: the signed-in tenant and its key (`apiKey.scopes`: what the console may offer). */
export type Tenant = z.infer<typeof CallerTenantSchema>;
/** `POST /v1/api-keys`: the key's listing and the key itself (shown once). */
export type CreatedKey = ApiKey & { key: string };
/** `POST /v1/signing-secrets/rotate`: the new secret (shown once) and the end of the previous one's overlap. */
export type Rotated = z.infer<typeof SigningSecretRotationSchema>;
/** A job's result delivery (`GET /v1/jobs/:jobId/result-deliveries`). */
export type ResultDelivery = z.infer<typeof ResultDeliverySchema>;
/** An entry of `GET /v1/audit-log`. */
export type AuditEntry = z.infer<typeof AuditEntrySchema>;
/** `GET /v1/usage`. */
export type Usage = z.infer<typeof UsageSchema>;

export type FlowControl = z.infer<typeof FlowControlSchema>;

/**
 * A tenant's calendar (`GET /v1/calendars/:key`): its zone, weekend days (0 = Sunday), holidays (local dates,
 * `YYYY-MM-DD`), and `jobs`, the open jobs that use it.
 */
export type Calendar = z.infer<typeof CalendarSchema>;
/** An occurrence a calendar moved (`firesAt`: where it fires) or skipped (`firesAt: null`), as the preview lists them. */
export type CalendarMove = { occurrence: string; firesAt: string | null };
/** `POST /v1/schedules/preview`: the firing times (the calendar applied), and what the calendar moved or skipped. */
export type SchedulePreview = { occurrences: string[]; calendar?: CalendarMove[] };
/** A page of a list: the items under their field, and the cursor of the next page (null on the last). */
export type Page<K extends string, T> = { [k in K]: T[] } & { nextCursor: string | null };
/** A field the API named in a `400` (`path` as in the request body, dotted: `callback.url`). */
export type FieldError = { path: string; message: string };
