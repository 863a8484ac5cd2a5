/**
 * The console's calendars page in Chromium (src/console/app/pages/calendars.tsx): create a calendar with holidays
 * (one picked, several pasted, a pasted line that is not a date named and kept, one removed), edit its zone, weekend
 * and holidays, a value the API refuses shown at its field (nothing saved), the open jobs that use it counted, delete
 * refused (the API's 409 shown) while a job uses it and done once none does; the page fits a phone; a key without
 * `calendars:manage` has no such page.
 */
import { describe, expect, it } from 'vitest';
import { apiClient } from '../support/api.ts';
import { pageWidth } from '../support/browser.ts';
import { BROWSER, DATABASE_TARGETS, DESKTOP, PHONE, useHarness, YEARLY } from './support.ts';

describe.runIf(BROWSER).each(DATABASE_TARGETS)('the console in Chromium on $kind: calendars', (target) => {
  const h = useHarness(target);

  it('creates a calendar with holidays, edits it, shows a refused value at its field, and deletes it once no job uses it', async () => {
    const t = await h.tenant('calendars');
    const page = await h.newPage();
    await h.signIn(page, t, '/console/jobs');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Calendars' }).click();
    await page.getByRole('heading', { name: 'Calendars', level: 1 }).waitFor();
    await page.getByText('No calendars yet.').waitFor();

    // Create: key, name, zone; the default weekend; holidays picked one by one and pasted many at once.
    await page.getByLabel('Key', { exact: true }).fill('uk-bank');
    await page.getByLabel('Name', { exact: true }).fill('UK bank holidays');
    await page.getByLabel('Time zone', { exact: true }).selectOption('Europe/London');
    for (const [day, checked] of [
      ['Monday', false],
      ['Friday', false],
      ['Saturday', true],
      ['Sunday', true],
    ] as const)
      expect(await page.getByLabel(day, { exact: true }).isChecked(), day).toBe(checked);
    await page.getByLabel('Add a holiday', { exact: true }).fill('2026-12-25');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByLabel('Paste holidays (one per line)').fill('2026-12-28\n\n2027-01-01\nBoxing day\n2026-12-25');
    await page.getByRole('button', { name: 'Add these' }).click();
    const holidays = page.getByRole('list', { name: /^Holidays/ }).locator('time');
    const shown = () => holidays.evaluateAll((els) => els.map((e) => e.getAttribute('datetime')));
    await expect.poll(shown).toEqual(['2026-12-25', '2026-12-28', '2027-01-01']);
    // The line that is not a date is named, and kept to be corrected.
    await expect.poll(() => page.locator('#cal-paste-error').textContent()).toContain('line 4: "Boxing day"');
    expect(await page.getByLabel('Paste holidays (one per line)').inputValue()).toBe('Boxing day');
    await page.getByRole('button', { name: 'Remove 2027-01-01' }).click();
    await expect.poll(shown).toEqual(['2026-12-25', '2026-12-28']);
    await page.getByRole('button', { name: 'Save calendar' }).click();
    await page.getByRole('status').filter({ hasText: 'Created calendar uk-bank.' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'uk-bank' });
    await expect.poll(() => row.getByRole('cell').nth(4).textContent()).toMatch(/^2/);
    expect(await row.getByRole('cell').nth(3).textContent()).toBe('Saturday, Sunday');
    expect(await row.getByRole('cell').nth(5).textContent()).toBe('0');
    expect((await t.api.get('/v1/calendars/uk-bank')).body).toMatchObject({
      key: 'uk-bank',
      name: 'UK bank holidays',
      timezone: 'Europe/London',
      weekendDays: [0, 6],
      holidays: ['2026-12-25', '2026-12-28'],
      jobs: 0,
    });
    await h.shot(page, 'calendars');

    // A value the API refuses is shown at its field, and nothing is saved.
    const refused = await t.api.request('PUT', '/v1/calendars/uk-bank', { timezone: 'Mars/Olympus_Mons', holidays: [] });
    expect(refused.status).toBe(400);
    const zoneMessage = refused.body.errors.find((e: { path: string }) => e.path === 'timezone').message as string;
    await row.getByRole('button', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit uk-bank' }).waitFor();
    expect(await page.getByLabel('Key', { exact: true }).inputValue()).toBe('uk-bank');
    await expect.poll(shown).toEqual(['2026-12-25', '2026-12-28']);
    const zone = page.getByLabel('Time zone', { exact: true });
    await zone.evaluate((el) => el.insertAdjacentHTML('beforeend', '<option>Mars/Olympus_Mons</option>'));
    await zone.selectOption('Mars/Olympus_Mons');
    await page.getByRole('button', { name: 'Save calendar' }).click();
    await expect.poll(() => page.locator('#cal-timezone-error').textContent()).toBe(zoneMessage);
    expect((await t.api.get('/v1/calendars/uk-bank')).body.timezone).toBe('Europe/London');

    // Edit: the zone corrected, a Friday-Saturday weekend, one more holiday.
    await zone.selectOption('Asia/Dubai');
    await page.getByLabel('Friday', { exact: true }).check();
    await page.getByLabel('Sunday', { exact: true }).uncheck();
    await page.getByLabel('Add a holiday', { exact: true }).fill('2026-12-02');
    await page.getByLabel('Add a holiday', { exact: true }).press('Enter');
    await expect.poll(shown).toEqual(['2026-12-02', '2026-12-25', '2026-12-28']);
    await h.shot(page, 'calendar-edit');
    // On a phone, the page (the form, its holidays, the table) does not scroll sideways.
    await page.setViewportSize(PHONE);
    expect(await pageWidth(page)).toBeLessThanOrEqual(PHONE.width);
    await h.shot(page, 'phone-calendars');
    await page.setViewportSize(DESKTOP);
    await page.getByRole('button', { name: 'Save calendar' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved calendar uk-bank.' }).waitFor();
    await expect.poll(() => row.getByRole('cell').nth(3).textContent()).toBe('Friday, Saturday');
    expect((await t.api.get('/v1/calendars/uk-bank')).body).toMatchObject({
      timezone: 'Asia/Dubai',
      weekendDays: [5, 6],
      holidays: ['2026-12-02', '2026-12-25', '2026-12-28'],
    });

    // A job uses it: counted, and the calendar cannot be deleted (the API's 409, shown).
    const jobId = await h.makeJob(t, {
      name: 'uses uk-bank',
      schedule: YEARLY,
      callback: { url: `${h.receiver.url}/ok` },
      calendar: { key: 'uk-bank', roll: 'next' },
    });
    const conflict = await t.api.request('DELETE', '/v1/calendars/uk-bank');
    expect(conflict.status).toBe(409);
    await page.reload();
    await expect.poll(() => row.getByRole('cell').nth(5).textContent()).toBe('1');
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('group', { name: 'Delete uk-bank?' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('alert').filter({ hasText: conflict.body.detail }).waitFor();
    expect((await t.api.get('/v1/calendars/uk-bank')).status).toBe(200);

    // Once no open job uses it, it goes.
    expect((await t.api.request('DELETE', `/v1/jobs/${jobId}`)).status).toBe(204);
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('group', { name: 'Delete uk-bank?' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No calendars yet.').waitFor();
    await page.getByRole('status').filter({ hasText: 'Deleted calendar uk-bank.' }).waitFor();
    expect((await t.api.get('/v1/calendars/uk-bank')).status).toBe(404);

    // A key without calendars:manage has no such page in its navigation, and the page says why.
    const r = await t.api.post('/v1/api-keys', { name: 'jobs only', scopes: ['jobs:read', 'jobs:write'] });
    const other = await h.newPage();
    await h.signIn(other, { ...t, apiKey: r.body.key, api: apiClient(h.url, r.body.key) }, '/console/jobs');
    await other.getByRole('heading', { name: 'Jobs' }).waitFor();
    expect(await other.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Calendars' }).count()).toBe(0);
    await other.goto(`${h.url}/console/calendars`);
    await other.getByText('This API key cannot manage calendars').waitFor();
  });
});
