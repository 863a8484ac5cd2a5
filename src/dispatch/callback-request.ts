/**
 * Builds the HTTP request of one attempt (API.md "The callback request"): the payload as JSON, the Standard
 * Webhooks headers (`webhook-id` = run id on every attempt, so receivers can deduplicate), the Chime-Signature JWT,
 * the Chime-* context headers, the job's auth token and custom headers. A notification event's delivery carries the
 * same signatures (`webhook-id` = the event id), `Chime-Run-Id` (the delivery id) and `Chime-Attempt`, but not the
 * hidden job's `Chime-Job-Id` and `Chime-Scheduled-For`.
 */
import { sendableCallbackHeaders } from '../domain/callback-headers.ts';
import type { ClaimedRun } from '../domain/claimed-run.ts';
import { RUN_TRIGGER } from '../domain/states.ts';
import type { CallbackRequest } from './deliver.ts';
import type { Keyring } from './keyring.ts';
import { standardWebhookSignature } from './sign.ts';

/**
 * The job's custom headers go out exactly as stored, except those the header rule refuses
 * (src/domain/callback-headers.ts): a job stored before the rule may hold one undici cannot send (`expect`, a DEL
 * byte), which would fail every attempt, or one Chime sets itself (`User-Agent`, `Content-Type`, Authorization next
 * to an authToken), which would go out beside Chime's or be overwritten by it. Those are left out.
 * @param nowMs the attempt's start (epoch ms): `webhook-timestamp` and the JWT's `iat`
 * @throws CipherError when the signing secrets or the auth token cannot be opened
 */
export async function buildCallbackRequest(run: ClaimedRun, keyring: Keyring, nowMs: number, userAgent: string): Promise<CallbackRequest> {
  const { callback } = run;
  const body = callback.method === 'GET' ? '' : JSON.stringify(run.payload ?? {});
  const timestamp = Math.floor(nowMs / 1000);
  const [secrets, signer, authToken] = await Promise.all([
    keyring.secretsFor(run.tenantId),
    keyring.jwtSigner(),
    run.authTokenEnc ? keyring.openAuthToken(run.authTokenEnc) : null,
  ]);
  const jwt = await signer.sign({ sub: callback.url, jti: `${run.runId}.${run.attempt}`, body, iatSec: timestamp });
  // A notification's deliveries share its event id (API.md), a callback's attempts their run id: the dedup key.
  const webhookId = run.eventId ?? run.runId;
  // An event delivery is a run of the endpoint's hidden job: that job's id and due time mean nothing to the receiver
  // (API.md names only the signatures), and the body names the job the event is about.
  const ofJob = run.trigger !== RUN_TRIGGER.notification;
  const headers: Record<string, string> = {
    ...sendableCallbackHeaders(callback.headers ?? {}, { hasAuthToken: Boolean(authToken) }),
    'user-agent': userAgent,
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardWebhookSignature(secrets, webhookId, timestamp, body),
    'chime-signature': jwt,
    ...(ofJob ? { 'chime-job-id': run.jobId } : {}),
    'chime-run-id': run.runId,
    'chime-attempt': String(run.attempt),
    ...(ofJob ? { 'chime-scheduled-for': new Date(run.scheduledForMs).toISOString() } : {}),
  };
  // An async job's attempt: where and with what credential its receiver reports the end (API.md "Long-running jobs").
  if (run.completion && keyring.completion) {
    const { url, token } = await keyring.completion(run.runId, run.shard, run.attempt);
    headers['chime-completion-url'] = url;
    headers['chime-completion-token'] = token;
  }
  if (body !== '') headers['content-type'] = 'application/json';
  if (authToken) headers.authorization = `Bearer ${authToken}`;
  return { url: callback.url, method: callback.method, headers, body: body === '' ? null : body, timeoutMs: callback.timeoutMs };
}
