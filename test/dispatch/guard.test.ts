/**
 * The guarded connector against a real node:http server on 127.0.0.1.
 *
 * No test sends traffic anywhere but loopback: host names are resolved by injected fake lookups, and where a
 * fake lookup yields a public address the inner connector is an injected function that records what it was
 * asked to connect to and either fails without a socket or connects to the local server instead.
 */
import type dns from 'node:dns';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, buildConnector, errors, fetch } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createDeliver } from '../../src/dispatch/deliver.ts';
import { createGuardedConnector, DestinationRefusedError, type LookupAll, resolvePublicHost } from '../../src/dispatch/guard.ts';
import { ERROR_CLASS } from '../../src/domain/attempt-outcome.ts';

const PUBLIC_V4 = '93.184.215.14';
const PUBLIC_V6 = '2606:4700::1111';

let server: http.Server;
let port: number;
let requests: Array<{ url: string; host: string | undefined }> = [];
let connections = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    requests.push({ url: req.url ?? '', host: req.headers.host });
    res.end('pong');
  });
  server.on('connection', () => {
    connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const agents: Agent[] = [];
function agentWith(connect: buildConnector.connector): Agent {
  const a = new Agent({ connect });
  agents.push(a);
  return a;
}

afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.destroy()));
  requests = [];
  connections = 0;
});

