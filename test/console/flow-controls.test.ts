/**
 * The console's flow controls page in Chromium (src/console/app/pages/flow-controls.tsx): create one through its form,
 * see its state (a job naming it, paused, shows its run waiting), pause and resume it, edit it, and delete one no job
 * names; a bad value is shown at its field; a key without `flow-controls:manage` has no such page.
 */
import { describe, expect, it } from 'vitest';
import { apiClient } from '../support/api.ts';
import { BROWSER, DATABASE_TARGETS, useHarness, YEARLY } from './support.ts';

describe.runIf(BROWSER).each(DATABASE_TARGETS)('the console in Chromium on $kind: flow controls', (target) => {
  const h = useHarness(target);

  it('creates, shows the state of, pauses, resumes, edits and deletes flow controls', async () => {
    const t = await h.tenant('flows');
    const page = await h.newPage();
    await h.signIn(page, t, '/console/jobs');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Flow controls' }).click();
    await page.getByRole('heading', { name: 'Flow controls' }).waitFor();
    await page.getByText('No flow controls yet.').waitFor();

    // A bad value is shown at its field, and nothing is made.
    await page.getByLabel('Key').fill('crm');
    await page.getByLabel('Parallelism').fill('5');
    await page.getByLabel('Rate: requests').fill('20');
    await page.getByLabel('per (ms)').fill('999');
    await page.getByLabel('per (ms)').evaluate((el) => el.removeAttribute('min'));
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.locator('#flow-period-error').textContent()).toMatch(/1000/);
    expect((await t.api.get('/v1/flow-controls')).body.flowControls).toEqual([]);

    await page.getByLabel('per (ms)').fill('1000');
    await page.getByLabel('Paused').check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved flow control crm' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'crm' });
    await expect.poll(() => row.textContent()).toContain('20 per 1,000 ms');
    expect(await row.textContent()).toContain('paused');

    // A job naming it, due now, waits while it is paused: the page shows it waiting.
    const job = await t.api.post('/v1/jobs', {
      name: 'sync',
      schedule: { type: 'once', at: new Date(Date.now() + 200).toISOString() },
      callback: { url: `${h.receiver.url}/crm` },
      flowControlKey: 'crm',
    });
    expect(job.status, JSON.stringify(job.body)).toBe(201);
    await expect.poll(() => row.getByRole('cell').nth(4).textContent(), { timeout: 15_000 }).toBe('1');
    await h.shot(page, 'flow-controls');

    // Resumed, the run goes out.
    await row.getByRole('button', { name: 'Resume' }).click();
    await expect.poll(() => row.textContent()).toContain('active');
    await expect
      .poll(async () => (await t.api.get(`/v1/jobs/${job.body.jobId}/runs`)).body.runs[0]?.status, { timeout: 15_000 })
      .toBe('succeeded');
    await expect.poll(() => row.getByRole('cell').nth(4).textContent()).toBe('0');

    // Edit: the form takes its settings; a new parallelism replaces the old one.
    await row.getByRole('button', { name: 'Edit' }).click();
    expect(await page.getByLabel('Key').inputValue()).toBe('crm');
    await page.getByLabel('Parallelism').fill('7');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => row.getByRole('cell').nth(2).textContent()).toBe('7');
    expect((await t.api.get('/v1/flow-controls/crm')).body).toMatchObject({ parallelism: 7, rate: { limit: 20, periodMs: 1000 } });

    // Deleting one an open job names is refused (shown), one no open job names goes (the once-job above completed).
    const yearly = await h.makeJob(t, {
      name: 'yearly',
      schedule: YEARLY,
      callback: { url: `${h.receiver.url}/crm` },
      flowControlKey: 'crm',
    });
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('button', { name: 'Delete' }).last().click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toMatch(/name this flow control/);
    await t.api.request('DELETE', `/v1/jobs/${yearly}`);
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('button', { name: 'Delete' }).last().click();
    await page.getByText('No flow controls yet.').waitFor();

    // A key without flow-controls:manage has no such page in its navigation.
    const r = await t.api.post('/v1/api-keys', { name: 'reader', scopes: ['jobs:read'] });
    const other = await h.newPage();
    await h.signIn(other, { ...t, apiKey: r.body.key, api: apiClient(h.url, r.body.key) }, '/console/jobs');
    await other.getByRole('heading', { name: 'Jobs' }).waitFor();
    expect(await other.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Flow controls' }).count()).toBe(0);
  });
});
