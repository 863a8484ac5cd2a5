/**
 * What a webhook scheduler built on pg-boss or graphile-worker has to do per callback to match what Chime does by
 * default (src/dispatch/callback-request.ts, sign.ts, jwt-node.ts, and the attempt log of src/store/schema.ts), used
 * by the same-work peers (peers/pgboss-worker.ts and peers/graphile-worker.ts with BENCH_SAME_WORK=1):
 *
 * 1. a Standard Webhooks signature over the body with the `standardwebhooks` package (the reference library a user
 *    would reach for), under a fixed `whsec_` secret, sent as `webhook-id` (the job id, the same on every attempt, as
 *    Chime's run id), `webhook-timestamp` and `webhook-signature`;
 * 2. an Ed25519 JWT signed with node:crypto's `sign` (the key generated once per worker process, imported once), its
 *    header `{ alg: 'EdDSA', kid, typ: 'JWT' }` and its claims as Chime's: iss, sub = the callback URL, iat, exp
 *    (iat + 300 s), jti = `<job id>.<attempt>`, body = base64url(SHA-256(body)); sent as `chime-signature`;
 * 3. once the response is in (or the request failed), one INSERT of the attempt into the history table `bench_attempts`
 *    in the same database, through the worker's own connection pool, so every attempt can be listed later as Chime's
 *    `GET /v1/runs/:runId` lists them. The table's primary key (job_id, attempt) is the lookup that needs, and the only
 *    index, as Chime's `attempts` has only its primary key.
 *
 * The HTTP client is the raw peers' (peers/post.ts); the `bench-id` and `bench-scheduled-for` headers stay, for the
 * receiver's lag figures. A failed attempt is recorded with its error, then thrown, so the queue retries it as before.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomUUID, sign } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { type BenchPayload, createAgent, postJson } from './post.ts';

/** The fixed Standard Webhooks secret of the same-work peers (`whsec_` + base64 of 32 bytes). */
export const SAMEWORK_SECRET = `whsec_${Buffer.from('chime-bench-same-work-peer-secret').subarray(0, 32).toString('base64')}`;

/** The history table's name (in the `public` schema of the peer's database). */
export const HISTORY_TABLE = 'bench_attempts';

/** Creates the history table (run by the peer families' schema install, systems/pgboss.ts and systems/graphile.ts). */
export const HISTORY_DDL = `create table if not exists public.${HISTORY_TABLE} (
  job_id text not null,
  attempt int not null,
  started_at timestamptz not null,
  finished_at timestamptz not null,
  response_status int,
  error text,
  primary key (job_id, attempt)
)`;

/** One attempt: $1 job id, $2 attempt (1 for the first), $3 started, $4 finished, $5 HTTP status or null, $6 error or null. */
export const HISTORY_INSERT = `insert into public.${HISTORY_TABLE} (job_id, attempt, started_at, finished_at, response_status, error) values ($1, $2, $3, $4, $5, $6)`;

/** The `iss` claim (Chime's is `chime`). */
const JWT_ISSUER = 'bench-peer';
/** Lifetime of a token, in seconds (Chime's JWT_TTL_SECONDS). */
const JWT_TTL_SECONDS = 300;

/** Runs one SQL statement through the worker's own pool (pg-boss `getDb().executeSql`, graphile-worker `helpers.query`). */
export type Execute = (text: string, values: unknown[]) => Promise<unknown>;

/**
 * Delivers one attempt of job `jobId`: signs, POSTs, records it in the history table through `execute`; throws when
 * the callback failed (after recording it).
 */
export type SameWorkDeliver = (url: string, jobId: string, attempt: number, payload: BenchPayload, execute: Execute) => Promise<void>;

/** An Ed25519 key made for this process, with its `kid`: what a user's worker would load from its key store. */
export type JwtKey = { kid: string; privateKey: KeyObject; publicKey: KeyObject };

/** Generates the process's Ed25519 signing key (once per worker process). */
export function generateJwtKey(): JwtKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { kid: randomUUID(), privateKey, publicKey };
}

/** A signer of `chime-signature` JWTs with `key` (EdDSA, node:crypto `sign`). */
export function jwtSigner(key: JwtKey): (claims: { sub: string; jti: string; body: string; iatSec: number }) => string {
  const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', kid: key.kid, typ: 'JWT' })).toString('base64url');
  return ({ sub, jti, body, iatSec }) => {
    const claims = {
      iss: JWT_ISSUER,
      sub,
      iat: iatSec,
      exp: iatSec + JWT_TTL_SECONDS,
      jti,
      body: createHash('sha256').update(body).digest('base64url'),
    };
    const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
    return `${input}.${sign(null, Buffer.from(input), key.privateKey).toString('base64url')}`;
  };
}

/** Makes the per-callback work of a same-work peer, with its HTTP client and its signing key (one per process). */
export function createSameWork(key: JwtKey = generateJwtKey()): SameWorkDeliver {
  const agent = createAgent();
  const webhook = new Webhook(SAMEWORK_SECRET);
  const signJwt = jwtSigner(key);
  return async (url, jobId, attempt, payload, execute) => {
    const body = JSON.stringify(payload);
    const started = new Date();
    const headers = {
      'webhook-id': jobId,
      'webhook-timestamp': String(Math.floor(started.getTime() / 1000)),
      'webhook-signature': webhook.sign(jobId, started, body),
      'chime-signature': signJwt({ sub: url, jti: `${jobId}.${attempt}`, body, iatSec: Math.floor(started.getTime() / 1000) }),
    };
    let status: number | null = null;
    let error: string | null = null;
    try {
      status = await postJson(agent, url, jobId, payload, body, headers);
      if (status < 200 || status > 299) error = `callback answered ${status}`;
    } catch (err) {
      error = String((err as Error).message ?? err);
    }
    await execute(HISTORY_INSERT, [jobId, attempt, started, new Date(), status, error]);
    if (error !== null) throw new Error(error);
  };
}
