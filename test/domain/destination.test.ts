import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import {
  checkCallbackUrl,
  classifyAddress,
  destinationOf,
  destinationPatternOf,
  isAllowedAddress,
  isCloudMetadataHostName,
  isLocalHostName,
  isPublicAddress,
} from '../../src/domain/destination.ts';

/** [address, expected isPublicAddress, expected classifyAddress().range] */
const ADDRESSES: Array<[string, boolean, string]> = [
  // IPv4 loopback 127/8
  ['127.0.0.1', false, 'loopback'],
  ['127.255.255.254', false, 'loopback'],
  // RFC 1918
  ['10.0.0.1', false, 'private'],
  ['10.255.255.255', false, 'private'],
  ['172.16.0.1', false, 'private'],
  ['172.31.255.254', false, 'private'],
  ['172.15.255.255', true, 'unicast'], // just below 172.16/12
  ['172.32.0.1', true, 'unicast'], // just above 172.16/12
  ['192.168.0.1', false, 'private'],
  ['192.168.255.255', false, 'private'],
  // RFC 6598 CGNAT 100.64/10
  ['100.64.0.1', false, 'carrierGradeNat'],
  ['100.127.255.254', false, 'carrierGradeNat'],
  ['100.128.0.1', true, 'unicast'],
  // link-local 169.254/16, cloud metadata (named as such whatever range it lies in)
  ['169.254.0.1', false, 'linkLocal'],
  ['169.254.169.123', false, 'linkLocal'], // AWS Time Sync
  ['169.254.169.254', false, 'cloudMetadata'],
  ['169.254.170.2', false, 'cloudMetadata'], // AWS ECS
  ['169.254.170.23', false, 'cloudMetadata'], // AWS EKS Pod Identity
  ['100.100.100.200', false, 'cloudMetadata'], // Alibaba metadata
  ['192.0.0.192', false, 'cloudMetadata'], // Oracle metadata
  ['168.63.129.16', false, 'cloudMetadata'], // Azure WireServer, in public unicast space
  ['168.63.129.17', true, 'unicast'],
  // unspecified / broadcast / multicast / reserved
  ['0.0.0.0', false, 'unspecified'],
  ['0.1.2.3', false, 'unspecified'],
  ['255.255.255.255', false, 'broadcast'],
  ['224.0.0.1', false, 'multicast'],
  ['239.255.255.250', false, 'multicast'],
  ['240.0.0.1', false, 'reserved'],
  ['198.18.0.1', false, 'reserved'], // RFC 2544 benchmarking
  ['198.19.255.254', false, 'reserved'],
  ['192.0.2.1', false, 'reserved'], // TEST-NET-1
  ['198.51.100.1', false, 'reserved'], // TEST-NET-2
  ['203.0.113.1', false, 'reserved'], // TEST-NET-3
  ['192.0.0.8', false, 'reserved'], // IETF protocol assignments
  ['192.88.99.1', false, 'reserved'], // 6to4 relay anycast
  // public IPv4
  ['8.8.8.8', true, 'unicast'],
  ['1.1.1.1', true, 'unicast'],
  ['93.184.215.14', true, 'unicast'],
  // odd IPv4 spellings that ipaddr.js (like inet_aton) accepts
  ['2130706433', false, 'loopback'],
  ['0x7f.1', false, 'loopback'],
  ['127.1', false, 'loopback'],
  // IPv6
  ['::1', false, 'loopback'],
  ['::', false, 'unspecified'],
  ['fe80::1', false, 'linkLocal'],
  ['febf:ffff::1', false, 'linkLocal'],
  ['fe80::1%eth0', false, 'scoped'],
  ['fc00::1', false, 'uniqueLocal'],
  ['fd12:3456:789a::1', false, 'uniqueLocal'],
  ['fd00:ec2::254', false, 'cloudMetadata'], // AWS IMDS IPv6
  ['fd00:ec2:0::254', false, 'cloudMetadata'],
  ['fd00:ec2::23', false, 'cloudMetadata'], // AWS EKS Pod Identity IPv6
  ['fd00:ec2::253', false, 'uniqueLocal'],
  ['fec0::1', false, 'deprecatedSiteLocal'],
  ['ff00::1', false, 'multicast'],
  ['ff02::1', false, 'multicast'],
  // IPv4-mapped: judged as the IPv4 address
  ['::ffff:10.0.0.1', false, 'private'],
  ['::ffff:127.0.0.1', false, 'loopback'],
  ['::ffff:7f00:1', false, 'loopback'],
  ['0:0:0:0:0:ffff:169.254.169.254', false, 'cloudMetadata'],
  ['::ffff:a9fe:a9fe', false, 'cloudMetadata'],
  ['::ffff:169.254.1.1', false, 'linkLocal'],
  ['::ffff:8.8.8.8', true, 'unicast'],
  // IPv4-compatible (deprecated) and other non-global IPv6 that ipaddr.js calls unicast
  ['::127.0.0.1', false, 'ipv4Compatible'],
  ['::8.8.8.8', false, 'ipv4Compatible'],
  ['::7f00:1', false, 'notGlobalUnicast'],
  ['::169.254.169.254', false, 'cloudMetadata'],
  ['::a9fe:a9fe', false, 'cloudMetadata'],
  ['::a9fe:101', false, 'linkLocal'],
  ['1::1', false, 'notGlobalUnicast'],
  ['4000::1', false, 'notGlobalUnicast'],
  // translation / tunnelling prefixes that can reach IPv4 space
  ['64:ff9b::7f00:1', false, 'rfc6052'], // NAT64 → 127.0.0.1
  ['64:ff9b::808:808', false, 'rfc6052'], // NAT64 even to a public IPv4
  ['64:ff9b:1::1', false, 'rfc6052'],
  ['64:ff9b::a9fe:a9fe', false, 'cloudMetadata'], // NAT64 → 169.254.169.254
  ['64:ff9b::a9fe:101', false, 'linkLocal'],
  ['::ffff:0:7f00:1', false, 'rfc6145'],
  ['::ffff:0:a9fe:a9fe', false, 'cloudMetadata'],
  ['2002:7f00:1::', false, '6to4'],
  ['2001::1', false, 'teredo'],
  ['100::1', false, 'discard'],
  ['2001:db8::', false, 'reserved'], // documentation
  ['2001:db8::1', false, 'reserved'],
  ['3fff::1', false, 'reserved'], // RFC 9637 documentation
  ['2001:2::1', false, 'benchmarking'],
  // public IPv6
  ['2606:4700::1111', true, 'unicast'],
  ['2001:4860:4860::8888', true, 'unicast'],
  ['2a00:1450:4001::1', true, 'unicast'],
  ['2606:4700::1111%eth0', false, 'scoped'],
  // not addresses
  ['', false, 'invalid'],
  ['localhost', false, 'invalid'],
  ['[::1]', false, 'invalid'],
  [' 8.8.8.8', false, 'invalid'],
  ['1.2.3.4.5', false, 'invalid'],
  ['256.0.0.1', false, 'invalid'],
];

