/**
 * SSRF guard for outgoing callbacks (Node part): an undici connector that resolves the destination itself,
 * refuses addresses the policy does not allow and connects to the very address it checked.
 *
 * Why a connector and not undici's `connect.lookup` hook: the lookup hook is never called for IP literals
 * (`http://127.0.0.1/`, `http://[::1]/`), and checking a name and then letting the socket resolve it again
 * leaves a DNS-rebinding window. Here the check and the connect use the same resolved address: the inner
 * connector (undici's `buildConnector`) is asked to connect to the IP, while TLS SNI and certificate
 * verification keep the original host name (`servername`).
 *
 * Address policy: `isAllowedClass` in `src/domain/destination.ts` (ipaddr.js ranges, allow-list of `unicast`; with
 * private destinations allowed, everything but cloud metadata, link-local and scoped addresses). The guard runs in
 * both modes: with private destinations allowed a name resolving to 169.254.169.254 is still refused.
 *
 * What a tenant reads: refusals end up in its attempt log (the error's message). For a host name the message says
 * that it resolves to a refused address, never which one (that would let a tenant map the operator's internal DNS);
 * an IP literal is the tenant's own text and is named, with its range.
 *
 * Usage:
 *   const agent = new Agent({ connect: createGuardedConnector({ allowPrivate: config.allowPrivateDestinations }) });
 */
import dns from 'node:dns';
import net from 'node:net';
import { buildConnector, errors } from 'undici';
import {
  classifyAddress,
  type DestinationOptions,
  isAllowedClass,
  isCloudMetadataHostName,
  isLocalHostName,
  refusal,
} from '../domain/destination.ts';

/**
 * A `dns.lookup`-compatible function called as `lookup(hostname, { all: true }, callback)`.
 * `dns.lookup` itself fits; tests inject fakes.
 */
export type LookupAll = (
  hostname: string,
  options: dns.LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
) => void;

/**
 * Passed to undici's connect callback when a destination is refused: its host is a refused name or resolves to (or
 * is) an address the policy does not allow. The message is what a tenant reads in its attempt log: it names a host
 * name's resolved address never, an IP literal's always.
 */
export class DestinationRefusedError extends Error {
  readonly code = 'ERR_DESTINATION_REFUSED' as const;
  /** The host as asked for (name or IP, without brackets). */
  readonly hostname: string;
  /**
   * The offending address, when there is one (absent when the host name itself is refused): for the operator's
   * logs, not in the message when the host is a name.
   */
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
  /**
   * `CHIME_ALLOW_PRIVATE_DESTINATIONS=true`: loopback, private addresses and local names are allowed; the host is
   * still resolved and pinned, and cloud metadata names and addresses, link-local and scoped addresses refused.
   */
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

function resolveAndCheck(hostname: string, lookup: LookupAll, timeoutMs: number, options: DestinationOptions): Promise<Resolution> {
  const host = bare(hostname);
  if (net.isIP(host) !== 0) {
    return Promise.resolve(checkAll(host, [host], options));
  }
  if (isCloudMetadataHostName(host)) {
    return Promise.resolve({
      kind: 'refused',
      error: new DestinationRefusedError(`destination refused: host ${host} is a cloud metadata service`, host),
    });
  }
  if (!options.allowPrivate && isLocalHostName(host)) {
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
        resolve(
          checkAll(
            host,
            addresses.map((a) => a.address),
            options,
          ),
        );
      });
    } catch (err) {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      resolve({ kind: 'failed', error: err instanceof Error ? err : new Error(String(err)) });
    }
  });
}

/** Checks every address of `host` (a name's resolved addresses, or an IP literal itself). */
function checkAll(host: string, addresses: string[], options: DestinationOptions): Resolution {
  for (const a of addresses) {
    const c = classifyAddress(a);
    if (isAllowedClass(c, options)) continue;
    // A literal is the tenant's own text; a name's address is the operator's DNS, which the message must not reveal.
    const message =
      a === host
        ? `destination refused: address ${a} ${refusal(options)} (${c.range})`
        : `destination refused: host ${host} resolves to an address that ${refusal(options)}`;
    return { kind: 'refused', error: new DestinationRefusedError(message, host, a) };
  }
  return { kind: 'ok', addresses };
}

