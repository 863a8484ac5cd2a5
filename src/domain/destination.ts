/**
 * Callback destination policy (SSRF guard, pure part).
 *
 * Chime sends HTTP requests to URLs its tenants choose, from inside our network. A tenant must not be able to
 * make it call loopback, the private network, link-local cloud metadata services and the like. This module
 * decides, without any I/O, whether an IP address is an acceptable destination and whether a callback URL is
 * acceptable on its face. Host names still have to be resolved and every resolved address checked: that is
 * done in `src/dispatch/guard.ts` (Node), which also pins the checked address for the connection. Allowing private
 * destinations (local development) still leaves cloud metadata and link-local destinations refused.
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
   * Allow loopback, private and other non-public destinations and local host names
   * (`CHIME_ALLOW_PRIVATE_DESTINATIONS=true`, e.g. local development against a receiver on localhost). Still refused:
   * cloud metadata addresses and names, link-local addresses (169.254.0.0/16, fe80::/10) and scoped IPv6 addresses
   * ({@link isAllowedAddress}); and, as always, schemes other than http/https, credentials and fragments.
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
  /** Whether it is public, acceptable in every mode (see {@link isPublicAddress}, {@link isAllowedClass}). */
  public: boolean;
  /** The address as it will be checked: IPv4-mapped IPv6 unwrapped to IPv4, else ipaddr.js's `toString()`. */
  address: string;
  /**
   * Why: ipaddr.js's `range()` name (`unicast`, `loopback`, `private`, `linkLocal`, `uniqueLocal`,
   * `carrierGradeNat`, `rfc6052`, `6to4`, `teredo`, `reserved`, …), or one of our own: `invalid` (not an IP
   * address), `cloudMetadata` (CLOUD_METADATA, whatever range it lies in), `scoped` (IPv6 with a zone id),
   * `ipv4Compatible` (deprecated `::a.b.c.d`), `notGlobalUnicast` (IPv6 outside 2000::/3).
   */
  range: string;
};

/**
 * Cloud metadata and platform credential endpoints, refused in every mode (also with `allowPrivate`), in any spelling
 * that reaches them: IPv4-mapped, IPv4-translated, NAT64 or IPv4-compatible IPv6. Sources: each vendor's documentation
 * named beside it.
 */
const CLOUD_METADATA: readonly string[] = [
  '169.254.169.254', // AWS IMDS, GCP, Azure IMDS, OpenStack, DigitalOcean, Oracle Cloud (each vendor's metadata docs)
  '169.254.170.2', // AWS ECS task metadata and credentials (ECS developer guide, "Task metadata endpoint")
  '169.254.170.23', // AWS EKS Pod Identity Agent, IPv4 (EKS user guide, "Set up the Amazon EKS Pod Identity Agent")
  'fd00:ec2::254', // AWS IMDS over IPv6 (EC2 user guide, "Instance metadata service endpoints")
  'fd00:ec2::23', // AWS EKS Pod Identity Agent, IPv6 (EKS user guide, as above)
  '100.100.100.200', // Alibaba Cloud ECS metadata ("Instance metadata", Alibaba Cloud ECS docs)
  '192.0.0.192', // Oracle Cloud (kept from the first list; in 192.0.0.0/24, IETF protocol assignments, so reserved anyway)
  // Azure WireServer: "a virtual public IP address that is used to facilitate a communication channel to Azure
  // platform resources" (Microsoft Learn, "What is IP address 168.63.129.16?"); the only entry in public unicast space.
  '168.63.129.16',
];
const CLOUD_METADATA_KEYS = new Set(CLOUD_METADATA.map((a) => addressKey(ipaddr.parse(a))));

/**
 * Cloud metadata host names, refused in every mode without resolving them. Only names a vendor documents:
 * `metadata.google.internal` (Google Cloud, "View and query VM metadata": `http://metadata.google.internal/computeMetadata/v1/`).
 * Other names said to lead to a metadata service (short `metadata`, `metadata.goog`, `instance-data`) are not listed for
 * want of a vendor source; where they do, it is through an address of CLOUD_METADATA, which the connect-time guard
 * refuses after resolving (src/dispatch/guard.ts).
 */
const CLOUD_METADATA_HOST_NAMES: ReadonlySet<string> = new Set(['metadata.google.internal']);

/**
 * IPv6 prefixes whose last 32 bits carry an IPv4 address a packet may end up at: NAT64 (RFC 6052), IPv4-translated
 * (RFC 6145), IPv4-compatible (RFC 4291, deprecated). IPv4-mapped is unwrapped by `ipaddr.process()` already.
 */
const IPV4_EMBEDDING: readonly [ipaddr.IPv6, number][] = [
  ipaddr.IPv6.parseCIDR('64:ff9b::/96'),
  ipaddr.IPv6.parseCIDR('::ffff:0:0:0/96'),
  ipaddr.IPv6.parseCIDR('::/96'),
];

