/**
 * Callback destination policy (SSRF guard, pure part).
 *
 * Chime sends HTTP requests to URLs its tenants choose, from inside our network. A tenant must not be able to
 * make it call loopback, the private network, link-local cloud metadata services and the like. This module
 * decides, without any I/O, whether an IP address is an acceptable destination and whether a callback URL is
 * acceptable on its face. Host names still have to be resolved and every resolved address checked: that is
 * done in `src/dispatch/guard.ts` (Node), which also pins the checked address for the connection.
 *
 * Runtime-portable on purpose (no `node:` imports): it also runs on Cloudflare Workers.
 *
 * Sources:
 * - address classes: ipaddr.js 2.x `range()` (its `SpecialRanges` tables follow the IANA IPv4/IPv6
 *   Special-Purpose Address Registries: RFC 1918, 3927, 6598, 5737, 2544, 4291, 4193, 6052, 3056, 4380, …);
 * - host parsing: the WHATWG URL Standard's host parser (the global `URL`), which already turns odd IPv4
 *   spellings (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`, full-width digits, percent-escapes) into the
 *   dotted-quad `127.0.0.1`, and serializes IPv6 literals in brackets in compressed hex form
 *   (`[::ffff:127.0.0.1]` becomes `[::ffff:7f00:1]`).
 */
import ipaddr from 'ipaddr.js';

/** Options of {@link checkCallbackUrl}. */
export type DestinationOptions = {
  /**
   * Skip every address and host-name check (for `CHIME_ALLOW_PRIVATE_DESTINATIONS=true`, e.g. local development
   * against a receiver on localhost). The scheme must still be http/https and credentials are still refused.
   */
  allowPrivate: boolean;
};

/** Result of {@link checkCallbackUrl}. */
export type CallbackUrlCheck =
  | {
      ok: true;
      /** The URL as parsed (and normalized) by WHATWG URL; send to this, not to the original string. */
      url: URL;
      /** Whether the host is an IP literal; when false it is a name that must be resolved and re-checked. */
      hostIsIp: boolean;
    }
  | { ok: false; reason: string };

/** How {@link classifyAddress} sees one address. */
export type AddressClass = {
  /** Whether it is an acceptable destination (see {@link isPublicAddress}). */
  public: boolean;
  /** The address as it will be checked: IPv4-mapped IPv6 unwrapped to IPv4, else ipaddr.js's `toString()`. */
  address: string;
  /**
   * Why: ipaddr.js's `range()` name (`unicast`, `loopback`, `private`, `linkLocal`, `uniqueLocal`,
   * `carrierGradeNat`, `rfc6052`, `6to4`, `teredo`, `reserved`, …), or one of our own: `invalid` (not an IP
   * address), `cloudMetadata`, `scoped` (IPv6 with a zone id), `ipv4Compatible` (deprecated `::a.b.c.d`),
   * `notGlobalUnicast` (IPv6 outside 2000::/3).
   */
  range: string;
};

/**
 * Cloud metadata endpoints, refused explicitly (defence in depth: each already falls in a non-unicast range of
 * ipaddr.js, noted beside it, which the tests check).
 */
const CLOUD_METADATA: readonly string[] = [
  '169.254.169.254', // AWS, GCP, Azure, OpenStack, DigitalOcean… — linkLocal
  '169.254.170.2', // AWS ECS task metadata — linkLocal
  'fd00:ec2::254', // AWS IMDS over IPv6 — uniqueLocal
  '100.100.100.200', // Alibaba Cloud — carrierGradeNat
  '192.0.0.192', // Oracle Cloud — reserved
];
const CLOUD_METADATA_PARSED = CLOUD_METADATA.map((a) => ipaddr.parse(a));

/** IANA's IPv6 global unicast block; everything outside it is reserved, unassigned or special. */
const IPV6_GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

/** A trailing dotted IPv4 part in an IPv6 text, and the IPv4-mapped form that alone we accept with it. */
const DOTTED_TAIL = /:\d+\.\d+\.\d+\.\d+$/;
const MAPPED_DOTTED = /(^|:)ffff:\d+\.\d+\.\d+\.\d+$/i;

/**
 * Classifies one IP address as a callback destination. Never throws.
 *
 * The text is parsed with ipaddr.js and passed through `ipaddr.process()`, so an IPv4-mapped IPv6 address
 * (`::ffff:127.0.0.1`, `::ffff:7f00:1`) is judged as the IPv4 address it carries. The rule is an allow-list:
 * only ipaddr.js's `unicast` range is public; on top of that
 * - IPv6 must lie in 2000::/3 (ipaddr.js calls e.g. `::7f00:1` or `1::1` `unicast`, but they are not global);
 * - an IPv6 text with a zone id (`fe80::1%eth0`) is refused;
 * - `::a.b.c.d` without `ffff:` (deprecated IPv4-compatible form, which ipaddr.js 2.5 misreads as IPv4-mapped)
 *   is refused;
 * - cloud metadata addresses are refused by name even though their ranges already are.
 */
