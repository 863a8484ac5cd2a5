/**
 * Builds the HTTP request of one attempt (API.md "The callback request"): the payload as JSON or the job's `body` as
 * is (with `callback.contentType`), the Standard Webhooks headers (`webhook-id` = run id on every attempt, so receivers
 * can deduplicate), the Chime-Signature JWT (`aud` = `callback.jwtAudience`), the Chime-* context headers, the job's
 * auth token or basic credentials (an OAuth2 token is added by callback-auth.ts) and custom headers. Both signatures
 * cover the very text sent. A notification event's delivery carries the
 * same signatures (`webhook-id` = the event id), `Chime-Run-Id` (the delivery id) and `Chime-Attempt`, but not the
 * hidden job's `Chime-Job-Id` and `Chime-Scheduled-For`. A chained run's request carries `Chime-Upstream-Job-Id`,
 * `-Run-Id` and `-Status`, and its JSON object payload (or none) gains `upstream` (src/domain/chain.ts).
 */
import { callbackBody } from '../domain/callback-body.ts';
import { sendableCallbackHeaders } from '../domain/callback-headers.ts';
import { payloadWithUpstream, upstreamHeaders } from '../domain/chain.ts';
import type { ClaimedRun } from '../domain/claimed-run.ts';
import { RUN_TRIGGER } from '../domain/states.ts';
import { basicAuthorization } from './callback-auth.ts';
import type { CallbackRequest } from './deliver.ts';
import type { Keyring } from './keyring.ts';
import { standardWebhookSignature } from './sign.ts';

/**
 * The job's custom headers go out exactly as stored, except those the header rule refuses
 * (src/domain/callback-headers.ts): a job stored before the rule may hold one undici cannot send (`expect`, a DEL
 * byte), which would fail every attempt, or one Chime sets itself (`User-Agent`, `Content-Type`, Authorization next
 * to an authToken), which would go out beside Chime's or be overwritten by it. Those are left out.
 * @param nowMs the attempt's start (epoch ms): `webhook-timestamp` and the JWT's `iat`
 * @throws CipherError when the signing secrets, the auth token or the basic password cannot be opened
 */
export async function buildCallbackRequest(run: ClaimedRun, keyring: Keyring, nowMs: number, userAgent: string): Promise<CallbackRequest> {
  const { callback, upstream } = run;
  // A chained run's JSON object payload (or none) carries its upstream (API.md "Richer schedules"); what is signed is
  // what is sent, this included.
  const payload = upstream ? payloadWithUpstream(run.payload, upstream) : run.payload;
  const sent = callbackBody(callback.method, run.body, payload, callback.contentType);
  const body = sent?.text ?? '';
  const timestamp = Math.floor(nowMs / 1000);
  const basic = callback.auth?.type === 'basic' ? callback.auth : null;
  const [secrets, signer, authToken, password] = await Promise.all([
    keyring.secretsFor(run.tenantId),
    keyring.jwtSigner(),
    run.authTokenEnc ? keyring.openAuthToken(run.authTokenEnc) : null,
    // The sealed secret opens like an auth token (same cipher); an empty basic password is stored as none.
    basic && run.authSecretEnc ? keyring.openAuthToken(run.authSecretEnc) : '',
  ]);
  const jwt = await signer.sign({
    sub: callback.url,
    jti: `${run.runId}.${run.attempt}`,
    body,
    iatSec: timestamp,
    ...(callback.jwtAudience ? { aud: callback.jwtAudience } : {}),
  });
  // A notification's deliveries share its event id (API.md), a callback's attempts their run id: the dedup key.
  const webhookId = run.eventId ?? run.runId;
  // An event delivery is a run of the endpoint's hidden job: that job's id and due time mean nothing to the receiver
  // (API.md names only the signatures), and the body names the job the event is about.
  const ofJob = run.trigger !== RUN_TRIGGER.notification;
  const headers: Record<string, string> = {
    // Chime sets Authorization itself for a token or `callback.auth`: a stored one of the job's is left out.
    ...sendableCallbackHeaders(callback.headers ?? {}, { hasAuthToken: Boolean(authToken) || Boolean(callback.auth) }),
    'user-agent': userAgent,
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardWebhookSignature(secrets, webhookId, timestamp, body),
    'chime-signature': jwt,
    ...(ofJob ? { 'chime-job-id': run.jobId } : {}),
    'chime-run-id': run.runId,
    'chime-attempt': String(run.attempt),
    ...(ofJob ? { 'chime-scheduled-for': new Date(run.scheduledForMs).toISOString() } : {}),
    ...(upstream ? upstreamHeaders(upstream) : {}),
  };
  // An async job's attempt: where and with what credential its receiver reports the end (API.md "Long-running jobs").
  if (run.completion && keyring.completion) {
    const { url, token } = await keyring.completion(run.runId, run.shard, run.attempt);
    headers['chime-completion-url'] = url;
    headers['chime-completion-token'] = token;
  }
  if (sent) headers['content-type'] = sent.contentType;
  if (authToken) headers.authorization = `Bearer ${authToken}`;
  else if (basic) headers.authorization = basicAuthorization(basic.username, password);
  return { url: callback.url, method: callback.method, headers, body: sent ? body : null, timeoutMs: callback.timeoutMs };
}