/** Walks `err`, `err.cause`, … and returns the first link that matches. */
function findInChain<T>(err: unknown, pred: (e: unknown) => e is T): T | undefined {
  const seen = new Set<unknown>();
  let e: unknown = err;
  while (e != null && !seen.has(e)) {
    if (pred(e)) return e;
    seen.add(e);
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
const isRefused = (e: unknown): e is DestinationRefusedError => e instanceof DestinationRefusedError;

async function failureOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the request to fail, it succeeded');
}

/** A fake resolver: a fixed answer per name, with a record of the calls. */
function fakeLookup(table: Record<string, string[]>): LookupAll & { calls: Array<[string, dns.LookupAllOptions]> } {
  const calls: Array<[string, dns.LookupAllOptions]> = [];
  const fn = ((hostname, options, callback) => {
    calls.push([hostname, options]);
    const answer = table[hostname];
    setImmediate(() => {
      if (!answer) {
        const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
        err.code = 'ENOTFOUND';
        callback(err, []);
        return;
      }
      callback(
        null,
        answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      );
    });
  }) as LookupAll & { calls: Array<[string, dns.LookupAllOptions]> };
  fn.calls = calls;
  return fn;
}

/** An inner connector that records its options and fails without opening any socket. */
function recordingConnector(): buildConnector.connector & { seen: buildConnector.Options[] } {
  const seen: buildConnector.Options[] = [];
  const fn = ((opts, callback) => {
    seen.push({ ...opts });
    setImmediate(() => callback(new Error('inner connector: no network in tests'), null));
  }) as buildConnector.connector & { seen: buildConnector.Options[] };
  fn.seen = seen;
  return fn;
}

describe('createGuardedConnector, allowPrivate false', () => {
  it('refuses http://127.0.0.1:PORT/ with DestinationRefusedError; the server sees nothing', async () => {
    const agent = agentWith(createGuardedConnector({ allowPrivate: false }));

    const err = await failureOf(agent.request({ origin: `http://127.0.0.1:${port}`, path: '/hook', method: 'POST' }));
    const refused = findInChain(err, isRefused);
    expect(refused).toBeInstanceOf(DestinationRefusedError);
    expect(refused?.code).toBe('ERR_DESTINATION_REFUSED');
    expect(refused?.message).toContain('127.0.0.1');
    expect(refused?.address).toBe('127.0.0.1');

    expect(requests).toEqual([]);
    expect(connections).toBe(0);
  });

  it('fetch wraps the refusal as the cause of "fetch failed"', async () => {
    const agent = agentWith(createGuardedConnector({ allowPrivate: false }));
    const err = await failureOf(fetch(`http://127.0.0.1:${port}/`, { dispatcher: agent }));
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).cause).toBeInstanceOf(DestinationRefusedError);
    expect(findInChain(err, isRefused)?.message).toMatch(/address 127\.0\.0\.1 is not public \(loopback\)/);
    expect(requests).toEqual([]);
    expect(connections).toBe(0);
  });

  it.each([
    [`http://[::ffff:127.0.0.1]:PORT/`, '::ffff:7f00:1'],
    [`http://[::1]:PORT/`, '::1'],
    [`http://2130706433:PORT/`, '127.0.0.1'],
    [`http://0x7f.1:PORT/`, '127.0.0.1'],
  ])('refuses the literal %s (%s) without asking the resolver', async (template, address) => {
    const lookup = fakeLookup({});
    const agent = agentWith(createGuardedConnector({ allowPrivate: false, lookup }));
    const err = await failureOf(fetch(template.replace('PORT', String(port)), { dispatcher: agent }));
    expect(findInChain(err, isRefused)?.address).toBe(address);
    expect(lookup.calls).toEqual([]);
    expect(connections).toBe(0);
  });

  it('refuses a host name whose lookup yields 127.0.0.1 (DNS rebinding), looked up with all: true', async () => {
    const lookup = fakeLookup({ 'rebind.example': ['127.0.0.1'] });
    const agent = agentWith(createGuardedConnector({ allowPrivate: false, lookup }));

    const err = await failureOf(agent.request({ origin: `http://rebind.example:${port}`, path: '/', method: 'GET' }));
    const refused = findInChain(err, isRefused);
    // Issue #28 point 4: the message (the tenant's attempt log) names the host, not the address it resolved to.
    expect(refused?.message).toBe('destination refused: host rebind.example resolves to an address that is not public');
    expect(refused?.address).toBe('127.0.0.1');
    expect(refused?.hostname).toBe('rebind.example');
    expect(lookup.calls).toEqual([['rebind.example', { all: true }]]);
    expect(requests).toEqual([]);
    expect(connections).toBe(0);
  });

  it('refuses a name when any one of its addresses is not public', async () => {
    const lookup = fakeLookup({ 'mixed.example': [PUBLIC_V4, '10.0.0.7'] });
    const inner = recordingConnector();
    const agent = agentWith(createGuardedConnector({ allowPrivate: false, lookup, connect: inner }));
    const err = await failureOf(agent.request({ origin: 'http://mixed.example', path: '/', method: 'GET' }));
    expect(findInChain(err, isRefused)?.address).toBe('10.0.0.7');
    expect(findInChain(err, isRefused)?.message).not.toContain('10.0.0.7');
    expect(inner.seen).toEqual([]);
  });

  // Issue #28 point 4: what the tenant reads in its run history, through the real delivery function.
  it.each([
    ['vm', ['127.0.0.1']],
    ['db.corp.example', ['10.20.30.40']],
    ['imds.example', ['169.254.169.254']],
    ['mixed.example', [PUBLIC_V4, '192.168.7.7']],
    ['v6.example', ['fd12:3456::7']],
  ])('the attempt log of a name (%s) resolving to %j says refused, without the address', async (host, addresses) => {
    const lookup = fakeLookup({ [host]: addresses });
    const inner = recordingConnector();
    const agent = agentWith(createGuardedConnector({ allowPrivate: false, lookup, connect: inner }));
    const r = await createDeliver(agent)(
      { url: `http://${host}:${port}/hook`, method: 'POST', headers: {}, body: '{}', timeoutMs: 2_000 },
      Date.now,
    );
    expect(r).toEqual({
      kind: 'error',
      errorClass: ERROR_CLASS.refusedDestination,
      message: `destination refused: host ${host} resolves to an address that is not public (ERR_DESTINATION_REFUSED)`,
      maybeSent: false,
    });
    expect(inner.seen).toEqual([]);
  });

  it('tries the next checked address when one refuses the connection at once, and only then', async () => {
    const lookup = fakeLookup({ 'two.example': [PUBLIC_V6, PUBLIC_V4] });
    const seen: string[] = [];
    const inner: buildConnector.connector = (opts, callback) => {
      seen.push(opts.hostname);
      const err: NodeJS.ErrnoException = new Error(`connect ECONNREFUSED ${opts.hostname}:80`);
      err.code = 'ECONNREFUSED';
      setImmediate(() => callback(err, null));
    };
    const agent = agentWith(createGuardedConnector({ allowPrivate: false, lookup, connect: inner }));
    const err = await failureOf(agent.request({ origin: 'http://two.example', path: '/', method: 'GET' }));
    expect(seen).toEqual([PUBLIC_V6, PUBLIC_V4]);
    expect(findInChain(err, (e): e is NodeJS.ErrnoException => (e as NodeJS.ErrnoException)?.code === 'ECONNREFUSED')?.message).toContain(
      PUBLIC_V4,
    );
  });

  it('refuses local names without a lookup', async () => {
    const lookup = fakeLookup({ localhost: [PUBLIC_V4] });
    const agent = agentWith(createGuardedConnector({ allowPrivate: false, lookup }));
    const err = await failureOf(agent.request({ origin: `http://localhost:${port}`, path: '/', method: 'GET' }));
    expect(findInChain(err, isRefused)?.message).toMatch(/localhost is a local name/);
    expect(lookup.calls).toEqual([]);
    expect(connections).toBe(0);
  });

  it('accepts a name resolving to a public address and connects to that pinned address', async () => {
    const lookup = fakeLookup({ 'hooks.example': [PUBLIC_V4, PUBLIC_V6] });
    const inner = recordingConnector();
    const agent = agentWith(createGuardedConnector({ allowPrivate: false, lookup, connect: inner }));

    const err = await failureOf(agent.request({ origin: 'http://hooks.example:8080', path: '/', method: 'GET' }));
    expect(findInChain(err, isRefused)).toBeUndefined();
    expect((err as Error).message).toMatch(/no network in tests/);
    expect(inner.seen).toHaveLength(1);
    expect(inner.seen[0]).toMatchObject({
      hostname: PUBLIC_V4,
      servername: 'hooks.example',
      protocol: 'http:',
      port: '8080',
      host: 'hooks.example:8080',
    });
  });

  it('keeps the host name as TLS servername (SNI) for https', async () => {
    const lookup = fakeLookup({ 'secure.example': [PUBLIC_V6] });
    const inner = recordingConnector();
    const agent = agentWith(createGuardedConnector({ allowPrivate: false, lookup, connect: inner }));
    await failureOf(agent.request({ origin: 'https://secure.example', path: '/', method: 'GET' }));
    expect(inner.seen[0]).toMatchObject({ hostname: PUBLIC_V6, servername: 'secure.example', protocol: 'https:' });
  });

  it('accepts a public IP literal and sets no servername for it', async () => {
    const lookup = fakeLookup({});
    const inner = recordingConnector();
    const agent = agentWith(createGuardedConnector({ allowPrivate: false, lookup, connect: inner }));
    await failureOf(agent.request({ origin: `https://[${PUBLIC_V6}]`, path: '/', method: 'GET' }));
    expect(lookup.calls).toEqual([]);
    expect(inner.seen[0]?.hostname).toBe(PUBLIC_V6);
    expect(inner.seen[0]?.servername).toBeFalsy();
  });

  it('pins: the request goes over the socket to the checked address, with no second resolution', async () => {
    // The resolver answers a public address first and loopback afterwards (a rebinding attacker's DNS).
    let n = 0;
    const calls: string[] = [];
    const lookup: LookupAll = (hostname, _options, callback) => {
      calls.push(hostname);
      const address = n++ === 0 ? PUBLIC_V4 : '127.0.0.1';
      setImmediate(() => callback(null, [{ address, family: 4 }]));
    };
    // The inner connector records the pinned address, then (to stay on this machine) reaches the local server.
    const real = buildConnector({});
    const asked: string[] = [];
    const inner: buildConnector.connector = (opts, callback) => {
      asked.push(opts.hostname);
      real({ ...opts, hostname: '127.0.0.1', port: String(port) }, callback);
    };
    const agent = agentWith(createGuardedConnector({ allowPrivate: false, lookup, connect: inner }));

    const res = await agent.request({ origin: 'http://rebind.example', path: '/first', method: 'GET' });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('pong');
    expect(asked).toEqual([PUBLIC_V4]);
    expect(calls).toEqual(['rebind.example']);
    expect(requests).toEqual([{ url: '/first', host: 'rebind.example' }]);

    // A new connection resolves again, now to loopback, and is refused.
    await agent.close();
    const agent2 = agentWith(createGuardedConnector({ allowPrivate: false, lookup, connect: inner }));
    const err = await failureOf(agent2.request({ origin: 'http://rebind.example', path: '/second', method: 'GET' }));
    expect(findInChain(err, isRefused)?.address).toBe('127.0.0.1');
    expect(asked).toEqual([PUBLIC_V4]);
    expect(requests).toHaveLength(1);
  });

  it('refuses the cloud metadata name without a lookup', async () => {
    const lookup = fakeLookup({ 'metadata.google.internal': [PUBLIC_V4] });
    const agent = agentWith(createGuardedConnector({ allowPrivate: false, lookup }));
    const err = await failureOf(agent.request({ origin: 'http://metadata.google.internal', path: '/', method: 'GET' }));
    expect(findInChain(err, isRefused)?.message).toBe('destination refused: host metadata.google.internal is a cloud metadata service');
    expect(lookup.calls).toEqual([]);
  });

  it('passes lookup errors on unchanged (not as a refusal)', async () => {
    const lookup = fakeLookup({});
    const agent = agentWith(createGuardedConnector({ allowPrivate: false, lookup }));
    const err = await failureOf(agent.request({ origin: 'http://nx.example', path: '/', method: 'GET' }));
    expect(findInChain(err, isRefused)).toBeUndefined();
    expect(findInChain(err, (e): e is NodeJS.ErrnoException => (e as NodeJS.ErrnoException)?.code === 'ENOTFOUND')).toBeDefined();
  });

  it('bounds a hanging lookup by the connect timeout', async () => {
    const lookup: LookupAll = () => {
      /* never answers */
    };
    const agent = agentWith(createGuardedConnector({ allowPrivate: false, lookup, connect: { timeout: 50 } }));
    const err = await failureOf(agent.request({ origin: 'http://slow.example', path: '/', method: 'GET' }));
    expect(findInChain(err, (e): e is Error => e instanceof errors.ConnectTimeoutError)).toBeDefined();
  });
});

