/**
 * The job fields of API.md "Destination control" as zod schemas (through @hono/zod-openapi, so they are in the OpenAPI
 * document): `callback.auth`, `callback.contentType`, `callback.jwtAudience`, `body`, `flowControlKey`, and the
 * retry policy with its `schedule` strategy. Field rules live in src/domain (callback-body.ts, retry.ts); schemas.ts
 * puts these into the job's schemas.
 */
import { z } from '@hono/zod-openapi';
import {
  basicUsernameIssue,
  clientCredentialIssue,
  contentTypeIssue,
  MAX_CALLBACK_BODY_BYTES,
  noControlsIssue,
  scopeIssue,
  utf8Length,
} from '../domain/callback-body.ts';
import {
  MAX_ATTEMPTS_LIMIT,
  MAX_BACKOFF_MS,
  MAX_SCHEDULE_DELAY_MS,
  MAX_SCHEDULE_DELAYS,
  MIN_SCHEDULE_DELAYS,
  RETRY_STRATEGIES,
  scheduleAttemptsIssue,
} from '../domain/retry.ts';

const int = (min: number, max: number) => z.number().int().min(min).max(max);

/** `s` that also passes `issue` (a rule of src/domain/callback-body.ts), its message the field error's. */
const ruled = (s: z.ZodString, issue: (v: string) => string | null) =>
  s.superRefine((v, ctx) => {
    const message = issue(v);
    if (message) ctx.addIssue({ code: 'custom', message });
  });

/** Basic auth (RFC 7617): the password is write-only, sealed at rest; may be empty (an API key as the user-id). */
const BasicAuthFields = {
  type: z.literal('basic'),
  username: ruled(z.string().min(1).max(256), basicUsernameIssue),
  password: ruled(z.string().max(1024), noControlsIssue),
};
/** OAuth2 client credentials (RFC 6749 §4.4): the client secret is write-only, sealed at rest. */
const OAuth2AuthFields = {
  type: z.literal('oauth2'),
  tokenUrl: z.string().min(1).max(2048),
  clientId: ruled(z.string().min(1).max(256), clientCredentialIssue),
  clientSecret: ruled(z.string().min(1).max(1024), clientCredentialIssue),
  scope: ruled(z.string().min(1).max(1024), scopeIssue).optional(),
  audience: ruled(z.string().min(1).max(1024), noControlsIssue).optional(),
};

/**
 * `callback.auth` (API.md "Destination control"): `basic`, sent as `Authorization: Basic`, or `oauth2`, whose token
 * Chime fetches from `tokenUrl` (through the destination guard), caches and sends as `Authorization: Bearer`.
 */
export const CallbackAuthSchema = z
  .discriminatedUnion('type', [z.strictObject(BasicAuthFields), z.strictObject(OAuth2AuthFields)])
  .openapi('CallbackAuth', {
    description:
      '`{ "type": "basic", "username", "password" }` or `{ "type": "oauth2", "tokenUrl", "clientId", "clientSecret", "scope"?, "audience"? }` ' +
      '(client credentials, RFC 6749 §4.4). The password and the client secret are write-only and stored encrypted. Not with `authToken`.',
  });

/**
 * A PATCH's `callback.auth`: as `CallbackAuthSchema`, but the secret may be left out to keep the job's (same type).
 */
export const CallbackAuthPatchSchema = z.discriminatedUnion('type', [
  z.strictObject({ ...BasicAuthFields, password: BasicAuthFields.password.optional() }),
  z.strictObject({ ...OAuth2AuthFields, clientSecret: OAuth2AuthFields.clientSecret.optional() }),
]);

/** `callback.contentType`: an RFC 9110 media type, UTF-8 if a charset is named (`contentTypeIssue`). */
export const ContentTypeSchema = ruled(z.string(), contentTypeIssue).openapi({
  description: "The request's media type; default `application/json` with `payload`, `text/plain` with `body`. A charset must be utf-8.",
  example: 'application/xml',
});
/** `callback.jwtAudience`: the `aud` claim of `Chime-Signature`. */
export const JwtAudienceSchema = ruled(z.string().min(1).max(1024), noControlsIssue);

/** A job's `body`: text sent as is instead of `payload`, at most MAX_CALLBACK_BODY_BYTES in UTF-8. */
export const CallbackBodySchema = z
  .string()
  .refine((v) => utf8Length(v) <= MAX_CALLBACK_BODY_BYTES, `at most ${MAX_CALLBACK_BODY_BYTES} bytes (256 KiB) as UTF-8`)
  .openapi({
    description: 'A body that is not JSON, sent as is (UTF-8) instead of `payload`; ≤ 256 KiB. Not with `payload`, not for GET.',
  });

/** A job's `flowControlKey`: names one of the tenant's flow controls (API.md "Destination control"). */
export const FlowControlKeySchema = z.string().regex(/^[A-Za-z0-9._:-]{1,100}$/, '1..100 of A-Za-z0-9 . _ : -');

/** The fields of a job's `retry` (src/domain/retry.ts), unchecked against each other: a PATCH's, merged with the job's. */
export const RetryFieldsSchema = z.strictObject({
  strategy: z.enum(RETRY_STRATEGIES).optional(),
  maxAttempts: int(1, MAX_ATTEMPTS_LIMIT).optional(),
  initialDelayMs: int(0, MAX_BACKOFF_MS).optional(),
  maxDelayMs: int(0, MAX_BACKOFF_MS).optional(),
  multiplier: z.number().min(1).max(10).optional(),
  jitter: z.boolean().optional(),
  delaysMs: z
    .array(int(0, MAX_SCHEDULE_DELAY_MS))
    .min(MIN_SCHEDULE_DELAYS)
    .max(MAX_SCHEDULE_DELAYS)
    .optional()
    .openapi({ description: 'strategy "schedule" only: the wait before retry n is delaysMs[n−1] (1..50 entries, each 0..86400000 ms)' }),
});

/**
 * Why a retry policy's fields do not go together, as field errors under `retry.`: `strategy: "schedule"` needs
 * `delaysMs`, and a `maxAttempts` sent with it must be `delaysMs.length + 1` (refused rather than ignored: a client
 * that says 5 attempts and lists 2 delays has made a mistake); `delaysMs` with any other strategy is refused.
 * @param r the policy as it will be (a PATCH's fields over the job's strategy and delays), `maxAttempts` as sent
 */
export function retryIssues(r: {
  strategy?: string;
  maxAttempts?: number;
  delaysMs?: readonly number[];
}): { path: string; message: string }[] {
  if (r.strategy === 'schedule') {
    if (r.delaysMs === undefined) return [{ path: 'delaysMs', message: 'required with strategy "schedule"' }];
    const issue = scheduleAttemptsIssue(r.maxAttempts, r.delaysMs.length);
    return issue ? [{ path: 'maxAttempts', message: issue }] : [];
  }
  return r.delaysMs === undefined ? [] : [{ path: 'delaysMs', message: 'only with strategy "schedule"' }];
}

/** A job's `retry` as registered: `RetryFieldsSchema` whose fields go together (`retryIssues`). */
export const RetrySchema = RetryFieldsSchema.superRefine((r, ctx) => {
  for (const { path, message } of retryIssues(r)) ctx.addIssue({ code: 'custom', path: [path], message });
}).openapi('RetryPolicy', {
  description:
    'strategy exponential | linear | fixed | schedule | none. `schedule`: retry n waits `delaysMs[n−1]`, maxAttempts is delaysMs.length + 1, no jitter unless `jitter: true`; a Retry-After still raises a wait (up to maxDelayMs).',
});
