/**
 * SSRF guard for outgoing callbacks (Node part): an undici connector that resolves the destination itself,
 * refuses non-public addresses and connects to the very address it checked.
 *
 * Why a connector and not undici's `connect.lookup` hook: the lookup hook is never called for IP literals
 * (`http://127.0.0.1/`, `http://[::1]/`), and checking a name and then letting the socket resolve it again
 * leaves a DNS-rebinding window. Here the check and the connect use the same resolved address: the inner
 * connector (undici's `buildConnector`) is asked to connect to the IP, while TLS SNI and certificate
 * verification keep the original host name (`servername`).
 *
 * Address policy: `isPublicAddress` in `src/domain/destination.ts` (ipaddr.js ranges, allow-list of `unicast`).
 *
 * Usage:
 *   const agent = new Agent({ connect: createGuardedConnector({ allowPrivate: config.allowPrivateDestinations }) });
 */
import dns from 'node:dns';
import net from 'node:net';
import { buildConnector, errors } from 'undici';
import { classifyAddress, isLocalHostName } from '../domain/destination.ts';

/**
 * A `dns.lookup`-compatible function called as `lookup(hostname, { all: true }, callback)`.
 * `dns.lookup` itself fits; tests inject fakes.
 */
export type LookupAll = (
  hostname: string,
  options: dns.LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
) => void;

/** Thrown (passed to undici's connect callback) when a destination resolves to a non-public address. */
export class DestinationRefusedError extends Error {
  readonly code = 'ERR_DESTINATION_REFUSED' as const;
  /** The host as asked for (name or IP, without brackets). */
  readonly hostname: string;
  /** The offending address, when there is one (absent when the host name itself is refused). */
  readonly address: string | undefined;

  constructor(message: string, hostname: string, address?: string) {
    super(message);
    this.name = 'DestinationRefusedError';
    this.hostname = hostname;
    this.address = address;
  }
}

/** Options of {@link createGuardedConnector}. */
export type GuardedConnectorOptions = {
  /** `CHIME_ALLOW_PRIVATE_DESTINATIONS=true`: no resolution, no checks, the inner connector is called as is. */
  allowPrivate: boolean;
  /**
   * The inner connector: undici `buildConnector` options (default `{}`; its `timeout`, default 10 s, also bounds
   * our DNS lookup), or a ready connector function (tests use this to observe the pinned address without
   * opening a socket).
   */
  connect?: buildConnector.BuildOptions | buildConnector.connector;
  /** Resolver, default `dns.lookup`. Called with `{ all: true }`. */
  lookup?: LookupAll;
};

/** Result of {@link resolvePublicHost}. */
export type ResolveResult = { ok: true; addresses: string[] } | { ok: false; reason: string };

type Resolution =
  | { kind: 'ok'; addresses: string[] }
  | { kind: 'refused'; error: DestinationRefusedError }
  | { kind: 'failed'; error: Error };

function bare(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

function resolveAndCheck(hostname: string, lookup: LookupAll, timeoutMs: number): Promise<Resolution> {
  const host = bare(hostname);
  if (net.isIP(host) !== 0) {
    return Promise.resolve(checkAll(host, [host]));
  }
  if (isLocalHostName(host)) {
    return Promise.resolve({
      kind: 'refused',
      error: new DestinationRefusedError(`destination refused: host ${host} is a local name`, host),
    });
  }
  return new Promise((resolve) => {
    let settled = false;
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            settled = true;
            resolve({
              kind: 'failed',
              error: new errors.ConnectTimeoutError(`DNS lookup of ${host} timed out after ${timeoutMs} ms`),
            });
          }, timeoutMs)
        : undefined;
    timer?.unref?.();
    try {
      lookup(host, { all: true }, (err, addresses) => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        if (err) return resolve({ kind: 'failed', error: err });
        if (!Array.isArray(addresses) || addresses.length === 0) {
          const e: NodeJS.ErrnoException = new Error(`no addresses found for ${host}`);
          e.code = 'ENOTFOUND';
          return resolve({ kind: 'failed', error: e });
        }
        resolve(checkAll(host, addresses.map((a) => a.address)));
      });
    } catch (err) {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      resolve({ kind: 'failed', error: err instanceof Error ? err : new Error(String(err)) });
    }
  });
}