describe('isPublicAddress / classifyAddress', () => {
  it('has a large table', () => {
    expect(ADDRESSES.length).toBeGreaterThanOrEqual(40);
  });

  it.each(ADDRESSES)('%s → public %s (%s)', (ip, expected, range) => {
    expect(isPublicAddress(ip)).toBe(expected);
    expect(classifyAddress(ip).range).toBe(range);
    expect(classifyAddress(ip).public).toBe(expected);
  });

  it('refuses cloud metadata addresses; all but Azure WireServer are outside ipaddr.js unicast anyway', () => {
    for (const ip of ['169.254.169.254', '169.254.170.2', 'fd00:ec2::254', '100.100.100.200', '192.0.0.192']) {
      expect(isPublicAddress(ip)).toBe(false);
      expect(ipaddr.process(ip).range()).not.toBe('unicast');
    }
    expect(ipaddr.process('168.63.129.16').range()).toBe('unicast');
    expect(isPublicAddress('168.63.129.16')).toBe(false);
  });

  it('unwraps IPv4-mapped IPv6 addresses', () => {
    expect(classifyAddress('::ffff:127.0.0.1').address).toBe('127.0.0.1');
    expect(classifyAddress('::ffff:808:808')).toEqual({ public: true, address: '8.8.8.8', range: 'unicast' });
  });
});

