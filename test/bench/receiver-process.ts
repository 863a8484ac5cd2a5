/**
 * The benchmark's receiver, run as its own child process (so its CPU is not charged to any system under test):
 * a node:http server on 127.0.0.1 with keep-alive that answers every callback `200 ok` (after `delayMs` when set)
 * and records, per callback, the receive time and the scheduled time the sender states, to compute fire lag.
 *
 * Identity and scheduled time come from Chime's headers (`webhook-id`, `Chime-Scheduled-For`), or from the
 * `bench-id` and `bench-scheduled-for` headers the peers' bench workers send. Controlled over the IPC channel of
 * `child_process.fork` (see receiver.ts for the messages).
 *
 * A callback to `/hook/<tag>` (the noisy workload's `/hook/a` and `/hook/b`) is also counted under its tag, so one
 * session can tell two senders' callbacks apart. `listen` opens more ports (more destinations, `127.0.0.1:<port>`) served
 * by the same handler and session as the first.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { endProcess } from './end-process.ts';
import { cpuSecondsOf } from './proc-stats.ts';
import type { ReceiverReply, ReceiverRequest } from './receiver.ts';
import { summarizeLags } from './stats.ts';

/** What a session keeps per tag (`/hook/<tag>`). */
type Tagged = { unique: number; firstAt: number | null; lastAt: number | null; lags: number[] };

type Session = {
  delayMs: number;
  ids: Set<string>;
  total: number;
  /** Lag in ms of the first delivery of each id. */
  lags: number[];
  firstAt: number | null;
  lastAt: number | null;
  watch: number[];
  cpuAtFirst: Record<number, number> | null;
  tags: Map<string, Tagged>;
};

const fresh = (delayMs = 0): Session => ({
  delayMs,
  ids: new Set(),
  total: 0,
  lags: [],
  firstAt: null,
  lastAt: null,
  watch: [],
  cpuAtFirst: null,
  tags: new Map(),
});
let session = fresh();

const header = (req: http.IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

const TAG_PREFIX = '/hook/';

/** The tag of a callback to `/hook/<tag>[?…]`, or null. */
function tagOf(url: string | undefined): string | null {
  if (url === undefined || !url.startsWith(TAG_PREFIX)) return null;
  const q = url.indexOf('?');
  const tag = url.slice(TAG_PREFIX.length, q === -1 ? undefined : q);
  return tag === '' ? null : tag;
}

const onRequest: http.RequestListener = (req, res) => {
  const at = Date.now();
  const s = session;
  if (s.firstAt === null) {
    s.firstAt = at;
    s.cpuAtFirst = cpuSecondsOf(s.watch);
  }
  s.lastAt = at;
  s.total++;
  const tagName = tagOf(req.url);
  let tag: Tagged | undefined;
  if (tagName !== null) {
    tag = s.tags.get(tagName);
    if (tag === undefined) s.tags.set(tagName, (tag = { unique: 0, firstAt: at, lastAt: null, lags: [] }));
    tag.lastAt = at;
  }
  const id = header(req, 'webhook-id') ?? header(req, 'bench-id');
  if (id !== undefined && !s.ids.has(id)) {
    s.ids.add(id);
    const scheduled = Date.parse(header(req, 'chime-scheduled-for') ?? header(req, 'bench-scheduled-for') ?? '');
    if (Number.isFinite(scheduled)) s.lags.push(at - scheduled);
    if (tag !== undefined) {
      tag.unique++;
      if (Number.isFinite(scheduled)) tag.lags.push(at - scheduled);
    }
  }
  req.resume();
  req.on('end', () => {
    const send = () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    };
    if (s.delayMs > 0) setTimeout(send, s.delayMs);
    else send();
  });
};

const server = http.createServer({ keepAliveTimeout: 60_000 }, onRequest);
/** Servers opened by `listen`, in order; kept for the life of the process. */
const extra: http.Server[] = [];

/** Opens servers until there are `count` beyond the first; resolves with the first `count` of their ports. */
async function listenMore(count: number): Promise<number[]> {
  while (extra.length < count) {
    const s = http.createServer({ keepAliveTimeout: 60_000 }, onRequest);
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => resolve());
    });
    extra.push(s);
  }
  return extra.slice(0, count).map((s) => (s.address() as AddressInfo).port);
}

function handle(m: ReceiverRequest): unknown {
  switch (m.op) {
    case 'listen':
      return listenMore(m.count);
    case 'tags':
      return Object.fromEntries(
        [...session.tags].map(([name, t]) => [
          name,
          { unique: t.unique, firstAt: t.firstAt, lastAt: t.lastAt, lags: summarizeLags(t.lags) },
        ]),
      );
    case 'reset':
      session = fresh(m.delayMs);
      return null;
    case 'watch':
      session.watch = m.pids;
      return null;
    case 'stats':
      return {
        unique: session.ids.size,
        total: session.total,
        firstAt: session.firstAt,
        lastAt: session.lastAt,
        cpuAtFirst: session.cpuAtFirst,
      };
    case 'lags':
      return summarizeLags(session.lags);
  }
}

process.on('message', (m: ReceiverRequest & { seq: number }) => {
  void (async () => {
    let reply: ReceiverReply;
    try {
      reply = { seq: m.seq, ok: true, value: await handle(m) };
    } catch (err) {
      reply = { seq: m.seq, ok: false, error: String(err) };
    }
    process.send!(reply);
  })();
});
process.on('disconnect', () => {
  for (const s of extra) {
    s.closeAllConnections();
    s.close();
  }
  server.closeAllConnections();
  server.close(() => endProcess(0));
});

server.listen(0, '127.0.0.1', () => {
  process.send!({ seq: 0, ok: true, value: { port: (server.address() as AddressInfo).port } } satisfies ReceiverReply);
});