/**
 * Ranges refused even with `allowPrivate`: metadata services; link-local, because no local receiver listens there
 * while clouds put their platform services there (AWS IMDS, Time Sync 169.254.169.123 and DNS 169.254.169.253, ECS
 * and EKS credential agents, Kubernetes NodeLocal DNS 169.254.20.10) and fe80::/10 is unusable without a zone id
 * anyway; scoped addresses (a zone id is how link-local is reached); and anything that is not an address.
 */
const REFUSED_WITH_PRIVATE_ALLOWED: ReadonlySet<string> = new Set(['cloudMetadata', 'linkLocal', 'scoped', 'invalid']);

/** IANA's IPv6 global unicast block; everything outside it is reserved, unassigned or special. */
const IPV6_GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

/** A trailing dotted IPv4 part in an IPv6 text, and the IPv4-mapped form that alone we accept with it. */
const DOTTED_TAIL = /:\d+\.\d+\.\d+\.\d+$/;
const MAPPED_DOTTED = /(^|:)ffff:\d+\.\d+\.\d+\.\d+$/i;

/** An address's bytes as text: equal for every spelling of one address, zone id left out. */
function addressKey(addr: ipaddr.IPv4 | ipaddr.IPv6): string {
  return addr.toByteArray().join('.');
}

/** The IPv4 address an IPv6 address of IPV4_EMBEDDING carries in its last 32 bits, else null. */
function embeddedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4 | null {
  if (!IPV4_EMBEDDING.some((prefix) => addr.match(prefix))) return null;
  return new ipaddr.IPv4(addr.toByteArray().slice(12));
}

/**
 * Classifies one IP address as a callback destination. Never throws.
 *
 * The text is parsed with ipaddr.js and passed through `ipaddr.process()`, so an IPv4-mapped IPv6 address
 * (`::ffff:127.0.0.1`, `::ffff:7f00:1`) is judged as the IPv4 address it carries. The rule is an allow-list:
 * only ipaddr.js's `unicast` range is public; on top of that
 * - an IPv6 text with a zone id (`fe80::1%eth0`) is refused (`scoped`);
 * - a cloud metadata address is `cloudMetadata`, also when an IPv6 address carries it (NAT64 `64:ff9b::a9fe:a9fe`,
 *   IPv4-translated, IPv4-compatible), and an IPv6 address carrying a link-local IPv4 address is `linkLocal`: the
 *   ranges refused even with `allowPrivate` ({@link isAllowedAddress});
 * - `::a.b.c.d` without `ffff:` (deprecated IPv4-compatible form, which ipaddr.js 2.5 misreads as IPv4-mapped)
 *   is refused;
 * - IPv6 must lie in 2000::/3 (ipaddr.js calls e.g. `::7f00:1` or `1::1` `unicast`, but they are not global).
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
  const v4 = addr.kind() === 'ipv4' ? (addr as ipaddr.IPv4) : embeddedIPv4(addr as ipaddr.IPv6);
  if (CLOUD_METADATA_KEYS.has(addressKey(addr)) || (v4 && CLOUD_METADATA_KEYS.has(addressKey(v4)))) {
    return { public: false, address, range: 'cloudMetadata' };
  }
  if (v4?.range() === 'linkLocal') return { public: false, address, range: 'linkLocal' };
  if (addr.kind() === 'ipv4' && DOTTED_TAIL.test(ip) && !MAPPED_DOTTED.test(ip)) {
    return { public: false, address: ip, range: 'ipv4Compatible' };
  }
  const range = addr.range();
  if (range !== 'unicast') return { public: false, address, range };
  if (addr.kind() === 'ipv6' && !(addr as ipaddr.IPv6).match(IPV6_GLOBAL_UNICAST)) {
    return { public: false, address, range: 'notGlobalUnicast' };
  }
  return { public: true, address, range };
}

/**
 * Whether an address of class `c` ({@link classifyAddress}) may be called: a public one always; with
 * `options.allowPrivate` also any other, except cloud metadata, link-local, scoped and invalid addresses.
 */
export function isAllowedClass(c: AddressClass, options: DestinationOptions): boolean {
  return c.public || (options.allowPrivate && !REFUSED_WITH_PRIVATE_ALLOWED.has(c.range));
}

/**
 * Whether `ip` (an IPv4 or IPv6 address in text form, without brackets) may be called under `options`: see
 * {@link isAllowedClass}. Never throws.
 */
export function isAllowedAddress(ip: string, options: DestinationOptions): boolean {
  return isAllowedClass(classifyAddress(ip), options);
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
    h === 'localhost' || h.endsWith('.localhost') || h === 'local' || h.endsWith('.local') || h === 'internal' || h.endsWith('.internal')
  );
}

/**
 * Whether a host name is a cloud metadata service's name (`metadata.google.internal`), refused in every mode. Case and
 * trailing dots are ignored.
 */