/** [address, allowed with allowPrivate]: private destinations allowed still leave metadata and link-local refused. */
const WITH_PRIVATE_ALLOWED: Array<[string, boolean]> = [
  // cloud metadata, in every spelling
  ['169.254.169.254', false],
  ['::ffff:169.254.169.254', false],
  ['::ffff:a9fe:a9fe', false],
  ['64:ff9b::a9fe:a9fe', false],
  ['::ffff:0:a9fe:a9fe', false],
  ['::a9fe:a9fe', false],
  ['fd00:ec2::254', false],
  ['fd00:ec2::23', false],
  ['100.100.100.200', false],
  ['169.254.170.2', false],
  ['192.0.0.192', false],
  ['168.63.129.16', false],
  // link-local, scoped, not an address
  ['169.254.0.1', false],
  ['169.254.169.253', false],
  ['::ffff:169.254.1.1', false],
  ['fe80::1', false],
  ['fe80::1%eth0', false],
  ['fd12::1%eth0', false],
  ['localhost', false],
  ['', false],
  // what local development needs
  ['127.0.0.1', true],
  ['::1', true],
  ['::ffff:127.0.0.1', true],
  ['0.0.0.0', true],
  ['10.0.0.1', true],
  ['172.16.0.1', true],
  ['192.168.1.10', true],
  ['100.64.0.1', true],
  ['100.100.100.201', true],
  ['fd12:3456:789a::1', true],
  ['fd00:ec2::253', true],
  ['8.8.8.8', true],
  ['2606:4700::1111', true],
];

describe('isAllowedAddress', () => {
  it.each(WITH_PRIVATE_ALLOWED)('%s with allowPrivate → %s', (ip, expected) => {
    expect(isAllowedAddress(ip, { allowPrivate: true })).toBe(expected);
  });

  it.each(ADDRESSES)('%s without allowPrivate → %s (isPublicAddress)', (ip, expected) => {
    expect(isAllowedAddress(ip, { allowPrivate: false })).toBe(expected);
  });
});

describe('isCloudMetadataHostName', () => {
  it.each([
    ['metadata.google.internal', true],
    ['METADATA.Google.Internal', true],
    ['metadata.google.internal.', true],
    ['metadata.google.internal..', true],
    ['google.internal', false],
    ['metadata.google.internal.example.com', false],
    ['xmetadata.google.internal', false],
    ['metadata.example.com', false],
  ])('%s → %s', (name, expected) => {
    expect(isCloudMetadataHostName(name)).toBe(expected);
  });
});

describe('isLocalHostName', () => {
  it.each([
    ['localhost', true],
    ['LOCALHOST', true],
    ['localhost.', true],
    ['foo.localhost', true],
    ['printer.local', true],
    ['metadata.google.internal', true],
    ['internal', true],
    ['example.com', false],
    ['localhost.example.com', false],
    ['internal.example.com', false],
    ['notlocal', false],
  ])('%s → %s', (name, expected) => {
    expect(isLocalHostName(name)).toBe(expected);
  });
});

