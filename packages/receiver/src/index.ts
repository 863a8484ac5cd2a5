/**
 * `@chime/receiver`: verifying Chime's signed callbacks on the receiving side (API.md "The callback request").
 *
 * - `verifyWebhook(request, secrets, opts?)`: the Standard Webhooks signature (`webhook-id`, `webhook-timestamp`,
 *   `webhook-signature`: HMAC-SHA256 under the tenant's `whsec_…` secret; several secrets during a rotation);
 * - `verifyChimeSignature(request, { jwksUrl })`: the `Chime-Signature` JWT against the service's JWKS, bound to the
 *   receiver's URL and the body;
 * - `verifyAll(request, { secrets, jwksUrl? })`: both;
 * - `completionOf(headers)`: an async job's attempt's `Chime-Completion-Url` and `-Token` with `complete(result)` and
 *   `heartbeat(progress?)` (API.md "Long-running jobs"); null for other jobs.
 *
 * Each resolves to `{ ok: true, id, timestamp }` or `{ ok: false, reason }` and never rejects for a forged request.
 * WebCrypto only, no `node:` module: Node ≥ 20, Workers, Deno, Bun. Framework helpers live in subpaths, so this entry
 * loads no framework: `@chime/receiver/hono` (`chimeWebhook`), `@chime/receiver/node` (`readRawBody`,
 * `expressWebhook`).
 *
 * This file only re-exports: it has no import statement of its own (test/receiver/listen.test.ts checks that).
 */

export {
  bodyHash,
  type ChimeSignatureOptions,
  type ChimeSignatureRequest,
  DEFAULT_CLOCK_TOLERANCE_SECONDS,
  JWT_ALGORITHMS,
  JWT_ISSUER,
  verifyChimeSignature,
} from './chime-signature.ts';
export {
  type ChimeCompletion,
  COMPLETION_TOKEN_HEADER,
  COMPLETION_URL_HEADER,
  CompletionError,
  type CompletionOptions,
  type CompletionResult,
  completionOf,
  type HeartbeatAnswer,
} from './completion.ts';
export type { HeadersLike } from './internal.ts';
export type { VerificationFailure, VerifiedWebhook, VerifyResult } from './result.ts';
export {
  DEFAULT_TOLERANCE_SECONDS,
  decodeSigningSecret,
  SECRET_PREFIX,
  type VerifyOptions,
  verifyWebhook,
  type WebhookRequest,
} from './standard-webhooks.ts';
export { type VerifyAllOptions, verifyAll } from './verify-all.ts';