export function isCloudMetadataHostName(hostname: string): boolean {
  return CLOUD_METADATA_HOST_NAMES.has(hostname.toLowerCase().replace(/\.+$/, ''));
}

/**
 * Checks a callback URL on its face (no DNS). Used at registration (job callback URLs and notification endpoint
 * URLs) and, on Workers, before every attempt.
 *
 * Refused (`{ ok: false, reason }`), in this order:
 * - not an absolute URL by the WHATWG URL parser;
 * - a scheme other than `http:` / `https:` (`ftp:`, `file:`, `javascript:`, `data:`, …);
 * - credentials in the URL (`http://user:pass@host/`): a callback URL is stored and logged, secrets do not belong
 *   in it;
 * - a fragment, even an empty one (`https://x/y#`): it is never sent, so the `sub` of the signed `Chime-Signature`
 *   (the callback URL as registered) would never match the URL the receiver sees;
 * - an IP literal not allowed by {@link isAllowedClass} (unless `options.allowPrivate`, any non-public address; with
 *   it, cloud metadata, link-local and scoped ones); the reason names the address as written and its range.
 *   WHATWG URL has already normalized the host, so `http://0x7f.1/` is checked as `127.0.0.1`,
 *   `http://2852039166/` as `169.254.169.254` and `http://[::ffff:127.0.0.1]/` as `::ffff:7f00:1` (then as
 *   `127.0.0.1`);
 * - a cloud metadata host name ({@link isCloudMetadataHostName});
 * - unless `options.allowPrivate`, a local host name ({@link isLocalHostName}).
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
  // `hash` is '' for an empty fragment too; the serialization keeps its '#' (no other part can hold a bare '#').
  if (parsed.href.includes('#')) {
    return {
      ok: false,
      reason:
        'a fragment (#…) is not allowed in a callback URL: it is never sent, so the signed Chime-Signature sub would not match the request',
    };
  }
  const host = parsed.hostname;
  if (host === '') return { ok: false, reason: 'the URL has no host' };
  const ipText = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const hostIsIp = host.startsWith('[') || ipaddr.IPv4.isValidFourPartDecimal(host);
  if (hostIsIp) {
    const c = classifyAddress(ipText);
    if (!isAllowedClass(c, options)) {
      const shown = c.address === ipText ? ipText : `${ipText} (${c.address})`;
      return { ok: false, reason: `destination address ${shown} ${refusal(options)} (${c.range})` };
    }
    return { ok: true, url: parsed, hostIsIp };
  }
  if (isCloudMetadataHostName(host)) {
    return { ok: false, reason: `destination host ${host} is a cloud metadata service` };
  }
  if (!options.allowPrivate && isLocalHostName(host)) {
    return { ok: false, reason: `destination host ${host} is a local name` };
  }
  return { ok: true, url: parsed, hostIsIp };
}

/**
 * How a refused address is described under `options` (after "address X" or "resolves to an address that"): not
 * public, or, with private destinations allowed, one of the kinds still refused.
 */
export function refusal(options: DestinationOptions): string {
  return options.allowPrivate ? 'is not allowed, even with private destinations allowed' : 'is not public';
}

/**
 * The destination of a callback URL, the key of its per-destination limit: the WHATWG origin of the parsed URL
 * (scheme, host and port, lower-cased, default port dropped: `HTTPS://A.example:443/x`, `https:\\a.example\\x` and
 * `https://a.example/y` are all `https://a.example`), with a trailing dot of the host name dropped too
 * (`a.example.` is the same DNS name). Text that does not parse or has no origin (not an http(s) URL, which
 * registration refuses anyway) is its own destination. Different names of one server still
 * count as different destinations: telling them apart would take DNS.
 */
export function destinationOf(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url;
  }
  if (u.origin === 'null') return url;
  const host = u.hostname.endsWith('.') ? u.hostname.replace(/\.+$/, '') : u.hostname;
  return `${u.protocol}//${host}${u.port === '' ? '' : `:${u.port}`}`;
}

/**
 * The text form of a destination that SQL can compute: the scheme and authority of the URL as written (`https://host:port`),
 * lower-cased, as the prefix matched by `DESTINATION_PATTERN`. The claim (claim-runs.ts) leaves runs whose callback
 * URL has one of a list of these unclaimed, so the run queue names saturated destinations in this form (every spelling
 * of the destination among its queued runs): the two must agree, hence one pattern. Several spellings
 * (`https://a.example`, `https://a.example:443`) can be one destination ({@link destinationOf}).
 */
export const DESTINATION_PATTERN = '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*';
const destinationRe = new RegExp(DESTINATION_PATTERN);

/** `DESTINATION_PATTERN`'s match of `url`, lower-cased; '' when it does not match (as the SQL's `coalesce(…, '')`). */
export function destinationPatternOf(url: string): string {
  return (destinationRe.exec(url)?.[0] ?? '').toLowerCase();
}
