/**
 * The connections of Chime's PostgreSQL pool (src/store/postgres.ts): which server (with `target_session_attrs`, one
 * that accepts writes), TLS, and a watch on each (pg-watch.ts). Node only.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import tls from 'node:tls';
import postgres from 'postgres';
import { Watched } from './pg-watch.ts';

/**
 * How long Chime waits on the database before it gives up on a connection, and the session settings that bound the
 * server's side. The session settings are sent at connection start-up; DATABASE_URL's query string overrides any of
 * them and postgres.js's options (`…?statement_timeout=60000&connect_timeout=20`). Each is chosen so that a connection
 * lost to a network fault is noticed, and its statements retried on a new one, within a dispatcher's default lease
 * margin (`CHIME_LEASE_MARGIN_MS`, 30 s): a fault shorter than that costs no duplicate.
 */
export const CONNECTION_SETTINGS = Object.freeze({
  /** postgres.js `connect_timeout`, s (its default 30): TCP connect, then again start-up and authentication. */
  connectTimeoutS: 10,
  /**
   * postgres.js `keep_alive`, s (its default 60): TCP keepalive idle time of every connection; Node then probes every
   * second, 10 times, so an idle connection whose peer is gone fails after ~20 s instead of ~70 s.
   */
  keepAliveS: 10,
  /** `statement_timeout`, ms (PostgreSQL's default 0: none). Chime's statements take milliseconds; an API search seconds. */
  statementTimeoutMs: 15_000,
  /**
   * `idle_in_transaction_session_timeout`, ms (default 0: none). Chime never waits on anything but the database inside
   * a transaction, so a session idle that long in one has lost its client: the server ends it and its row locks go.
   */
  idleInTransactionSessionTimeoutMs: 10_000,
  /** `tcp_keepalives_idle` / `_interval` / `_count` (default 0: the OS's, 7200 s / 75 s / 9 on Linux): the server drops a vanished client's session after ~25 s. */
  serverKeepalivesIdleS: 10,
  serverKeepalivesIntervalS: 5,
  serverKeepalivesCount: 3,
  /** Reconnect backoff cap, s: postgres.js waits (0.5–1) × min(3^failures / 100, this) between attempts (its cap 20). */
  reconnectBackoffMaxS: 2,
});

/** Beyond `statement_timeout`, how long a connection with a statement outstanding may receive nothing before it is destroyed. */
export const ANSWER_GRACE_MS = 5_000;
/** How long a probe's finding that a host does or does not accept writes is reused by further connection attempts. */
const PROBE_TTL_MS = 1_000;
/** A host whose connection failed this recently is tried after the others. */
const FAILED_HOST_MS = 30_000;
/** How often the watch looks at the connections. */
const WATCH_INTERVAL_MS = 500;

/** What Chime reads of postgres.js's parsed options (`sql.options`). */
export type ParsedOptions = {
  host: string[];
  port: number[];
  path: string | false;
  user: string;
  pass: unknown;
  database: string;
  ssl: boolean | string | tls.ConnectionOptions;
  sslnegotiation?: string | null;
  target_session_attrs?: string | null;
  connection: Record<string, unknown>;
};

/** A PostgreSQL duration setting (`15000`, `15s`, `500ms`, `1min`) in ms; null when it does not read as one. */
export function durationMs(value: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|h|d)?\s*$/.exec(value);
  if (!m) return null;
  const unit = { ms: 1, s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] ?? 'ms']!;
  return Number(m[1]) * unit;
}

type Host = { host: string; port: number; path: string | null };

/**
 * Makes the pool's connections: chooses the server (the URL's hosts in turn; with `target_session_attrs`, only one that
 * accepts writes), negotiates TLS, and watches every connection it made (`watch`).
 */
export class Connector {
  private readonly hosts: Host[];
  /** The host the last connection went to: tried first. */
  private preferred = 0;
  private readonly failedAt = new Map<number, number>();
  private readonly probes = new Map<number, { at: number; writable: Promise<boolean | Error> }>();
  private readonly watched = new Set<Watched>();
  private timer: NodeJS.Timeout | null = null;
  /** Set once the pool's options are known: the connect timeout, the keepalive idle time (0: none), the watch's limit (0: no watch). */
  connectTimeoutMs: number = CONNECTION_SETTINGS.connectTimeoutS * 1000;
  keepAliveS: number = CONNECTION_SETTINGS.keepAliveS;
  answerTimeoutMs = 0;