describe('checkCallbackUrl', () => {
  const refusedAddress: Array<[string, string]> = [
    // WHATWG URL normalizes odd IPv4 spellings to 127.0.0.1 (the reason shows the normalized address)
    ['http://2130706433/', '127.0.0.1'],
    ['http://0x7f.1/', '127.0.0.1'],
    ['http://0x7f.0.0.1/', '127.0.0.1'],
    ['http://017700000001/', '127.0.0.1'],
    ['http://0177.0.0.1/', '127.0.0.1'],
    ['http://127.1/', '127.0.0.1'],
    ['http://127.0.0.1./', '127.0.0.1'],
    ['http://%31%32%37.0.0.1/', '127.0.0.1'],
    ['http://\uFF11\uFF12\uFF17.0.0.1/', '127.0.0.1'], // full-width digits
    ['http://127.0.0.1:8080/hook', '127.0.0.1'],
    ['https://10.1.2.3/', '10.1.2.3'],
    ['http://0/', '0.0.0.0'],
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254'],
    ['http://100.100.100.200/', '100.100.100.200'],
    // IPv6 literals in brackets
    ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1'],
    ['http://[::ffff:7f00:1]/', '::ffff:7f00:1'],
    ['http://[0:0:0:0:0:ffff:7f00:1]/', '::ffff:7f00:1'],
    ['http://[::1]/', '::1'],
    ['http://[::]/', '::'],
    ['http://[fe80::1]/', 'fe80::1'],
    ['http://[fd00:ec2::254]/', 'fd00:ec2::254'],
    ['http://[::127.0.0.1]/', '::7f00:1'],
    ['http://[64:ff9b::7f00:1]/', '64:ff9b::7f00:1'],
    ['http://[2002:7f00:1::]/', '2002:7f00:1::'],
  ];

  it.each(refusedAddress)('%s is refused naming %s', (url, address) => {
    const r = checkCallbackUrl(url);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).toContain(address);
      expect(r.reason).toMatch(/not public/);
    }
  });

  it('WHATWG URL itself normalizes the odd spellings (what the check relies on)', () => {
    for (const u of ['http://2130706433/', 'http://0x7f.1/', 'http://017700000001/', 'http://0177.0.0.1/', 'http://127.1/']) {
      expect(new URL(u).hostname).toBe('127.0.0.1');
    }
    expect(new URL('http://[::ffff:127.0.0.1]/').hostname).toBe('[::ffff:7f00:1]');
  });

  it('names the mapped IPv4 address too', () => {
    const r = checkCallbackUrl('http://[::ffff:127.0.0.1]/');
    expect(r).toEqual({ ok: false, reason: 'destination address ::ffff:7f00:1 (127.0.0.1) is not public (loopback)' });
  });

  it.each([
    ['ftp://example.com/', /scheme ftp:/],
    ['file:///etc/passwd', /scheme file:/],
    ['javascript:alert(1)', /scheme javascript:/],
    ['data:text/plain,hi', /scheme data:/],
    ['gopher://example.com/', /scheme gopher:/],
    ['ws://example.com/', /scheme ws:/],
    ['http://user:pass@example.com/', /credentials/],
    ['http://user@example.com/', /credentials/],
    ['https://:secret@example.com/', /credentials/],
    ['http://localhost/', /local name/],
    ['http://localhost:3000/', /local name/],
    ['http://LocalHost./', /local name/],
    ['http://foo.localhost/', /local name/],
    ['http://printer.local/', /local name/],
    ['http://metadata.google.internal/computeMetadata/v1/', /host metadata\.google\.internal is a cloud metadata service/],
    ['http://METADATA.GOOGLE.INTERNAL./computeMetadata/v1/', /cloud metadata service/],
    ['http://instance-data.ec2.internal/', /local name/],
    ['http://\uFF4C\uFF4F\uFF43\uFF41\uFF4C\uFF48\uFF4F\uFF53\uFF54/', /local name/], // full-width "localhost"
    ['not a url', /not a valid absolute URL/],
    ['/relative/path', /not a valid absolute URL/],
    ['http://1.2.3.4.5/', /not a valid absolute URL/],
    ['http://[fe80::1%25eth0]/', /not a valid absolute URL/],
  ])('%s is refused', (url, reason) => {
    const r = checkCallbackUrl(url);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
  });

  it.each([
    ['https://example.com/hook', false],
    ['http://hooks.example.org:8080/a?b=c', false],
    ['https://127.0.0.1.nip.io/', false], // a name: must be resolved later (guard.ts)
    ['https://localhost.example.com/', false],
    ['http://8.8.8.8/', true],
    ['https://1.1.1.1:8443/x', true],
    ['http://[2606:4700::1111]/', true],
    ['http://[::ffff:8.8.8.8]/', true],
  ])('%s is accepted (hostIsIp %s)', (url, hostIsIp) => {
    const r = checkCallbackUrl(url);
    expect(r).toMatchObject({ ok: true, hostIsIp });
    if (r.ok) expect(r.url).toBeInstanceOf(URL);
  });

  // Issue #28 point 7: a fragment is never sent, so the signed `sub` (the URL as registered) never matches.
  it.each([
    ['https://hooks.example.com/cb#frag', false],
    ['https://hooks.example.com/cb#', false],
    ['https://hooks.example.com/#/route', false],
    ['https://hooks.example.com/cb?q=1#', false],
    ['http://127.0.0.1:9000/cb#x', true],
  ])('refuses %s, naming the fragment (allowPrivate %s)', (url, allowPrivate) => {
    const r = checkCallbackUrl(url, { allowPrivate });
    expect(r).toMatchObject({ ok: false });
    if (!r.ok) expect(r.reason).toMatch(/fragment \(#…\) is not allowed.*Chime-Signature/);
  });

  it('accepts a # that is percent-encoded (not a fragment)', () => {
    expect(checkCallbackUrl('https://hooks.example.com/cb?tag=%23a')).toMatchObject({ ok: true });
  });

  it('returns the normalized URL', () => {
    const r = checkCallbackUrl('HTTPS://Example.COM:443/a/../b');
    expect(r.ok && r.url.href).toBe('https://example.com/b');
  });

  describe('allowPrivate', () => {
    const allow = { allowPrivate: true };
    it.each([
      ['http://127.0.0.1:8080/', true],
      ['http://2130706433/', true],
      ['http://[::1]/', true],
      ['http://10.0.0.1/', true],
      ['http://localhost:3000/', false],
      ['http://foo.localhost/', false],
    ])('accepts %s (hostIsIp %s)', (url, hostIsIp) => {
      expect(checkCallbackUrl(url, allow)).toMatchObject({ ok: true, hostIsIp });
    });

    it.each([
      ['http://192.168.1.10:3000/hook', true],
      ['http://[fd12::1]/', true],
      ['http://100.64.0.1/', true],
      ['http://printer.local/', false],
      ['http://metadata.example.com/', false],
    ])('accepts %s (hostIsIp %s)', (url, hostIsIp) => {
      expect(checkCallbackUrl(url, allow)).toMatchObject({ ok: true, hostIsIp });
    });

    // Issue #28 point 3: cloud metadata stays refused in dev mode, in every spelling; so does link-local.
    it.each([
      ['http://169.254.169.254/latest/meta-data/', '169.254.169.254', 'cloudMetadata'],
      ['http://[::ffff:169.254.169.254]/', '::ffff:a9fe:a9fe (169.254.169.254)', 'cloudMetadata'],
      ['http://2852039166/', '169.254.169.254', 'cloudMetadata'],
      ['http://0xa9.0xfe.0xa9.0xfe/', '169.254.169.254', 'cloudMetadata'],
      ['http://[fd00:ec2::254]/latest/meta-data/', 'fd00:ec2::254', 'cloudMetadata'],
      ['http://[fd00:ec2::23]/', 'fd00:ec2::23', 'cloudMetadata'],
      ['http://100.100.100.200/latest/meta-data/', '100.100.100.200', 'cloudMetadata'],
      ['http://169.254.170.2/v2/credentials/x', '169.254.170.2', 'cloudMetadata'],
      ['http://192.0.0.192/', '192.0.0.192', 'cloudMetadata'],
      ['http://168.63.129.16/machine?comp=goalstate', '168.63.129.16', 'cloudMetadata'],
      ['http://[64:ff9b::a9fe:a9fe]/', '64:ff9b::a9fe:a9fe', 'cloudMetadata'],
      ['http://169.254.169.123/', '169.254.169.123', 'linkLocal'],
      ['http://[fe80::1]/', 'fe80::1', 'linkLocal'],
    ])('still refuses %s (%s, %s)', (url, address, range) => {
      const r = checkCallbackUrl(url, allow);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toBe(`destination address ${address} is not allowed, even with private destinations allowed (${range})`);
    });

    it.each([
      'http://metadata.google.internal/computeMetadata/v1/',
      'http://metadata.google.internal./computeMetadata/v1/',
      'http://METADATA.google.INTERNAL:80/',
      'http://%6Detadata.google.internal/',
      'https://metadata.google.internal/',
    ])('still refuses the metadata host name in %s', (url) => {
      const r = checkCallbackUrl(url, allow);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toMatch(/^destination host metadata\.google\.internal\.? is a cloud metadata service$/);
    });

    it.each([
      ['ftp://127.0.0.1/', /scheme/],
      ['file:///etc/passwd', /scheme/],
      ['javascript:alert(1)', /scheme/],
      ['http://u:p@localhost/', /credentials/],
      ['http://localhost:3000/cb#frag', /fragment/],
    ])('still refuses %s', (url, reason) => {
      const r = checkCallbackUrl(url, allow);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toMatch(reason);
    });
  });

  it('defaults to allowPrivate false', () => {
    expect(checkCallbackUrl('http://127.0.0.1/').ok).toBe(false);
    expect(checkCallbackUrl('http://127.0.0.1/', { allowPrivate: false }).ok).toBe(false);
  });
});