/**
 * Resolves a host for registration-time checks (private destinations not allowed): an IP literal (brackets allowed)
 * is taken as is, a name is resolved with `lookup(hostname, { all: true })` (default `dns.lookup`, i.e. getaddrinfo:
 * /etc/hosts included).
 *
 * Returns `{ ok: true, addresses }` (every address, in resolver order) when all of them are public
 * (`isPublicAddress`), else `{ ok: false, reason }`: a local or cloud metadata name (`localhost`, `*.local`,
 * `metadata.google.internal`, …), a name that resolves to a non-public address (not named in the reason: the
 * tenant reads it), a non-public IP literal (named), or a lookup failure (the reason carries the error code, e.g.
 * ENOTFOUND). Never rejects. A name that resolves to one public and one private address is refused: the connector
 * would refuse it too.
 */
export async function resolvePublicHost(hostname: string, lookup: LookupAll = dns.lookup): Promise<ResolveResult> {
  const r = await resolveAndCheck(hostname, lookup, 0, { allowPrivate: false });
  if (r.kind === 'ok') return { ok: true, addresses: r.addresses };
  if (r.kind === 'refused') return { ok: false, reason: r.error.message };
  const code = (r.error as NodeJS.ErrnoException).code;
  return { ok: false, reason: `could not resolve ${bare(hostname)}: ${code ?? r.error.message}` };
}

/**
 * Connect errors after which the next checked address is tried: nothing listens or no route, found out at once
 * (a name such as `localhost` may resolve to ::1 first while the receiver listens on 127.0.0.1 only). A timeout is
 * not among them: the attempt's own deadline would be spent on the first address anyway.
 */
const TRY_NEXT_ADDRESS = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'EAFNOSUPPORT']);

/**
 * Builds an undici connector (for `new Agent({ connect })`, `new Client(url, { connect })`, …) that guards
 * against SSRF.
 *
 * Per connection: the host (IP literal or name, resolved with `lookup`, all addresses) is checked; if it is a
 * cloud metadata name, a local name (unless `allowPrivate`) or any address is not allowed (`isAllowedClass`), the
 * callback gets a {@link DestinationRefusedError} (`code` `ERR_DESTINATION_REFUSED`; an IP literal is named in the
 * message, a name's resolved address is not) and no socket is opened. undici then fails the request with it
 * (directly from `dispatcher.request`; as the `cause` of `TypeError: fetch failed` from `fetch`). A lookup error
 * (ENOTFOUND, EAI_AGAIN, …) is passed on as is, a lookup slower than the connect timeout gives undici's
 * `ConnectTimeoutError`.
 *
 * Otherwise the inner connector is called with `hostname` replaced by a checked address (pinned: no second
 * resolution, so no DNS rebinding between check and connect) and, when the host is a name, `servername` set to it,
 * so TLS SNI and certificate verification use the name. The addresses are tried in resolver order, the next one
 * only when connecting to one fails at once (TRY_NEXT_ADDRESS: refused, unreachable); any other error ends it.
 */
export function createGuardedConnector(options: GuardedConnectorOptions): buildConnector.connector {
  const inner: buildConnector.connector = typeof options.connect === 'function' ? options.connect : buildConnector(options.connect ?? {});
  const policy: DestinationOptions = { allowPrivate: options.allowPrivate };
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
    const fail = (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null);
    const host = bare(opts.hostname);
    resolveAndCheck(host, lookup, timeoutMs, policy).then((r) => {
      if (r.kind !== 'ok') return callback(r.error, null);
      const servername = opts.servername || (net.isIP(host) === 0 ? host : undefined);
      const connectTo = (i: number): void => {
        const pinned = r.addresses[i] as string;
        try {
          inner({ ...opts, hostname: pinned, ...(servername ? { servername } : {}) }, (...args) => {
            const code = (args[0] as NodeJS.ErrnoException | null)?.code;
            if (args[0] && i + 1 < r.addresses.length && code !== undefined && TRY_NEXT_ADDRESS.has(code)) {
              return connectTo(i + 1);
            }
            callback(...args);
          });
        } catch (err) {
          fail(err);
        }
      };
      connectTo(0);
    }, fail);
  };
}