describe('createGuardedConnector, allowPrivate true', () => {
  it('lets a request to 127.0.0.1 through', async () => {
    const agent = agentWith(createGuardedConnector({ allowPrivate: true }));
    const res = await agent.request({ origin: `http://127.0.0.1:${port}`, path: '/ok', method: 'GET' });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('pong');
    expect(requests).toEqual([{ url: '/ok', host: `127.0.0.1:${port}` }]);
  });

  it('works with fetch too', async () => {
    const agent = agentWith(createGuardedConnector({ allowPrivate: true, connect: { timeout: 2000 } }));
    const res = await fetch(`http://127.0.0.1:${port}/f`, { dispatcher: agent });
    expect(await res.text()).toBe('pong');
    expect(requests.map((r) => r.url)).toEqual(['/f']);
  });

  it('resolves a name itself, accepts loopback and private addresses, and connects to the one it checked', async () => {
    const lookup = fakeLookup({ 'receiver.dev': ['127.0.0.1'] });
    const agent = agentWith(createGuardedConnector({ allowPrivate: true, lookup }));
    const res = await agent.request({ origin: `http://receiver.dev:${port}`, path: '/dev', method: 'GET' });
    expect(await res.body.text()).toBe('pong');
    expect(lookup.calls).toEqual([['receiver.dev', { all: true }]]);
    expect(requests).toEqual([{ url: '/dev', host: `receiver.dev:${port}` }]);
  });

  it('localhost resolving to ::1 first reaches a receiver listening on 127.0.0.1 only (next address tried)', async () => {
    const lookup = fakeLookup({ localhost: ['::1', '127.0.0.1'] });
    const agent = agentWith(createGuardedConnector({ allowPrivate: true, lookup }));
    const res = await agent.request({ origin: `http://localhost:${port}`, path: '/both', method: 'GET' });
    expect(await res.body.text()).toBe('pong');
    expect(requests).toEqual([{ url: '/both', host: `localhost:${port}` }]);
  });

  // Issue #28 point 3: dev mode still refuses cloud metadata (and link-local), by name, literal or resolved address.
  it.each([
    ['imds.example', ['169.254.169.254']],
    ['mapped-imds.example', ['::ffff:169.254.169.254']],
    ['nat64-imds.example', ['64:ff9b::a9fe:a9fe']],
    ['aws6.example', ['fd00:ec2::254']],
    ['eks.example', ['fd00:ec2::23']],
    ['alibaba.example', ['100.100.100.200']],
    ['ecs.example', ['169.254.170.2']],
    ['oracle.example', ['192.0.0.192']],
    ['wireserver.example', ['168.63.129.16']],
    ['timesync.example', ['169.254.169.123']],
    ['fe80.example', ['fe80::1']],
    ['mixed.example', ['127.0.0.1', '169.254.169.254']],
    ['localhost', ['169.254.169.254']],
  ])('refuses %s resolving to %j, without naming the address', async (host, addresses) => {
    const lookup = fakeLookup({ [host]: addresses });
    const inner = recordingConnector();
    const agent = agentWith(createGuardedConnector({ allowPrivate: true, lookup, connect: inner }));
    const err = await failureOf(agent.request({ origin: `http://${host}`, path: '/', method: 'GET' }));
    const refused = findInChain(err, isRefused);
    expect(refused?.message).toBe(
      `destination refused: host ${host} resolves to an address that is not allowed, even with private destinations allowed`,
    );
    expect(addresses).toContain(refused?.address);
    expect(inner.seen).toEqual([]);
  });

  it.each([
    [`http://169.254.169.254/latest/meta-data/`, '169.254.169.254', 'cloudMetadata'],
    [`http://[::ffff:169.254.169.254]/`, '::ffff:a9fe:a9fe', 'cloudMetadata'],
    [`http://2852039166/`, '169.254.169.254', 'cloudMetadata'],
    [`http://[fd00:ec2::254]/`, 'fd00:ec2::254', 'cloudMetadata'],
    [`http://100.100.100.200/`, '100.100.100.200', 'cloudMetadata'],
    [`http://169.254.170.2/`, '169.254.170.2', 'cloudMetadata'],
    [`http://192.0.0.192/`, '192.0.0.192', 'cloudMetadata'],
    [`http://169.254.0.1/`, '169.254.0.1', 'linkLocal'],
    [`http://[fe80::1]/`, 'fe80::1', 'linkLocal'],
  ])('refuses the literal %s without asking the resolver', async (url, address, range) => {
    const lookup = fakeLookup({});
    const inner = recordingConnector();
    const agent = agentWith(createGuardedConnector({ allowPrivate: true, lookup, connect: inner }));
    const err = await failureOf(fetch(url, { dispatcher: agent }));
    const refused = findInChain(err, isRefused);
    expect(refused?.message).toBe(
      `destination refused: address ${address} is not allowed, even with private destinations allowed (${range})`,
    );
    expect(lookup.calls).toEqual([]);
    expect(inner.seen).toEqual([]);
  });

  it.each(['metadata.google.internal', 'METADATA.Google.Internal.'])('refuses the name %s without a lookup', async (host) => {
    const lookup = fakeLookup({ [host]: ['127.0.0.1'] });
    const inner = recordingConnector();
    const agent = agentWith(createGuardedConnector({ allowPrivate: true, lookup, connect: inner }));
    const err = await failureOf(agent.request({ origin: `http://${host}`, path: '/', method: 'GET' }));
    expect(findInChain(err, isRefused)?.message).toMatch(
      /^destination refused: host metadata\.google\.internal\.? is a cloud metadata service$/i,
    );
    expect(lookup.calls).toEqual([]);
    expect(inner.seen).toEqual([]);
  });

  it('pins: a name that resolved to loopback and then to the metadata address is refused on the new connection', async () => {
    let n = 0;
    const lookup: LookupAll = (_hostname, _options, callback) => {
      const address = n++ === 0 ? '127.0.0.1' : '169.254.169.254';
      setImmediate(() => callback(null, [{ address, family: 4 }]));
    };
    const agent = agentWith(createGuardedConnector({ allowPrivate: true, lookup }));
    const res = await agent.request({ origin: `http://rebind.dev:${port}`, path: '/first', method: 'GET' });
    expect(await res.body.text()).toBe('pong');
    await agent.close();
    const agent2 = agentWith(createGuardedConnector({ allowPrivate: true, lookup }));
    const err = await failureOf(agent2.request({ origin: `http://rebind.dev:${port}`, path: '/second', method: 'GET' }));
    expect(findInChain(err, isRefused)?.address).toBe('169.254.169.254');
    expect(requests.map((r) => r.url)).toEqual(['/first']);
  });
});

