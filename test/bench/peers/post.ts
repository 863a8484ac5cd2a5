/**
 * The HTTP client every peer worker uses (the same-work peers' too, peers/same-work.ts), set up like Chime's
 * (src/dispatch/deliver.ts): an undici Agent with keep-alive (30 s idle) and `request` (not `fetch`), at most 16
 * connections per destination (Chime's default CHIME_DISPATCH_PER_DESTINATION), a 10 s timeout (Chime's default
 * callback timeout), the body read to the end so the connection is reused. A non-2xx answer throws, so the peer
 * records a failure and retries as it would.
 */
import { Agent } from 'undici';

/** Chime's default per-destination concurrency: callbacks in flight to one destination. */
export const CONNECTIONS_PER_DESTINATION = 16;
/** Chime's default callback timeout, in ms. */
export const TIMEOUT_MS = 10_000;

/**
 * What a peer job carries: the run number and its scheduled time (ISO 8601), sent as `bench-*` headers, and the
 * callback URL when it is not the worker's BENCH_CALLBACK_URL (the noisy workload's callbacks go to many destinations).
 */
export type BenchPayload = { n: number; scheduledFor: string; url?: string };

/** The payload of run `n` due at `dueAtMs`; with `urls`, its callback URL is `urls[n % urls.length]`. */
export function payload(n: number, dueAtMs: number, urls: readonly string[] | null): BenchPayload {
  const p: BenchPayload = { n, scheduledFor: new Date(dueAtMs).toISOString() };
  if (urls) p.url = urls[n % urls.length]!;
  return p;
}

/** The HTTP client of every peer worker: keep-alive 30 s, `CONNECTIONS_PER_DESTINATION` connections per origin. */
export function createAgent(): Agent {
  return new Agent({ keepAliveTimeout: 30_000, connections: CONNECTIONS_PER_DESTINATION });
}

/**
 * POSTs `body` (the JSON of `payload`) to `url` through `agent` with the bench headers (`bench-id` = `id`,
 * `bench-scheduled-for`) and `headers`, and reads the answer to the end so the connection is reused.
 * @returns the HTTP status @throws undici's error when the request fails or takes over TIMEOUT_MS
 */
export async function postJson(
  agent: Agent,
  url: string,
  id: string,
  payload: BenchPayload,
  body: string,
  headers: Record<string, string> = {},
): Promise<number> {
  const u = new URL(url);
  const res = await agent.request({
    origin: u.origin,
    path: `${u.pathname}${u.search}`,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers, 'bench-id': id, 'bench-scheduled-for': payload.scheduledFor },
    body,
    signal: AbortSignal.timeout(TIMEOUT_MS),
    headersTimeout: TIMEOUT_MS,
    bodyTimeout: TIMEOUT_MS,
  });
  await res.body.text();
  return res.statusCode;
}

/** Makes the `post(url, id, payload)` function of a peer worker; it throws on a non-2xx answer. */
export function createPoster(): (url: string, id: string, payload: BenchPayload) => Promise<void> {
  const agent = createAgent();
  return async (url, id, payload) => {
    const status = await postJson(agent, url, id, payload, JSON.stringify(payload));
    if (status < 200 || status > 299) throw new Error(`callback answered ${status}`);
  };
}
