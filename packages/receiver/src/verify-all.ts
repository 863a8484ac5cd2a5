/**
 * Both signatures of a Chime callback at once: what the framework helpers (`@chime/receiver/hono`,
 * `@chime/receiver/node`) run.
 */
import { type ChimeSignatureOptions, keySetOf, verifyChimeSignature } from './chime-signature.ts';
import type { VerifyResult } from './result.ts';
import { decodeSecrets, type VerifyOptions, verifyWebhook, type WebhookRequest } from './standard-webhooks.ts';

/**
 * What `verifyAll` checks with: the Standard Webhooks `secrets` (always), and the JWKS (`jwksUrl` or `jwks`) when
 * the `Chime-Signature` JWT is to be verified too. The other fields are those of `verifyWebhook`
 * (`toleranceSeconds`) and `verifyChimeSignature` (`clockToleranceSeconds`), all in seconds.
 */
export type VerifyAllOptions = VerifyOptions &
  Omit<ChimeSignatureOptions, 'nowMs'> & {
    /** One `whsec_<base64>` secret or several (the new and the old one during a rotation). */
    secrets: string | readonly string[];
  };

/**
 * Verifies the Standard Webhooks signature (`verifyWebhook`) and, when `jwksUrl` or `jwks` is given, the
 * `Chime-Signature` JWT (`verifyChimeSignature`, against `request.url`); passes when every check passes.
 *
 * @param request the headers, the raw body and (needed with a JWKS) the URL this receiver is called at, as the job
 *   configured it
 * @param opts `secrets`, and `jwksUrl`/`jwks`, `toleranceSeconds`, `clockToleranceSeconds`, `nowMs`
 * @returns `{ ok: true, id, timestamp }` from the Standard Webhooks headers (`id` = `webhook-id`, authenticated by
 *   the HMAC; `timestamp` = `webhook-timestamp`, Unix seconds), or the first failure's `{ ok: false, reason }`
 *   (the reasons of `verifyWebhook`, then those of `verifyChimeSignature`); never rejects for a bad request
 * @throws TypeError on a configuration error (no or a malformed secret, a bad `jwksUrl`, no `request.url` while a
 *   JWKS is given, a body that is not a string)
 */
export async function verifyAll(request: WebhookRequest & { url?: string | URL }, opts: VerifyAllOptions): Promise<VerifyResult> {
  // Configuration first, so it throws whatever the request.
  const withJwt = checkVerifyAllOptions(opts);
  if (withJwt) {
    if (request.url === undefined || String(request.url) === '') {
      throw new TypeError('verifyAll: request.url (the URL this receiver is called at) is required to verify Chime-Signature');
    }
  }
  const webhook = await verifyWebhook(request, opts.secrets, opts);
  if (!webhook.ok || !withJwt) return webhook;
  const jwt = await verifyChimeSignature({ ...request, url: request.url! }, opts);
  return jwt.ok ? webhook : jwt;
}

/**
 * Checks `opts` as `verifyAll` would (the framework helpers call it once, when they are made).
 * @returns whether the JWT is to be verified too (a JWKS is given)
 * @throws TypeError when a secret or the JWKS configuration is not usable
 */
export function checkVerifyAllOptions(opts: VerifyAllOptions): boolean {
  if (typeof opts !== 'object' || opts === null) throw new TypeError('options { secrets, jwksUrl? } are required');
  decodeSecrets(opts.secrets);
  const withJwt = opts.jwksUrl !== undefined || opts.jwks !== undefined;
  if (withJwt) keySetOf(opts);
  return withJwt;
}

/**
 * The `url` option of a framework helper (`chimeWebhook`, `expressWebhook`), checked when the helper is made. It is
 * required whenever `Chime-Signature` is verified (a JWKS is given): the URL a server sees is built from the request's
 * own `Host` header, so a callback captured on the way to one receiver, replayed within the tolerance to another
 * receiver serving the same path with `Host` set to the first, would pass the JWT's URL binding.
 * @param helper the helper's name, for the message
 * @param withJwt whether a JWKS is given (`checkVerifyAllOptions`)
 * @returns the URL as a string, or undefined when no JWKS is given (then the URL is not checked)
 * @throws TypeError when a JWKS is given without `url`, or `url` is not an absolute http(s) URL
 */
export function helperUrl(helper: string, url: string | URL | undefined, withJwt: boolean): string | undefined {
  if (url === undefined || url === '') {
    if (!withJwt) return undefined;
    throw new TypeError(
      `${helper}: the url option is required with jwksUrl or jwks: the URL this route is called at, exactly as the job's callback.url ` +
        `(the Host header of a request cannot be trusted to say it)`,
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(String(url));
  } catch {
    throw new TypeError(`${helper}: the url option must be an absolute URL, not ${JSON.stringify(String(url))}`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    throw new TypeError(`${helper}: the url option must be an http or https URL`);
  return String(url);
}
