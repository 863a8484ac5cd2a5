/**
 * The console in Chromium (test/console/support.ts), signing in and keys: a wrong key refused then the right one
 * accepted; an API key created (shown once), revoked, listed as revoked and refused; revoking the tab's own key warns
 * that it signs the tab out, and does; an expired key refused and a tab whose key is revoked signed out; tenant B
 * seeing none of A's jobs; the signing secret's rotation and copy button; a scoped key offered only what it may do; the
 * audit log.
 */

import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { apiClient } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { BROWSER, DATABASE_TARGETS, DAY_MS, loaded, useHarness, YEARLY } from './support.ts';

describe.runIf(BROWSER).each(DATABASE_TARGETS)('the console in Chromium on $kind: signing in and keys', (target) => {
  const h = useHarness(target);

  it('refuses a wrong key with a message, accepts the right one, shows the tenant, and signs out', async () => {
    const page = await h.newPage();
    await page.goto(`${h.url}/console`);
    await page.getByLabel('API key').fill('chk_not_a_key_at_all_000000000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/not accepted/);
    await h.shot(page, 'sign-in-refused');
    await page.getByLabel('API key').fill(h.a.apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Jobs' }).waitFor();
    expect(await page.getByText('Tenant A').count()).toBeGreaterThan(0);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(
      await page.evaluate(() => Object.keys((globalThis as unknown as { sessionStorage: Record<string, string> }).sessionStorage).length),
    ).toBe(0);
  });

  it('creates an API key shown once, revokes it: listed as revoked from then on, and it can no longer sign in', async () => {
    const page = await h.newPage();
    await h.signIn(page, h.a);
    await page.getByRole('link', { name: 'Keys and secrets' }).click();
    await page.getByLabel('Key name', { exact: true }).fill('laptop');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.locator('.secret code').first();
    await shown.waitFor();
    const key = (await shown.textContent())!.trim();
    expect(key).toMatch(/^chk_/);
    await h.shot(page, 'keys');
    const row = page.getByRole('row').filter({ hasText: 'laptop' });
    expect(await row.getByRole('cell').nth(6).textContent()).toBe('active');
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Yes, revoke' }).click();
    // Still listed, as revoked (with when), and with nothing left to do.
    await expect.poll(() => row.getByRole('cell').nth(6).textContent()).toMatch(/^revoked /);
    expect(await row.getByRole('button', { name: 'Revoke' }).count()).toBe(0);
    await page.reload();
    await loaded(page);
    await expect
      .poll(() => page.getByRole('row').filter({ hasText: 'laptop' }).getByRole('cell').nth(6).textContent())
      .toMatch(/^revoked /);
    const other = await h.newPage();
    await other.goto(`${h.url}/console`);
    await other.getByLabel('API key').fill(key);
    await other.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => other.getByRole('alert').textContent()).toMatch(/not accepted/);
  });

  it('revoking the key the tab is signed in with warns that it signs you out, then does', async () => {
    const mine = await h.a.api.post('/v1/api-keys', { name: 'this tab' });
    const spare = await h.a.api.post('/v1/api-keys', { name: 'spare' });
    const page = await h.newPage();
    await h.signIn(page, { ...h.a, apiKey: mine.body.key }, '/console/keys');
    await loaded(page);
    // Another key's revocation says nothing about signing out.
    const spareRow = page.getByRole('row').filter({ hasText: 'spare' });
    await spareRow.getByRole('button', { name: 'Revoke' }).click();
    expect(await spareRow.getByRole('group').getAttribute('aria-label')).not.toMatch(/sign/i);
    await spareRow.getByRole('button', { name: 'Keep' }).click();
    const row = page.getByRole('row').filter({ hasText: '(this tab)' });
    expect(await row.getByRole('cell').first().textContent()).toBe('this tab (this tab)');
    await row.getByRole('button', { name: 'Revoke' }).click();
    const question = row.getByRole('group');
    expect(await question.getAttribute('aria-label')).toMatch(/This tab is signed in with it: revoking it signs you out/);
    expect((await h.a.api.get('/v1/api-keys')).body.apiKeys.map((k: { keyId: string }) => k.keyId)).toContain(mine.body.keyId);
    await question.getByRole('button', { name: /^Yes, revoke/ }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/You revoked the API key this tab was signed in with/);
    await page.getByLabel('API key').waitFor();
    const keys = (await h.a.api.get('/v1/api-keys')).body.apiKeys.map((k: { keyId: string }) => k.keyId);
    expect(keys).not.toContain(mine.body.keyId);
    expect(keys).toContain(spare.body.keyId);
    expect(await page.evaluate('Object.keys(sessionStorage).length')).toBe(0);
  });

  it("shows tenant B none of tenant A's jobs", async () => {
    const jobId = await h.makeJob(h.a, { name: 'Paris morning report', schedule: YEARLY, callback: { url: `${h.receiver.url}/report` } });
    const page = await h.newPage();
    await h.signIn(page, h.b);
    await page.getByRole('heading', { name: 'Jobs' }).waitFor();
    await expect.poll(() => page.getByText('No jobs yet').count()).toBe(1);
    expect(await page.getByText('Paris morning report').count()).toBe(0);
    await page.goto(`${h.url}/console/jobs/${jobId}`);
    await expect.poll(() => page.getByText(/No such job/).count()).toBeGreaterThan(0);
    expect(await page.getByText('Paris morning report').count()).toBe(0);
  });

  it('refuses an expired key with a clear message, and signs out a tab whose key is revoked, saying why', async () => {
    const short = await h.a.api.post('/v1/api-keys', { name: 'short-lived', expiresAt: new Date(Date.now() + 2_000).toISOString() });
    expect(short.status).toBe(201);
    const shortApi = apiClient(h.url, short.body.key);
    await eventually(async () => (await shortApi.get('/v1/tenant')).status === 401, { what: 'the key to expire' });
    const page = await h.newPage();
    await page.goto(`${h.url}/console`);
    await page.getByLabel('API key').fill(short.body.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('This API key was not accepted: it is wrong, revoked or expired.');
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    // A key revoked while a tab uses it: the next request signs the tab out with the reason.
    const other = await h.a.api.post('/v1/api-keys', { name: 'revoked while signed in' });
    // (On a page that is done loading: a request of the page still in flight would sign it out first.)
    await h.signIn(page, { ...h.a, apiKey: other.body.key }, '/console/keys');
    await loaded(page);
    expect((await h.a.api.request('DELETE', `/v1/api-keys/${other.body.keyId}`)).status).toBe(204);
    await page.getByRole('link', { name: 'Runs', exact: true }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe('Signed out: this API key is no longer accepted (revoked or expired).');
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate('Object.keys(sessionStorage).length')).toBe(0);
  });

  it('rotates the signing secret: shown once with the overlap end, copied to the clipboard, and it signs the callbacks', async () => {
    const s = await h.tenant('Tenant S');
    const jobId = await h.makeJob(s, { name: 'signed', schedule: YEARLY, callback: { url: `${h.receiver.url}/signed` } });
    const page = await h.newPage();
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: h.url });
    await h.signIn(page, s, '/console/keys');
    await page.getByRole('heading', { name: 'Signing secret' }).waitFor();
    await page.getByRole('button', { name: 'Rotate signing secret' }).click();
    expect(await page.getByText(/whsec_/).count(), 'the first click only asks').toBe(0);
    const rotatedAt = Date.now();
    await page.getByRole('button', { name: 'Yes, rotate' }).click();
    const box = page.locator('.secret').filter({ hasText: 'New signing secret (shown once)' });
    const secret = (await box.locator('code').textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(s.signingSecret);
    const until = await page.getByText('The previous secret keeps signing until').locator('time').getAttribute('datetime');
    expect(Date.parse(until!) - rotatedAt).toBeGreaterThan(DAY_MS - 60_000);
    expect(Date.parse(until!) - rotatedAt).toBeLessThan(DAY_MS + 60_000);
    await box.getByRole('button', { name: 'Copy' }).click();
    await box.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
    await h.shot(page, 'signing-secret');
    // The secret shown is the one that signs now; the previous one still does, alongside.
    const runId = await h.triggered(s, jobId, 'succeeded');
    const callback = h.receiver.received.find((r) => r.headers['chime-run-id'] === runId)!;
    const headers = callback.headers as Record<string, string>;
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(() => new Webhook(secret).verify(callback.body, headers)).not.toThrow();
    expect(() => new Webhook(s.signingSecret).verify(callback.body, headers)).not.toThrow();
    // Shown once: not after a reload.
    await page.reload();
    await page.getByRole('heading', { name: 'Signing secret' }).waitFor();
    await loaded(page);
    expect(await page.getByText(/whsec_/).count()).toBe(0);
  });

  it('offers a key only what its scopes allow, and grants new keys at most those scopes', async () => {
    const s = await h.tenant('scoped');
    const jobId = await h.makeJob(s, { name: 'scoped job', schedule: YEARLY, callback: { url: `${h.receiver.url}/ok` } });
    const mint = async (scopes: string[]) => {
      const r = await s.api.post('/v1/api-keys', { name: scopes.join('+'), scopes });
      expect(r.status).toBe(201);
      return { ...s, apiKey: r.body.key as string, api: apiClient(h.url, r.body.key) };
    };

    // A reader: the jobs and runs pages, and nothing that changes them.
    const reader = await mint(['jobs:read', 'runs:read']);
    const page = await h.newPage();
    await h.signIn(page, reader, `/console/jobs/${jobId}`);
    await page.getByRole('heading', { name: 'scoped job' }).waitFor();
    await loaded(page);
    const nav = page.getByRole('navigation', { name: 'Main' });
    expect(await nav.getByRole('link').allTextContents()).toEqual(['Jobs', 'Runs', 'Dead letters']);
    for (const action of ['Pause', 'Trigger now', 'Cancel job'])
      expect(await page.getByRole('button', { name: action, exact: true }).count(), action).toBe(0);
    expect(await page.getByRole('link', { name: 'Edit' }).count()).toBe(0);
    await nav.getByRole('link', { name: 'Jobs' }).click();
    await page.getByRole('heading', { name: 'Jobs' }).waitFor();
    expect(await page.getByRole('link', { name: 'New job' }).count()).toBe(0);
    await h.shot(page, 'read-only-key');

    // A key manager that reads jobs: the keys page offers only its own two scopes, and the list shows scopes.
    const manager = await mint(['jobs:read', 'keys:manage']);
    const other = await h.newPage();
    await h.signIn(other, manager, '/console/keys');
    await other.getByRole('heading', { name: 'API keys' }).waitFor();
    const scopes = other.getByRole('group', { name: 'Scopes' });
    expect(await scopes.getByRole('checkbox').count()).toBe(2);
    expect(await scopes.getByText('Everything (*)').count()).toBe(0);
    await scopes.getByRole('checkbox').nth(1).uncheck(); // keys:manage
    await other.getByLabel('Key name', { exact: true }).fill('ci reader');
    await other.getByRole('button', { name: 'Create key' }).click();
    await other.locator('.secret code').first().waitFor();
    const row = other.getByRole('row').filter({ hasText: 'ci reader' });
    await expect.poll(() => row.getByRole('cell').nth(2).textContent()).toBe('jobs:read');
    expect(await other.getByRole('row').filter({ hasText: 'jobs:read+keys:manage' }).getByRole('cell').nth(2).textContent()).toBe(
      'jobs:read, keys:manage',
    );

    // The tenant's own key holds every scope: everything is offered.
    const full = await h.newPage();
    await h.signIn(full, s, `/console/jobs/${jobId}`);
    await full.getByRole('button', { name: 'Trigger now' }).waitFor();
    expect(await full.getByRole('navigation', { name: 'Main' }).getByRole('link').count()).toBe(8);
  });

  it('shows the audit log: who changed what and in which request, filtered by action; only to a key with audit:read', async () => {
    const t = await h.tenant('audited');
    const jobId = await h.makeJob(t, { name: 'audited job', schedule: YEARLY, callback: { url: `${h.receiver.url}/ok` } });
    const paused = await t.api.request('PATCH', `/v1/jobs/${jobId}`, { paused: true, name: 'renamed job' });
    expect(paused.status).toBe(200);
    const page = await h.newPage();
    await h.signIn(page, t, '/console/jobs');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { name: 'Audit log' }).waitFor();
    const row = (action: string) => page.getByRole('row').filter({ hasText: action });
    await row('job.updated').waitFor();
    expect(await row('job.updated').textContent()).toContain('name');
    expect(await row('job.updated').textContent()).toContain(paused.headers.get('x-request-id')!);
    expect(await row('job.paused').count()).toBe(1);
    expect(await row('job.created').getByRole('link').getAttribute('href')).toBe(`/console/jobs/${jobId}`);
    await page.getByLabel('Action').selectOption('job.created');
    await expect.poll(() => page.getByRole('row').filter({ hasText: 'job.paused' }).count()).toBe(0);
    expect(new URL(page.url()).searchParams.get('action')).toBe('job.created');
    expect(await row('job.created').count()).toBe(1);
    await h.shot(page, 'audit-log');

    // A key without audit:read has no such page in its navigation.
    const r = await t.api.post('/v1/api-keys', { name: 'no audit', scopes: ['jobs:read'] });
    const other = await h.newPage();
    await h.signIn(other, { ...t, apiKey: r.body.key, api: apiClient(h.url, r.body.key) }, '/console/jobs');
    await other.getByRole('heading', { name: 'Jobs' }).waitFor();
    expect(await other.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).count()).toBe(0);
  });

  it('saved a screenshot of every page it shows', () => {
    expect([...h.shots]).toEqual(expect.arrayContaining(['sign-in-refused', 'keys', 'signing-secret', 'read-only-key', 'audit-log']));
  });
});