  constructor(
    private readonly parsed: ParsedOptions,
    private readonly writableOnly: boolean,
  ) {
    this.hosts = parsed.host.map((host, i) => ({
      host,
      port: parsed.port[i] ?? parsed.port[0]!,
      path: host.startsWith('/') ? `${host}/.s.PGSQL.${parsed.port[i] ?? parsed.port[0]}` : null,
    }));
    if (this.hosts.length === 1 && parsed.path) this.hosts[0]!.path = parsed.path;
  }

  /**
   * A connected socket (TLS done) to a server that qualifies. Never rejects: a failure comes as a socket that errors
   * at once, so that postgres.js fails the statement waiting for it and paces its next attempt (an exception here would
   * leave the pool's connection stuck).
   */
  async connect(): Promise<net.Socket> {
    const failures: string[] = [];
    let lastError: unknown = null;
    for (const index of this.order()) {
      const host = this.hosts[index]!;
      try {
        if (this.writableOnly && !(await this.writable(index))) {
          failures.push(`${label(host)} does not accept writes (a standby, or read-only)`);
          continue;
        }
        const socket = await this.open(host);
        this.failedAt.delete(index);
        this.preferred = index;
        this.watch(socket);
        return socket;
      } catch (err) {
        this.failedAt.set(index, performance.now());
        this.probes.delete(index);
        lastError = err;
        failures.push(`${label(host)}: ${(err as Error).message}`);
      }
    }
    const error =
      this.hosts.length === 1 && lastError
        ? lastError
        : Object.assign(new Error(`no server of DATABASE_URL can be used: ${failures.join('; ')}`), {
            code: 'CONNECTION_UNAVAILABLE',
            cause: lastError ?? undefined,
          });
    const failed = new net.Socket();
    setImmediate(() => failed.destroy(error as Error));
    return failed;
  }

  /** Stops the watch (the pool is closed). */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Host indexes to try: the preferred one, then the others in the URL's order; hosts that failed lately last. */
  private order(): number[] {
    const now = performance.now();
    const all = [this.preferred, ...this.hosts.keys()].filter((i, k, xs) => xs.indexOf(i) === k);
    const failedLately = (i: number) => now - (this.failedAt.get(i) ?? -Infinity) < FAILED_HOST_MS;
    return [...all.filter((i) => !failedLately(i)), ...all.filter(failedLately)];
  }

  /** Whether host `index` accepts writes, by a probe (one at a time per host, its answer reused for PROBE_TTL_MS). */
  private async writable(index: number): Promise<boolean> {
    const now = performance.now();
    let probe = this.probes.get(index);
    if (!probe || now - probe.at > PROBE_TTL_MS) {
      probe = { at: now, writable: this.probe(this.hosts[index]!).catch((err: Error) => err) };
      this.probes.set(index, probe);
    }
    const answer = await probe.writable;
    if (answer instanceof Error) throw answer;
    return answer;
  }