function checkAll(host: string, addresses: string[]): Resolution {
  for (const a of addresses) {
    const c = classifyAddress(a);
    if (!c.public) {
      const via = a === host ? '' : ` (resolved from ${host})`;
      return {
        kind: 'refused',
        error: new DestinationRefusedError(
          `destination refused: address ${a}${via} is not public (${c.range})`,
          host,
          a,
        ),
      };
    }
  }
  return { kind: 'ok', addresses };
}

/**
 * Resolves a host for registration-time checks: an IP literal (brackets allowed) is taken as is, a name is
 * resolved with `lookup(hostname, { all: true })` (default `dns.lookup`, i.e. getaddrinfo: /etc/hosts included).
 *
 * Returns `{ ok: true, addresses }` (every address, in resolver order) when all of them are public
 * (`isPublicAddress`), else `{ ok: false, reason }`: a local name (`localhost`, `*.local`, …), a non-public
 * address (named in the reason), or a lookup failure (the reason carries the error code, e.g. ENOTFOUND).
 * Never rejects. A name that resolves to one public and one private address is refused: the connector
 * would refuse it too.
 */
export async function resolvePublicHost(hostname: string, lookup: LookupAll = dns.lookup): Promise<ResolveResult> {
  const r = await resolveAndCheck(hostname, lookup, 0);
  if (r.kind === 'ok') return { ok: true, addresses: r.addresses };
  if (r.kind === 'refused') return { ok: false, reason: r.error.message };
  const code = (r.error as NodeJS.ErrnoException).code;
  return { ok: false, reason: `could not resolve ${bare(hostname)}: ${code ?? r.error.message}` };
}

/**
 * Builds an undici connector (for `new Agent({ connect })`, `new Client(url, { connect })`, …) that guards
 * against SSRF.
 *
 * Per connection, unless `allowPrivate`: the host (IP literal or name, resolved with `lookup`, all addresses)
 * is checked; if it is a local name or any address is not public, the callback gets a
 * {@link DestinationRefusedError} (`code` `ERR_DESTINATION_REFUSED`, the address in the message) and no socket
 * is opened. undici then fails the request with it (directly from `dispatcher.request`; as the `cause` of
 * `TypeError: fetch failed` from `fetch`). A lookup error (ENOTFOUND, EAI_AGAIN, …) is passed on as is, a lookup
 * slower than the connect timeout gives undici's `ConnectTimeoutError`.
 *
 * Otherwise the inner connector is called with `hostname` replaced by the first resolved address (pinned: no
 * second resolution, so no DNS rebinding between check and connect) and, when the host is a name, `servername`
 * set to it, so TLS SNI and certificate verification use the name. The other addresses are not tried when the
 * first one fails to connect.
 */
export function createGuardedConnector(options: GuardedConnectorOptions): buildConnector.connector {
  const inner: buildConnector.connector =
    typeof options.connect === 'function' ? options.connect : buildConnector(options.connect ?? {});
  if (options.allowPrivate) return inner;
  const lookup = options.lookup ?? dns.lookup;
  const configured = typeof options.connect === 'object' ? options.connect.timeout : undefined;
  const timeoutMs = configured == null ? 10_000 : configured;

  return function guardedConnect(opts, cb) {
    let done = false;
    const callback: buildConnector.Callback = (...args) => {
      if (done) return;
      done = true;
      cb(...args);
    };
    const host = bare(opts.hostname);
    resolveAndCheck(host, lookup, timeoutMs).then(
      (r) => {
        if (r.kind !== 'ok') return callback(r.error, null);
        const pinned = r.addresses[0] as string;
        const servername = opts.servername || (net.isIP(host) === 0 ? host : undefined);
        try {
          inner({ ...opts, hostname: pinned, ...(servername ? { servername } : {}) }, callback);
        } catch (err) {
          callback(err instanceof Error ? err : new Error(String(err)), null);
        }
      },
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null),
    );
  };
}
