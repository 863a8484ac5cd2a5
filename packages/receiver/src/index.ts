/**
 * `@chime/receiver`: verifying Chime's signed callbacks on the receiving side (API.md "The callback request").
 *
 * - `verifyWebhook(request, secrets, opts?)`: the Standard Webhooks signature (`webhook-id`, `webhook-timestamp`,
 *   `webhook-signature`: HMAC-SHA256 under the tenant's `whsec_…` secret; several secrets during a rotation);
 * - `verifyChimeSignature(request, { jwksUrl })`: the `Chime-Signature` JWT against the service's JWKS, bound to the
 *   receiver's URL and the body;
 * - `verifyAll(request, { secrets, jwksUrl? })`: both.
 *
 * Each resolves to `{ ok: true, id, timestamp }` or `{ ok: false, reason }` and never rejects for a forged request.
 * WebCrypto only, no `node:` module: Node ≥ 20, Workers, Deno, Bun. Framework helpers live in subpaths, so this entry
 * loads no framework: `@chime/receiver/hono` (`chimeWebhook`), `@chime/receiver/node` (`readRawBody`,
 * `expressWebhook`).
 *
 * This file only re-exports: it has no import statement of its own (test/receiver/listen.test.ts checks that).
 */
export type { VerifiedWebhook, VerificationFailure, VerifyResult } from './result.ts';
export type { HeadersLike } from './internal.ts';
export {
  DEFAULT_TOLERANCE_SECONDS,
  SECRET_PREFIX,
  decodeSigningSecret,
  verifyWebhook,
  type VerifyOptions,
  type WebhookRequest,
} from './standard-webhooks.ts';
export {
  DEFAULT_CLOCK_TOLERANCE_SECONDS,
  JWT_ALGORITHMS,
  JWT_ISSUER,
  bodyHash,
  verifyChimeSignature,
  type ChimeSignatureOptions,
  type ChimeSignatureRequest,
} from './chime-signature.ts';
export { verifyAll, type VerifyAllOptions } from './verify-all.ts';