  private async probe(host: Host): Promise<boolean> {
    const p = this.parsed;
    const options = {
      host: host.host,
      port: host.port,
      user: p.user,
      pass: p.pass,
      database: p.database,
      // Through `open` (TLS included) and a Watched socket, so that a server closing during start-up fails the probe.
      ssl: false,
      socket: async () => {
        const socket = await this.open(host);
        new Watched(socket);
        return socket;
      },
      max: 1,
      connect_timeout: this.connectTimeoutMs / 1000,
      fetch_types: false,
      prepare: false,
      onnotice: () => {},
      connection: { application_name: 'chime-probe' },
    };
    const sql = postgres(options as unknown as postgres.Options<Record<string, never>>);
    let timer: NodeJS.Timeout | undefined;
    try {
      const query = sql.unsafe<{ recovery: boolean; read_only: string }[]>(
        `select pg_catalog.pg_is_in_recovery() as recovery, pg_catalog.current_setting('transaction_read_only') as read_only`,
      );
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(Object.assign(new Error('no answer to the probe'), { code: 'CONNECT_TIMEOUT' })),
          2 * this.connectTimeoutMs,
        );
      });
      const [row] = await within(query, timeout);
      return row!.recovery === false && row!.read_only === 'off';
    } finally {
      clearTimeout(timer);
      void sql.end({ timeout: 0 }).catch(() => {});
    }
  }

  /** A TCP (or Unix socket) connection to `host`, with TLS negotiated as the URL asks, within the connect timeout. */
  private async open(host: Host): Promise<net.Socket> {
    const raw = host.path ? net.connect(host.path) : net.connect(host.port, host.host);
    // Until postgres.js listens (right after this returns), an error must not go unheard.
    const ignore = () => {};
    raw.on('error', ignore);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(Object.assign(new Error(`connect timeout (${this.connectTimeoutMs} ms)`), { code: 'CONNECT_TIMEOUT' })),
        this.connectTimeoutMs,
      );
    });
    try {
      await within(settled(raw, 'connect'), timeout);
      // Also under TLS (postgres.js sets it on the socket it is given, which would be the TLS one).
      if (this.keepAliveS > 0) raw.setKeepAlive(true, this.keepAliveS * 1000);
      const ssl = this.parsed.ssl;
      const socket = ssl ? await within(startTls(raw, host, ssl, this.parsed.sslnegotiation ?? null), timeout) : raw;
      if (socket !== raw) socket.on('error', ignore);
      setImmediate(() => {
        raw.off('error', ignore);
        socket.off('error', ignore);
      });
      return socket;
    } catch (err) {
      raw.destroy();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Puts `socket` under the watch: destroyed when a statement is outstanding and nothing arrives for answerTimeoutMs. */
  private watch(socket: net.Socket): void {
    const w = new Watched(socket);
    if (this.answerTimeoutMs <= 0) return;
    this.watched.add(w);
    socket.once('close', () => this.watched.delete(w));
    this.timer ??= setInterval(() => this.inspect(), WATCH_INTERVAL_MS).unref();
  }

  private inspect(): void {
    const now = performance.now();
    for (const w of this.watched) {
      if (w.waitingSince === null || now - w.waitingSince <= this.answerTimeoutMs) continue;
      const since = w.waitingSince;
      const remote = `${w.socket.remoteAddress ?? 'the server'}:${w.socket.remotePort ?? ''}`;
      this.watched.delete(w);
      w.socket.destroy(
        Object.assign(
          new Error(
            `the database connection to ${remote} received nothing for ${Math.round(now - since)} ms while a statement was outstanding`,
          ),
          {
            code: 'ETIMEDOUT',
          },
        ),
      );
      // The path it took may have failed for the others too: an idle connection that has received nothing since this one
      // began waiting is closed as well (reconnecting costs little), rather than found dead by its next statement.
      for (const other of this.watched) {
        if (other.waitingSince === null && other.lastReceivedAt < since) {
          this.watched.delete(other);
          other.socket.destroy();
        }
      }
    }
  }
}

function label(host: Host): string {
  return host.path ?? `${host.host}:${host.port}`;
}

/** SSLRequest (PostgreSQL protocol 55.2.10): length 8, code 80877103. */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

/**
 * Upgrades `raw` to TLS as postgres.js would for its `ssl` option (its connection.js `secure`): SSLRequest unless
 * `sslnegotiation=direct`; `require`, `allow` and `prefer` without verifying the certificate, an object as TLS
 * options, anything else (`verify-full`, `true`) verifying it; `prefer` stays in plain text when the server has no TLS.
 */
async function startTls(raw: net.Socket, host: Host, ssl: ParsedOptions['ssl'], negotiation: string | null): Promise<net.Socket> {
  if (negotiation !== 'direct') {
    raw.write(SSL_REQUEST);
    const [answer] = (await settled(raw, 'data')) as [Buffer];
    if (answer[0] !== 0x53 /* S */) {
      if (ssl === 'prefer') return raw;
      throw Object.assign(new Error(`${label(host)} does not accept TLS connections`), { code: 'ECONNREFUSED' });
    }
  }
  const options: tls.ConnectionOptions = { socket: raw, servername: net.isIP(host.host) ? undefined : host.host };
  if (negotiation === 'direct') options.ALPNProtocols = ['postgresql'];
  if (ssl === 'require' || ssl === 'allow' || ssl === 'prefer') options.rejectUnauthorized = false;
  else if (typeof ssl === 'object') Object.assign(options, ssl);
  const secure = tls.connect(options);
  try {
    await settled(secure, 'secureConnect');
  } catch (err) {
    secure.on('error', () => {}).destroy();
    throw err;
  }
  return secure;
}

/** `promise`, or `timeout`'s rejection if that comes first (a later rejection of `promise` is then ignored, not unhandled). */
function within<T>(promise: Promise<T>, timeout: Promise<never>): Promise<T> {
  promise.catch(() => {});
  return Promise.race([promise, timeout]);
}

/**
 * Resolves with the arguments of `socket`'s next `event`; rejects on an error or close before it. Removes only its own
 * listeners (net and tls keep listeners of their own on a socket).
 */
function settled(socket: net.Socket, event: string): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const done = (...args: unknown[]) => {
      socket.off(event, done).off('error', failed).off('close', closed);
      resolve(args);
    };
    const failed = (err: Error) => {
      socket.off(event, done).off('error', failed).off('close', closed);
      reject(err);
    };
    const closed = () => failed(Object.assign(new Error('the server closed the connection'), { code: 'ECONNRESET' }));
    socket.on(event, done).on('error', failed).on('close', closed);
  });
}
