/**
 * A fault-injecting TCP proxy for a PostgreSQL connection (issue #30, point 3), in Node's net module: it forwards
 * 127.0.0.1:<port> to an upstream server and, when told, black-holes, resets or delays the traffic. It reads the
 * PostgreSQL protocol's framing of the server's side only to know when a connection is inside a transaction
 * (ReadyForQuery's status byte).
 *
 * - `blackhole()`: from now on every connection's bytes vanish, both ways; nothing is closed, no RST, and the client's
 *   TCP stack sees its data acknowledged (by the proxy), so neither TCP nor keepalives tell it anything. Connections
 *   made while the hole is open are accepted and swallowed alike. A connection swallowed once stays so (a middlebox
 *   that lost its state: its later packets vanish too); `heal()` lets new connections through again.
 * - `resetMidTransaction(n)`: the next `n` times a connection inside a transaction sends the server something (the
 *   transaction's next statement, or its COMMIT), the proxy forwards it and then resets both sides (RST): the server
 *   may or may not have run it, the client never hears.
 * - `resetAll()`: resets every connection now.
 * - `latency(ms)`: delays every chunk, both ways, by `ms` (0: none), keeping their order.
 */
import net from 'node:net';

type Flow = {
  client: net.Socket;
  server: net.Socket | null;
  /** Swallowed: its bytes vanish for good. */
  dead: boolean;
  /** The transaction status of the server's last ReadyForQuery: I (idle), T (in a transaction), E (failed one). */
  status: string;
  /** The server's stream, framed: bytes of the current message still to pass, and a header being gathered. */
  skip: number;
  header: Buffer;
  have: number;
};

export type FaultProxy = {
  port: number;
  /** `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string;
  blackhole(): void;
  heal(): void;
  resetMidTransaction(n: number): void;
  resetAll(): number;
  latency(ms: number): void;
  readonly stats: { connections: number; open: number; swallowed: number; resets: number; midTransactionResets: number };
  close(): Promise<void>;
};

export async function startFaultProxy(upstreamHost: string, upstreamPort: number): Promise<FaultProxy> {
  const flows = new Set<Flow>();
  /** Every socket the proxy has, swallowed ones included, for close(). */
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('error', () => {}).on('close', () => sockets.delete(socket));
  };
  let holeOpen = false;
  let delayMs = 0;
  let resetsArmed = 0;
  const stats = { connections: 0, open: 0, swallowed: 0, resets: 0, midTransactionResets: 0 };

  const reset = (flow: Flow) => {
    flows.delete(flow);
    stats.resets++;
    flow.client.resetAndDestroy();
    flow.server?.resetAndDestroy();
  };
  const swallow = (flow: Flow) => {
    if (!flow.dead) stats.swallowed++;
    flow.dead = true;
  };
  /** Passes `chunk` on to `to` after the current latency; in order, since every chunk of a direction waits the same. */
  const pass = (flow: Flow, to: () => net.Socket | null, chunk: Buffer, after?: () => void) => {
    const send = () => {
      if (flow.dead) return;
      const socket = to();
      if (socket && !socket.destroyed) socket.write(chunk);
      after?.();
    };
    if (delayMs > 0) setTimeout(send, delayMs);
    else send();
  };
  /** Follows the server's messages for ReadyForQuery ('Z', length 5, one status byte). */
  const readServer = (flow: Flow, chunk: Buffer) => {
    let i = 0;
    while (i < chunk.length) {
      if (flow.skip > 0) {
        const n = Math.min(flow.skip, chunk.length - i);
        if (flow.header[0] === 0x5a && flow.skip === 1) flow.status = String.fromCharCode(chunk[i]!);
        flow.skip -= n;
        i += n;
        continue;
      }
      const n = Math.min(5 - flow.have, chunk.length - i);
      chunk.copy(flow.header, flow.have, i, i + n);
      flow.have += n;
      i += n;
      if (flow.have < 5) return;
      flow.have = 0;
      flow.skip = flow.header.readUInt32BE(1) - 4;
    }
  };

  const proxy = net.createServer((client) => {
    stats.connections++;
    stats.open++;
    const flow: Flow = { client, server: null, dead: false, status: 'I', skip: 0, header: Buffer.alloc(5), have: 0 };
    flows.add(flow);
    client.setNoDelay(true);
    track(client);
    client.on('close', () => {
      stats.open--;
      flows.delete(flow);
      if (!flow.dead) flow.server?.destroy();
    });
    if (holeOpen) {
      swallow(flow);
      client.on('data', () => {});
      return;
    }
    const server = net.connect(upstreamPort, upstreamHost);
    flow.server = server;
    server.setNoDelay(true);
    track(server);
    server.on('close', () => {
      if (!flow.dead) client.destroy();
    });
    client.on('data', (chunk: Buffer) => {
      if (flow.dead) return;
      if (resetsArmed > 0 && flow.status !== 'I') {
        resetsArmed--;
        stats.midTransactionResets++;
        pass(
          flow,
          () => flow.server,
          chunk,
          () => setImmediate(() => reset(flow)),
        );
        return;
      }
      pass(flow, () => flow.server, chunk);
    });
    server.on('data', (chunk: Buffer) => {
      if (flow.dead) return;
      readServer(flow, chunk);
      pass(flow, () => flow.client, chunk);
    });
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
  const port = (proxy.address() as net.AddressInfo).port;

  return {
    port,
    urlFor(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    blackhole() {
      holeOpen = true;
      for (const flow of flows) swallow(flow);
    },
    heal() {
      holeOpen = false;
    },
    resetMidTransaction(n) {
      resetsArmed += n;
    },
    resetAll() {
      const live = [...flows].filter((f) => !f.dead);
      for (const flow of live) reset(flow);
      return live.length;
    },
    latency(ms) {
      delayMs = ms;
    },
    stats,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((r) => proxy.close(() => r()));
    },
  };
}