// Issue #28 point 8: the per-destination limit is keyed on the normalized origin, not on the URL's text.
describe('destinationOf', () => {
  it.each([
    ['https://a.example/hook', 'https://a.example'],
    ['https://Example.COM/a/b?x=1#f', 'https://example.com'],
    ['HTTPS://A.EXAMPLE/x', 'https://a.example'],
    ['https://a.example:443/x', 'https://a.example'],
    ['https://a.example:0443/x', 'https://a.example'],
    ['https:\\\\a.example\\x', 'https://a.example'],
    ['https:a.example/x', 'https://a.example'],
    ['https://a.example\\x', 'https://a.example'],
    ['https://a.example./x', 'https://a.example'],
    ['https://%61.example/x', 'https://a.example'],
    ['https://\uFF41.example/x', 'https://a.example'], // full-width "a"
    ['https://a.example?q', 'https://a.example'],
    ['http://a.example:80/', 'http://a.example'],
    ['http://a.example:8080/', 'http://a.example:8080'],
    ['https://a.example:80/', 'https://a.example:80'],
    ['http://a.example/', 'http://a.example'],
    ['https://bücher.example/', 'https://xn--bcher-kva.example'],
    ['http://127.0.0.1:8080', 'http://127.0.0.1:8080'],
    ['http://2130706433:8080/', 'http://127.0.0.1:8080'],
    ['http://[::1]:9000/hook', 'http://[::1]:9000'],
    ['http://[0:0::1]:9000/hook', 'http://[::1]:9000'],
    ['not a url', 'not a url'],
  ])('%s → %s', (url, expected) => {
    expect(destinationOf(url)).toBe(expected);
  });
});

describe('destinationPatternOf', () => {
  it('is the scheme and authority as written, lower-cased, whatever follows (what SQL computes too)', () => {
    expect(destinationPatternOf('https://Example.COM/a/b?x=1#f')).toBe('https://example.com');
    expect(destinationPatternOf('https://a.example:443/x')).toBe('https://a.example:443');
    expect(destinationPatternOf('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
    expect(destinationPatternOf('http://[::1]:9000/hook')).toBe('http://[::1]:9000');
    expect(destinationPatternOf('https://a.example?q')).toBe('https://a.example');
    expect(destinationPatternOf('not a url')).toBe('');
  });
});
