/**
 * The HTTP client both peer workers use, set up like Chime's (src/dispatch/deliver.ts): an undici Agent with
 * keep-alive (30 s idle) and `request` (not `fetch`), at most 16 connections per origin (Chime's default
 * CHIME_DISPATCH_PER_DESTINATION), a 10 s timeout (Chime's default callback timeout), the body read to the end so
 * the connection is reused. A non-2xx answer throws, so the peer records a failure and retries as it would.
 */
import { Agent } from 'undici';

/** Chime's default per-destination concurrency: callbacks in flight to one origin. */
export const CONNECTIONS_PER_ORIGIN = 16;
/** Chime's default callback timeout, in ms. */
export const TIMEOUT_MS = 10_000;

/** What a peer job carries: the run number and its scheduled time (ISO 8601), sent as `bench-*` headers. */
export type BenchPayload = { n: number; scheduledFor: string };

/** Makes the `post(url, id, payload)` function of a peer worker. */
export function createPoster(): (url: string, id: string, payload: BenchPayload) => Promise<void> {
  const agent = new Agent({ keepAliveTimeout: 30_000, connections: CONNECTIONS_PER_ORIGIN });
  return async (url, id, payload) => {
    const u = new URL(url);
    const body = JSON.stringify(payload);
    const res = await agent.request({
      origin: u.origin,
      path: `${u.pathname}${u.search}`,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'bench-id': id, 'bench-scheduled-for': payload.scheduledFor },
      body,
      signal: AbortSignal.timeout(TIMEOUT_MS),
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS,
    });
    await res.body.text();
    if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`callback answered ${res.statusCode}`);
  };
}
