/**
 * The watch on one PostgreSQL connection (pg-connector.ts): it reads the protocol's message types as they pass, to
 * know whether a statement is outstanding and since when nothing came back. Node only.
 */
import type net from 'node:net';
import { performance } from 'node:perf_hooks';

/** Message types (PostgreSQL protocol 55.7) the watch counts. */
const SYNC = 0x53; // 'S', frontend
const QUERY = 0x51; // 'Q', frontend (simple query)
const FLUSH = 0x48; // 'H', frontend
const READY_FOR_QUERY = 0x5a; // 'Z', backend

/**
 * One watched connection: counts the statements outstanding (Sync and Query messages written, less ReadyForQuery
 * messages received; a Flush waits for any answer) and since when it has been waiting for a byte.
 */
export class Watched {
  /** When the connection began waiting without receiving anything; null while nothing is outstanding. */
  waitingSince: number | null = null;
  /** When it last received a byte (or was made). */
  lastReceivedAt = performance.now();
  private outstanding = 0;
  private flushed = false;
  /** The first message written was a start-up message (not a cancel request); a ReadyForQuery has ended it; an error was reported. */
  private startup: boolean | null = null;
  private ready = false;
  private failed = false;
  private readonly sent = new MessageFramer(true, (type) => {
    if (type === SYNC || type === QUERY) this.outstanding++;
    else if (type === FLUSH) this.flushed = true;
  });
  private readonly received = new MessageFramer(false, (type) => {
    if (type !== READY_FOR_QUERY) return;
    this.ready = true;
    if (this.outstanding > 0) this.outstanding--;
  });

  constructor(readonly socket: net.Socket) {
    // How a close reaches postgres.js 3.4.9 (`closed(hadError)`), for the two cases where it left a statement waiting:
    // - An established connection: the statements left on it are rejected only on a close without an error. One started
    //   between the socket's 'error' and its 'close' (the connection still looks busy then) waited forever, and once the
    //   connection was reopened it would have been handed the next statement's answer. So that close is reported as one
    //   without an error (the error itself has been reported already): everything left is rejected.
    // - A connection closed by the server during start-up without a word (a load balancer with no server behind it, a
    //   server that is not PostgreSQL): postgres.js connected again at once, forever, its statement waiting. So an
    //   error is reported first: the statement fails, and the close counts towards the reconnect backoff.
    const emit = socket.emit as (event: string | symbol, ...args: unknown[]) => boolean;
    socket.emit = ((event: string | symbol, ...args: unknown[]) => {
      if (event === 'error') this.failed = true;
      if (event !== 'close') return emit.call(socket, event, ...args);
      if (this.startup && !this.ready && !this.failed) {
        this.failed = true;
        emit.call(socket, 'error', Object.assign(new Error('the server closed the connection during start-up'), { code: 'ECONNRESET' }));
      }
      return emit.call(socket, 'close', !this.ready);
    }) as typeof socket.emit;
    const write = socket.write;
    socket.write = ((chunk: Uint8Array | string, ...rest: unknown[]) => {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      // A start-up message: length, then protocol version 3.0 (a cancel request has 80877102 there).
      this.startup ??= bytes.length >= 8 && new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(4) === 0x30000;
      this.sent.feed(bytes);
      if (this.waitingSince === null && (this.outstanding > 0 || this.flushed)) this.waitingSince = performance.now();
      return (write as (...a: unknown[]) => boolean).call(socket, chunk, ...rest);
    }) as typeof socket.write;
    // Registered before postgres.js's own listener (it attaches after this factory returns); the server sends nothing
    // until it has the start-up message, so postgres.js misses no data.
    socket.on('data', (chunk: Buffer) => {
      this.flushed = false;
      this.received.feed(chunk);
      this.lastReceivedAt = performance.now();
      this.waitingSince = this.outstanding > 0 ? this.lastReceivedAt : null;
    });
  }
}

/**
 * Splits a protocol byte stream into messages (a type byte and a 4-byte length that counts itself, PostgreSQL protocol
 * 55.7; a frontend's first message, start-up or cancel, has no type byte) and reports each one's type.
 */
class MessageFramer {
  private readonly header = Buffer.alloc(5);
  private have = 0;
  private skip = 0;

  constructor(
    private untypedFirst: boolean,
    private readonly onType: (type: number) => void,
  ) {}

  feed(bytes: Uint8Array): void {
    let i = 0;
    while (i < bytes.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, bytes.length - i);
        this.skip -= n;
        i += n;
        continue;
      }
      const size = this.untypedFirst ? 4 : 5;
      const n = Math.min(size - this.have, bytes.length - i);
      this.header.set(bytes.subarray(i, i + n), this.have);
      this.have += n;
      i += n;
      if (this.have < size) return;
      this.have = 0;
      if (this.untypedFirst) {
        this.untypedFirst = false;
        this.skip = Math.max(0, this.header.readUInt32BE(0) - 4);
      } else {
        this.skip = Math.max(0, this.header.readUInt32BE(1) - 4);
        this.onType(this.header[0]!);
      }
    }
  }
}
