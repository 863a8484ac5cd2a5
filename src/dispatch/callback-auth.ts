/**
 * `callback.auth` on the wire (API.md "Destination control"): `basic` as `Authorization: Basic` (RFC 7617), built
 * with the request (callback-request.ts); `oauth2` as `Authorization: Bearer` (RFC 6750 §2.1) with a token of the
 * client credentials grant (oauth-token.ts), added here just before the request leaves, and refreshed once when the
 * callback answers `401`, within the same attempt.
 *
 * One deadline covers the attempt: the token request(s) and the callback request(s) together get the callback's
 * `timeoutMs`, so the run's lease (timeout + margin) still covers the attempt.
 */
import { ERROR_CLASS, type HttpResult } from '../domain/attempt-outcome.ts';
import type { ClaimedRun } from '../domain/claimed-run.ts';
import type { Clock } from '../domain/clock.ts';
import type { CallbackRequest } from './deliver.ts';
import type { Keyring } from './keyring.ts';
import { base64Utf8, type OAuth2Client, type OAuthTokens } from './oauth-token.ts';

/** HTTP 401: the receiver refused the credentials (RFC 9110 §15.5.2); an OAuth2 token is then refreshed once. */
const UNAUTHORIZED = 401;

/**
 * The `Authorization` value of basic auth (RFC 7617 §2): `Basic ` and base64 of `user-id:password` in UTF-8
 * (the `charset="UTF-8"` of §2.1, which is what receivers decode today).
 */
export function basicAuthorization(username: string, password: string): string {
  return `Basic ${base64Utf8(`${username}:${password}`)}`;
}

/** What `sendWithAuth` needs besides the request: the clock, the keyring (for the client secret) and the tokens. */
export type AuthDeps = { clock: Clock; keyring: Keyring; tokens: OAuthTokens };

/**
 * Sends `req` with the run's OAuth2 token when its callback has `auth.type` `oauth2`, else sends it as built.
 *
 * OAuth2: the token (cached or fetched, `OAuthTokens.get`) goes in `Authorization: Bearer`; a `401` answer gets one
 * new token (`refresh`) and one more request, whose result is the attempt's. A token that cannot be had fails the
 * attempt with `auth_token_failed`: before the first request nothing of the callback left (`maybeSent: false`, so an
 * at-most-once run may be retried); after a `401` the first request did reach the receiver (`maybeSent: true`). The
 * resend after a `401` happens in at-most-once mode too: a `401` says the request was refused, not acted on.
 * @param send sends one request (the attempt's `Deliver`, traced when tracing), `timeoutMs` already set
 * @param abandoned true when the run's lease was given back meanwhile: nothing more is sent
 * @param startedAtMs the attempt's start (epoch ms): the deadline is it + the callback's `timeoutMs`
 * @returns the result of the last request, or the token failure; null when abandoned before the first request
 */
export async function sendWithAuth(
  run: ClaimedRun,
  req: CallbackRequest,
  deps: AuthDeps,
  send: (req: CallbackRequest) => Promise<HttpResult>,
  abandoned: () => boolean,
  startedAtMs: number,
): Promise<HttpResult | null> {
  const auth = run.callback.auth;
  if (auth?.type !== 'oauth2') return abandoned() ? null : send(req);
  const deadline = startedAtMs + run.callback.timeoutMs;
  const left = () => deadline - deps.clock.now();
  let client: OAuth2Client;
  try {
    if (!run.authSecretEnc) throw new Error('the job has no OAuth2 client secret');
    client = { ...auth, clientSecret: await deps.keyring.openAuthToken(run.authSecretEnc) };
  } catch (err) {
    return tokenFailure(`the client secret could not be opened: ${(err as Error).message}`, false);
  }
  const first = await deps.tokens.get(client, left());
  if (!first.ok) return tokenFailure(first.message, false);
  if (abandoned()) return null;
  const result = await sendBearer(req, first.token, left(), send);
  if (result.kind !== 'response' || result.status !== UNAUTHORIZED) return result;
  const renewed = await deps.tokens.refresh(client, first.token, left());
  if (!renewed.ok) return tokenFailure(`${renewed.message} (refreshing after a 401)`, true);
  if (abandoned() || left() <= 0) return result;
  return sendBearer(req, renewed.token, left(), send);
}

/** `req` with `token` as its bearer, sent within `timeoutMs` (a timeout that sent nothing when none is left). */
function sendBearer(req: CallbackRequest, token: string, timeoutMs: number, send: (req: CallbackRequest) => Promise<HttpResult>) {
  if (timeoutMs <= 0) {
    return Promise.resolve<HttpResult>({
      kind: 'error',
      errorClass: ERROR_CLASS.timeout,
      message: 'timed out: the token request took the whole callback timeout',
      maybeSent: false,
    });
  }
  return send({ ...req, headers: { ...req.headers, authorization: `Bearer ${token}` }, timeoutMs });
}

/** An attempt failed for want of a token (`auth_token_failed`). */
function tokenFailure(message: string, maybeSent: boolean): HttpResult {
  return { kind: 'error', errorClass: ERROR_CLASS.authTokenFailed, message: `OAuth2 token: ${message}`, maybeSent };
}
