/**
 * Failed admin-token attempts are limited per client address (issue #28, point 6): `FailedAttempts` lets an address
 * fail ADMIN_FAILURE_BURST times at once, then ADMIN_FAILURES_PER_MINUTE a minute; a success takes nothing. IPv6
 * addresses count by their /64, IPv4-mapped ones as IPv4. In process, through the app: the 11th wrong token is a 429
 * problem with Retry-After, even with the right token then; other addresses are unaffected; each refusal is reported
 * with the address and never the token.
 */
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/api/app.ts';
import { ADMIN_FAILURE_BURST, ADMIN_FAILURES_PER_MINUTE, addressKey, FailedAttempts, TokenBuckets } from '../../src/api/rate-limit.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { createCipher } from '../../src/store/cipher.ts';
import { openEmbedded } from '../../src/store/embedded.ts';
import { migrateEmbedded } from '../../src/store/migrate.ts';
import { TEST_APP_CONFIG } from '../support/app.ts';
import { ADMIN_TOKEN } from '../support/chime-process.ts';

const T0 = Date.UTC(2030, 0, 1);

describe('FailedAttempts', () => {
  it('allows a burst of failures, then one every 60/perMinute s; successes take nothing', () => {
    expect([ADMIN_FAILURE_BURST, ADMIN_FAILURES_PER_MINUTE]).toEqual([10, 10]);
    const f = new FailedAttempts();
    for (let i = 0; i < ADMIN_FAILURE_BURST; i++) {
      expect(f.check('192.0.2.1', T0)).toEqual({ ok: true });
      f.fail('192.0.2.1', T0);
    }
    expect(f.check('192.0.2.1', T0)).toEqual({ ok: false, retryAfterSeconds: 6 });
    expect(f.check('192.0.2.1', T0 + 5_000)).toEqual({ ok: false, retryAfterSeconds: 1 });
    expect(f.check('192.0.2.2', T0)).toEqual({ ok: true });
    // Checking takes nothing: a refill of one failure after 6 s, whatever was checked meanwhile.
    expect(f.check('192.0.2.1', T0 + 6_000)).toEqual({ ok: true });
    f.fail('192.0.2.1', T0 + 6_000);
    expect(f.check('192.0.2.1', T0 + 6_000)).toEqual({ ok: false, retryAfterSeconds: 6 });
  });

  it('counts an IPv6 address by its /64 and an IPv4-mapped one as IPv4', () => {
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(addressKey('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(addressKey('127.0.0.1')).toBe('127.0.0.1');
    expect(addressKey('unknown')).toBe('unknown');
    const f = new FailedAttempts(ADMIN_FAILURES_PER_MINUTE, 1);
    f.fail('2001:db8:1:2::1', T0);
    expect(f.check('2001:db8:1:2::ffff', T0).ok).toBe(false);
    expect(f.check('2001:db8:1:3::1', T0).ok).toBe(true);
  });

  it('TokenBuckets.peek takes no token and keeps no bucket', () => {
    const b = new TokenBuckets(1, 1);
    expect(b.peek('a', T0)).toEqual({ ok: true });
    expect(b.size).toBe(0);
    expect(b.take('a', T0)).toEqual({ ok: true });
    expect(b.peek('a', T0)).toEqual({ ok: false, retryAfterSeconds: 1 });
    expect(b.peek('a', T0 + 1_000)).toEqual({ ok: true });
    expect(b.take('a', T0 + 1_000)).toEqual({ ok: true });
  });
});

describe('POST /v1/tenants with wrong admin tokens, in process', () => {
  it('answers 401 ten times, then 429 problem+json with Retry-After, per address, and reports each refusal without the token', async () => {
    const embedded = await openEmbedded('memory://');
    await migrateEmbedded(embedded.pg);
    const clock = new ManualClock(T0);
    const warnings: { fields: Record<string, unknown>; message: string }[] = [];
    const app = createApp({
      store: { db: embedded.db, cipher: await createCipher(new Uint8Array(32).fill(3)), clock },
      database: embedded,
      config: TEST_APP_CONFIG,
      // The test stands in for the socket's address.
      clientAddress: (c) => c.req.header('x-test-client'),
      onSecurityWarning: (fields, message) => warnings.push({ fields, message }),
    });
    const post = (client: string, token: string | null) =>
      app.request('/v1/tenants', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-test-client': client,
          ...(token === null ? {} : { authorization: `Bearer ${token}` }),
        },
        body: JSON.stringify({ name: 'acme' }),
      });
    try {
      const guesses = Array.from({ length: ADMIN_FAILURE_BURST }, (_, i) => `guess-${i}-0123456789abcdef`);
      for (const [i, guess] of guesses.entries()) expect((await post('198.51.100.7', i === 0 ? null : guess)).status, guess).toBe(401);
      const limited = await post('198.51.100.7', 'guess-x-0123456789abcdef');
      expect(limited.status).toBe(429);
      expect(limited.headers.get('content-type')).toBe('application/problem+json');
      expect(limited.headers.get('retry-after')).toBe('6');
      expect(await limited.json()).toMatchObject({ type: 'urn:chime:problem:rate_limited', status: 429 });
      // The right token is refused too while the address is limited, and nothing is made.
      expect((await post('198.51.100.7', ADMIN_TOKEN)).status).toBe(429);
      // Another address is not limited.
      expect((await post('198.51.100.8', ADMIN_TOKEN)).status).toBe(201);
      // After the refill, one more attempt from the limited address.
      clock.advance(6_000);
      expect((await post('198.51.100.7', ADMIN_TOKEN)).status).toBe(201);

      expect(warnings).toHaveLength(ADMIN_FAILURE_BURST + 2);
      expect(warnings[0]).toEqual({
        fields: { clientAddress: '198.51.100.7', path: '/v1/tenants', reason: 'no bearer token' },
        message: 'admin token refused',
      });
      expect(warnings[1]).toEqual({
        fields: { clientAddress: '198.51.100.7', path: '/v1/tenants', reason: 'wrong token' },
        message: 'admin token refused',
      });
      expect(warnings.at(-1)!.fields).toMatchObject({ clientAddress: '198.51.100.7', retryAfterSeconds: expect.any(Number) });
      const logged = JSON.stringify(warnings);
      for (const token of [...guesses, 'guess-x', ADMIN_TOKEN]) expect(logged).not.toContain(token);
    } finally {
      await embedded.close();
    }
  });
});
