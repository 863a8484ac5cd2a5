/**
 * A real HTTP receiver on 127.0.0.1 that records every callback (headers, raw body, arrival time) and answers as
 * told, for tests and benchmarks. Keep-alive is on, as a receiver in production would have it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from './eventually.ts';

export type Received = { method: string; path: string; headers: http.IncomingHttpHeaders; body: string; at: number };
export type Reply = {
  status: number;
  headers?: Record<string, string>;
  /** The body as text (UTF-8), or as raw bytes (a receiver answering binary or UTF-16). */
  body?: string | Buffer;
  delayMs?: number;
  hang?: boolean;
  /** Destroy the connection instead of answering (the request was received: an ambiguous outcome for the sender). */
  reset?: boolean;
};

export type Receiver = {
  url: string;
  received: Received[];
  /** Decides the reply of each request (default 200 "ok"). */
  respond: (r: Received) => Reply;
  /** Waits until at least `n` requests arrived (or `predicate` holds). */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  /** Requests received and not answered yet (delayed or hanging). */
  readonly active: number;
  /** The most requests ever unanswered at once. */
  readonly maxActive: number;
  close(): Promise<void>;
};

/**
 * For `eventually`: true when every one of `expected` is in `seen`, else throws `N of M not arrived`, so that a timeout
 * names how many were missing at the last poll. `seen` is read from the receiver once per poll by the caller: a read
 * per expected item costs the receiver, which answers from the same process, quadratic CPU.
 * @throws Error naming the count missing
 */
export function allArrived(expected: Iterable<string>, seen: ReadonlySet<unknown>): true {
  const all = [...expected];
  const missing = all.filter((x) => !seen.has(x)).length;
  if (missing > 0) throw new Error(`${missing} of ${all.length} not arrived`);
  return true;
}

export async function startReceiver(respond: (r: Received) => Reply = () => ({ status: 200 })): Promise<Receiver> {
  const received: Received[] = [];
  const hanging = new Set<http.ServerResponse>();
  let active = 0;
  let maxActive = 0;
  const receiver: Receiver = {
    url: '',
    received,
    respond,
    get active() {
      return active;
    },
    get maxActive() {
      return maxActive;
    },
    waitFor: (n, timeoutMs = 15_000) =>
      eventually(() => (received.length >= n ? received : undefined), { timeoutMs, what: `${n} callbacks (got ${received.length})` }),
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        method: req.method!,
        path: req.url!,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      received.push(r);
      active++;
      maxActive = Math.max(maxActive, active);
      // Counted as answered from the moment the answer is written, or the connection is gone.
      let settled = false;
      const settle = () => {
        if (!settled) active--;
        settled = true;
      };
      res.once('finish', settle).once('close', settle);
      const reply = receiver.respond(r);
      if (reply.reset) {
        req.socket.destroy();
        return;
      }
      if (reply.hang) {
        hanging.add(res);
        return;
      }
      const send = () => {
        settle();
        res.writeHead(reply.status, reply.headers);
        res.end(reply.body ?? 'ok');
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}
