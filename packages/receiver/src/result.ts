/**
 * What both verifiers resolve to (API.md "The callback request"): never a thrown error for a forged or malformed
 * request, always one of these.
 */

/**
 * A request that verified.
 * - `id`: the message id to deduplicate on (Chime: the run id, the same on every attempt of a run);
 * - `timestamp`: when Chime sent this attempt, integer Unix seconds (`webhook-timestamp`, or the JWT's `iat`).
 */
export type VerifiedWebhook = { ok: true; id: string; timestamp: number };

/** A request that did not verify: `reason` says why in words fit for a log line (never a secret or an expected signature). */
export type VerificationFailure = { ok: false; reason: string };

/** The verdict of `verifyWebhook`, `verifyChimeSignature` and `verifyAll`. */
export type VerifyResult = VerifiedWebhook | VerificationFailure;
