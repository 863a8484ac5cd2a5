/**
 * The operations side of a real `chime serve` (API.md "Start-up and configuration", "Operations"), on every
 * database target: `GET /metrics` only with `CHIME_METRICS_TOKEN` (`404` unset, `401` without or with a wrong token)
 * on both the API and the dispatcher-only role; `HOST` and `--dev` choose the listening address; on the embedded
 * database the first start makes a first tenant whose secrets are in `first-tenant.json` (mode 0600), once.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_TENANT_FILE } from '../../src/first-tenant.ts';
import { apiClient } from '../support/api.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

/** Starts `chime serve` with `args`, runs `fn` against it, and stops it (exit 0). */
async function withChime<T>(env: Record<string, string>, args: string[], fn: (c: ChimeProcess) => Promise<T>): Promise<T> {
  const chime = await startChime(env, args);
  try {
    return await fn(chime);
  } finally {
    expect(await chime.stop(), chime.output()).toBe(0);
  }
}

async function scrape(url: string, token?: string): Promise<{ status: number; type: string | null; body: string }> {
  const r = await fetch(`${url}/metrics`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  return { status: r.status, type: r.headers.get('content-type'), body: await r.text() };
}

describe.each(DATABASE_TARGETS)('operations of a real process on $kind', (target) => {
  let db: FreshDatabase;
  beforeAll(async () => {
    db = await freshDatabase(target);
  });
  afterAll(() => db?.drop());

  for (const role of ['all', 'dispatcher'] as const) {
    it(`--role ${role}: /metrics needs CHIME_METRICS_TOKEN, and is 404 without one configured`, async () => {
      await withChime({ ...db.env, CHIME_METRICS_TOKEN: METRICS_TOKEN }, ['serve', '--role', role], async (c) => {
        for (const token of [undefined, '', 'wrong-token-0123456789', `${METRICS_TOKEN}x`, METRICS_TOKEN.slice(1)]) {
          const r = await scrape(c.url, token);
          expect(r.status, `token ${token}`).toBe(401);
          expect(r.type).toBe('application/problem+json');
          expect(r.body).not.toMatch(/chime_/);
        }
        const ok = await scrape(c.url, METRICS_TOKEN);
        expect(ok.status).toBe(200);
        expect(ok.type).toMatch(/^text\/plain/);
        expect(ok.body).toMatch(/^chime_due_backlog /m);
        expect((await fetch(`${c.url}/readyz`)).status).toBe(200);
      });
      await withChime(db.env, ['serve', '--role', role], async (c) => {
        for (const token of [undefined, METRICS_TOKEN]) {
          const r = await scrape(c.url, token);
          expect(r.status).toBe(404);
          expect(r.body).not.toMatch(/chime_/);
        }
      });
    });
  }

  // Four real starts one after another: past vitest's 30 s on a loaded machine (a CI run on Node 24 timed out here).
  it('listens on HOST; --dev listens on 127.0.0.1 unless HOST says otherwise', { timeout: 120_000 }, async () => {
    const host = (c: ChimeProcess) => /"host":"([^"]+)","port":\d+[^\n]*"msg":"listening"/.exec(c.output())?.[1];
    expect(await withChime(db.env, ['serve'], async (c) => host(c))).toBe('0.0.0.0');
    expect(await withChime({ ...db.env, HOST: '127.0.0.1' }, ['serve'], async (c) => host(c))).toBe('127.0.0.1');
    expect(await withChime(db.env, ['serve', '--dev'], async (c) => host(c))).toBe('127.0.0.1');
    expect(await withChime({ ...db.env, HOST: '0.0.0.0' }, ['serve', '--dev'], async (c) => host(c))).toBe('0.0.0.0');
  });

  it('makes a first tenant on the first start of an empty embedded database, once; none with DATABASE_URL', async () => {
    const fresh = await freshDatabase(target);
    try {
      if (target.kind !== 'pglite') {
        await withChime(fresh.env, ['serve'], async (c) => {
          expect(c.output()).not.toMatch(/First start/);
          const sql = postgres(fresh.url!, { max: 1, onnotice: () => {} });
          try {
            expect((await sql`select count(*)::int as n from tenants`)[0]!.n).toBe(0);
          } finally {
            await sql.end();
          }
        });
        return;
      }
      const file = join(fresh.dataDir!, FIRST_TENANT_FILE);
      const first = await withChime(fresh.env, ['serve'], async (c) => {
        const saved = JSON.parse(await readFile(file, 'utf8'));
        expect(saved).toMatchObject({
          tenant: { name: 'default' },
          apiKey: expect.stringMatching(/^chk_/),
          signingSecret: expect.stringMatching(/^whsec_/),
        });
        expect((await stat(file)).mode & 0o777).toBe(0o600);
        expect(c.output()).toContain(saved.apiKey); // shown on this start
        const me = await apiClient(c.url, saved.apiKey).get('/v1/tenant');
        expect(me.status).toBe(200);
        expect(me.body.tenantId).toBe(saved.tenant.tenantId);
        return saved;
      });
      await withChime(fresh.env, ['serve'], async (c) => {
        expect(c.output()).not.toContain(first.apiKey);
        expect(c.output()).not.toMatch(/First start/);
        expect(JSON.parse(await readFile(file, 'utf8'))).toEqual(first);
      });
    } finally {
      await fresh.drop();
    }
  });
});
