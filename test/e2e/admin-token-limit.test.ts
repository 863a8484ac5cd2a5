/**
 * A real `chime serve` limits failed admin-token attempts per client address, the socket's (issue #28, point 6): 300
 * wrong tokens in under a second were all answered 401. Now an address gets ADMIN_FAILURE_BURST 401s, then 429
 * problem+json with Retry-After (the right token too), while another address (::1 beside 127.0.0.1) still creates a
 * tenant; a forged X-Forwarded-For changes nothing; each refusal is logged at warn with the address, never the token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_FAILURE_BURST } from '../../src/api/rate-limit.ts';
import { ADMIN_TOKEN, type ChimeProcess, startChime } from '../support/chime-process.ts';
import { type FreshDatabase, freshDatabase } from '../support/databases.ts';

describe('failed admin-token attempts of a real process', () => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  beforeAll(async () => {
    db = await freshDatabase({ kind: 'pglite' });
    // '::' takes IPv4 (as ::ffff:127.0.0.1) and IPv6: two client addresses on one machine.
    chime = await startChime({ ...db.env, HOST: '::' });
  });
  afterAll(async () => {
    if (chime) expect(await chime.stop(), chime.output()).toBe(0);
    await db?.drop();
  });

  const post = (host: string, token: string, headers: Record<string, string> = {}) =>
    fetch(`http://${host}:${chime.port}/v1/tenants`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
      body: JSON.stringify({ name: 'acme' }),
    });

  it('answers 401 to the first wrong tokens of an address, then 429 with Retry-After; other addresses are unaffected', async () => {
    const guesses = Array.from({ length: 30 }, (_, i) => `guess-${String(i).padStart(2, '0')}-0123456789abcdef`);
    const statuses: number[] = [];
    let limited: Response | undefined;
    for (const [i, guess] of guesses.entries()) {
      // A forged X-Forwarded-For does not make another address.
      const r = await post('127.0.0.1', guess, { 'x-forwarded-for': `203.0.113.${i}` });
      statuses.push(r.status);
      if (r.status === 429) limited ??= r;
      else await r.arrayBuffer();
    }
    expect(statuses).toEqual([...Array(ADMIN_FAILURE_BURST).fill(401), ...Array(guesses.length - ADMIN_FAILURE_BURST).fill(429)]);
    expect(limited!.headers.get('content-type')).toBe('application/problem+json');
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await limited!.json()).toMatchObject({ type: 'urn:chime:problem:rate_limited', status: 429 });
    expect((await post('127.0.0.1', ADMIN_TOKEN)).status).toBe(429);
    expect((await post('[::1]', ADMIN_TOKEN)).status).toBe(201);

    // Each refusal logged at warn (pino level 40) with the address and never the token presented.
    const lines = chime
      .output()
      .split('\n')
      .filter((l) => l.includes('"msg":"admin token'))
      .map((l) => JSON.parse(l) as { level: number; clientAddress: string; msg: string });
    expect(lines).toHaveLength(guesses.length + 1);
    expect(lines.every((l) => l.level === 40 && l.clientAddress === '::ffff:127.0.0.1')).toBe(true);
    expect(lines.filter((l) => l.msg === 'admin token refused')).toHaveLength(ADMIN_FAILURE_BURST);
    for (const token of [...guesses, ADMIN_TOKEN]) expect(chime.output()).not.toContain(token);
  });
});