export function classifyAddress(ip: string): AddressClass {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.process(ip);
  } catch {
    return { public: false, address: ip, range: 'invalid' };
  }
  const address = addr.toString();
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).zoneId) {
    return { public: false, address, range: 'scoped' };
  }
  if (addr.kind() === 'ipv4' && DOTTED_TAIL.test(ip) && !MAPPED_DOTTED.test(ip)) {
    return { public: false, address: ip, range: 'ipv4Compatible' };
  }
  const range = addr.range();
  if (range !== 'unicast') return { public: false, address, range };
  if (CLOUD_METADATA_PARSED.some((m) => m.kind() === addr.kind() && m.toString() === address)) {
    return { public: false, address, range: 'cloudMetadata' };
  }
  if (addr.kind() === 'ipv6' && !(addr as ipaddr.IPv6).match(IPV6_GLOBAL_UNICAST)) {
    return { public: false, address, range: 'notGlobalUnicast' };
  }
  return { public: true, address, range };
}

/**
 * Whether `ip` (an IPv4 or IPv6 address in text form, without brackets) is an acceptable callback destination:
 * `true` only for public unicast addresses, see {@link classifyAddress} for the exact rule. Anything that is not
 * an IP address gives `false`; never throws.
 */
export function isPublicAddress(ip: string): boolean {
  return classifyAddress(ip).public;
}

/**
 * Whether a host name is local by name: `localhost`, or ends in `.localhost` (RFC 6761), `.local` (mDNS,
 * RFC 6762) or `.internal` (cloud-internal DNS such as `metadata.google.internal`). Case and trailing dots are
 * ignored.
 */
export function isLocalHostName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.+$/, '');
  return (
    h === 'localhost' ||
    h.endsWith('.localhost') ||
    h === 'local' ||
    h.endsWith('.local') ||
    h === 'internal' ||
    h.endsWith('.internal')
  );
}

/**
 * Checks a callback URL on its face (no DNS).
 *
 * Refused (`{ ok: false, reason }`), in this order:
 * - not an absolute URL by the WHATWG URL parser;
 * - a scheme other than `http:` / `https:` (`ftp:`, `file:`, `javascript:`, `data:`, …);
 * - credentials in the URL (`http://user:pass@host/`): a callback URL is stored and logged, secrets do not belong
 *   in it (also refused with `allowPrivate`);
 * and unless `options.allowPrivate`:
 * - an IP literal that is not public ({@link isPublicAddress}); the reason names the address and its range.
 *   WHATWG URL has already normalized the host, so `http://0x7f.1/` is checked as `127.0.0.1` and
 *   `http://[::ffff:127.0.0.1]/` as `::ffff:7f00:1` (then as `127.0.0.1`);
 * - a local host name ({@link isLocalHostName}).
 *
 * Otherwise `{ ok: true, url, hostIsIp }`. When `hostIsIp` is false the host is a name that is acceptable only
 * so far: it must be resolved and every address checked (`resolvePublicHost` / the guarded connector in
 * `src/dispatch/guard.ts`).
 */
export function checkCallbackUrl(url: string, options: DestinationOptions = { allowPrivate: false }): CallbackUrlCheck {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'not a valid absolute URL' };
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return { ok: false, reason: `scheme ${parsed.protocol} is not allowed (only http: and https:)` };
  }
  if (parsed.username !== '' || parsed.password !== '') {
    return { ok: false, reason: 'credentials in the URL are not allowed' };
  }
  const host = parsed.hostname;
  if (host === '') return { ok: false, reason: 'the URL has no host' };
  const ipText = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const hostIsIp = host.startsWith('[') || ipaddr.IPv4.isValidFourPartDecimal(host);
  if (options.allowPrivate) return { ok: true, url: parsed, hostIsIp };
  if (hostIsIp) {
    const c = classifyAddress(ipText);
    if (!c.public) {
      const shown = c.address === ipText ? ipText : `${ipText} (${c.address})`;
      return { ok: false, reason: `destination address ${shown} is not public (${c.range})` };
    }
    return { ok: true, url: parsed, hostIsIp };
  }
  if (isLocalHostName(host)) {
    return { ok: false, reason: `destination host ${host} is a local name` };
  }
  return { ok: true, url: parsed, hostIsIp };
}

/**
 * The destination key of a callback URL for per-destination limits: its scheme and authority (`https://host:port`),
 * lower-cased, as the prefix of the URL matched by `DESTINATION_PATTERN`. The same pattern runs in SQL (claim-runs.ts)
 * so a dispatcher can leave a saturated destination's runs unclaimed; the two must agree, hence one pattern.
 * Unlike WHATWG `URL.origin` it keeps an explicit default port (`:443`), a harmless difference: such a URL is simply
 * counted as its own destination.
 */
export const DESTINATION_PATTERN = '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*';
const destinationRe = new RegExp(DESTINATION_PATTERN);

/** `DESTINATION_PATTERN`'s match of `url`, lower-cased (the whole string when it does not match). */
export function destinationOf(url: string): string {
  return (destinationRe.exec(url)?.[0] ?? url).toLowerCase();
}