describe('resolvePublicHost', () => {
  const lookup = fakeLookup({
    'public.example': [PUBLIC_V4, PUBLIC_V6],
    'private.example': ['192.168.1.10'],
    'mapped.example': ['::ffff:127.0.0.1'],
    'nat64.example': ['64:ff9b::7f00:1'],
  });

  it.each([
    ['public.example', { ok: true, addresses: [PUBLIC_V4, PUBLIC_V6] }],
    ['8.8.8.8', { ok: true, addresses: ['8.8.8.8'] }],
    [`[${PUBLIC_V6}]`, { ok: true, addresses: [PUBLIC_V6] }],
  ])('%s → ok', async (host, expected) => {
    expect(await resolvePublicHost(host, lookup)).toEqual(expected);
  });

  // Issue #28 point 4: a name's reason (the tenant's 400 answer) never names the address it resolved to.
  it.each([
    ['private.example', 'destination refused: host private.example resolves to an address that is not public'],
    ['mapped.example', 'destination refused: host mapped.example resolves to an address that is not public'],
    ['nat64.example', 'destination refused: host nat64.example resolves to an address that is not public'],
    ['127.0.0.1', 'destination refused: address 127.0.0.1 is not public (loopback)'],
    ['[::1]', 'destination refused: address ::1 is not public (loopback)'],
    ['169.254.169.254', 'destination refused: address 169.254.169.254 is not public (cloudMetadata)'],
    ['localhost', 'destination refused: host localhost is a local name'],
    ['metadata.google.internal.', 'destination refused: host metadata.google.internal. is a cloud metadata service'],
    ['nowhere.example', 'could not resolve nowhere.example: ENOTFOUND'],
  ])('%s → refused: %s', async (host, reason) => {
    expect(await resolvePublicHost(host, lookup)).toEqual({ ok: false, reason });
  });

  it('uses dns.lookup by default; literals and local names need no DNS', async () => {
    expect(await resolvePublicHost('1.1.1.1')).toEqual({ ok: true, addresses: ['1.1.1.1'] });
    expect((await resolvePublicHost('localhost')).ok).toBe(false);
  });
});
