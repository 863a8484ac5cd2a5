/**
 * The console in Chromium (test/console/support.ts), time zones, as a user in Los Angeles sees them: every time shown
 * names its zone, a schedule's own zone is shown beside the viewer's, the hints of the times typed name the zone they
 * are read in, and the zone picker offers the current IANA names and starts on the browser's zone.
 */
import { describe, expect, it } from 'vitest';
import { BROWSER, DATABASE_TARGETS, fact, hourIn, loaded, USER_ZONE, useHarness } from './support.ts';

/** An instant on the viewer's clock in Los Angeles, named: "Nov 27, 2026, 12:00:00 AM PST" (or PDT). */
const LA_TIME = /^[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d{2}:\d{2} [AP]M P[SD]T$/;
/** The same, followed by the instant at 09:00 on Paris' clock. */
const LA_AND_PARIS_9 =
  /^[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:00:00 [AP]M P[SD]T \([A-Z][a-z]{2} \d{1,2}, \d{4}, 9:00:00 AM Europe\/Paris\)$/;

describe.runIf(BROWSER).each(DATABASE_TARGETS)('the console in Chromium on $kind: time zones', (target) => {
  const h = useHarness(target);

  it("names the zone of every time it shows, with a schedule's own zone beside the viewer's", async () => {
    const paris = { type: 'cron', expression: '0 9 * * 1-5', timezone: 'Europe/Paris' };
    const jobId = await h.makeJob(h.a, { name: 'Paris morning report', schedule: paris, callback: { url: `${h.receiver.url}/report` } });
    await h.triggered(h.a, jobId, 'succeeded');
    const page = await h.newPage();
    await h.signIn(page, h.a, `/console/jobs/${jobId}`);
    await loaded(page);
    // The job: its next run and next occurrences in Los Angeles, each with the time in Paris beside.
    expect(await fact(page, 'Next run')).toMatch(LA_AND_PARIS_9);
    const occurrences = page.getByRole('list', { name: 'Next occurrences' }).getByRole('listitem');
    await expect.poll(() => occurrences.count()).toBe(10);
    for (const text of await occurrences.allTextContents()) expect(text).toMatch(LA_AND_PARIS_9);
    expect(await fact(page, 'Created')).toMatch(LA_TIME);
    // Its runs: the times of the runs table name the zone.
    for (const text of await page.locator('main table td.created time').allTextContents()) expect(text).toMatch(LA_TIME);

    // The form: the live preview as the job's page; the times typed say which zone they are read in.
    await page.goto(`${h.url}/console/jobs/new`);
    await page.getByLabel('Cron expression', { exact: true }).fill('0 9 * * 1-5');
    await page.getByLabel('Time zone', { exact: true }).selectOption('Europe/Paris');
    await expect.poll(() => page.getByRole('list', { name: 'Next occurrences' }).getByRole('listitem').count()).toBe(10);
    for (const text of await page.getByRole('list', { name: 'Next occurrences' }).getByRole('listitem').allTextContents())
      expect(text).toMatch(LA_AND_PARIS_9);
    await h.shot(page, 'job-form-zones');
    expect(await page.locator('#f-start').locator('xpath=following-sibling::small[1]').textContent()).toBe(
      `Optional, in your time zone (${USER_ZONE})`,
    );
    await page.getByLabel('Schedule type', { exact: true }).selectOption('once');
    expect(await page.locator('#f-at').locator('xpath=following-sibling::small[1]').textContent()).toBe(`In your time zone (${USER_ZONE})`);

    // The runs feed, its filters' hint, and the keys.
    await page.goto(`${h.url}/console/runs`);
    await loaded(page);
    const feedTimes = await page.locator('main table time').allTextContents();
    expect(feedTimes.length).toBeGreaterThan(0);
    for (const text of feedTimes) expect(text).toMatch(LA_TIME);
    expect(await page.getByText(/^Since and Until bound/).textContent()).toContain(`(${USER_ZONE};`);
    await page.goto(`${h.url}/console/keys`);
    await loaded(page);
    for (const text of await page.locator('table.keys time').allTextContents()) expect(text).toMatch(LA_TIME);
    expect(await page.locator('#key-expires-hint').textContent()).toBe(`Optional, in your time zone (${USER_ZONE}); empty: never expires.`);
  });

  it("offers the current IANA names in the zone picker and starts it on the browser's zone", async () => {
    const page = await h.newPage();
    await h.signIn(page, h.a, '/console/jobs/new');
    const zone = page.getByLabel('Time zone', { exact: true });
    expect(await zone.inputValue()).toBe(USER_ZONE);
    const names = await zone.locator('option').allTextContents();
    expect(names).toEqual(
      expect.arrayContaining(['UTC', 'Asia/Kolkata', 'Europe/Kyiv', 'Asia/Ho_Chi_Minh', 'America/Nuuk', 'Europe/Paris']),
    );
    for (const old of ['Asia/Calcutta', 'Europe/Kiev', 'Asia/Saigon', 'America/Godthab']) expect(names).not.toContain(old);
    // A job in Kyiv, by its current name.
    await page.getByLabel('Name', { exact: true }).fill('Kyiv morning');
    await page.getByLabel('Cron expression', { exact: true }).fill('0 9 * * *');
    await zone.selectOption('Europe/Kyiv');
    await page.getByLabel('Callback URL', { exact: true }).fill(`${h.receiver.url}/kyiv`);
    await expect.poll(() => page.getByRole('list', { name: 'Next occurrences' }).getByRole('listitem').count()).toBe(10);
    await page.getByRole('button', { name: 'Create job' }).click();
    await page.waitForURL(/\/console\/jobs\/[0-9a-f-]{36}$/);
    const job = (await h.a.api.get(`/v1/jobs/${page.url().split('/').pop()}`)).body;
    expect(job.schedule).toMatchObject({ expression: '0 9 * * *', timezone: 'Europe/Kyiv' });
    expect(hourIn(job.nextRunAt, 'Europe/Kyiv')).toBe(9);
    // A browser in Kolkata starts on Asia/Kolkata (Chromium itself calls it Asia/Calcutta).
    const india = await h.newPage({ timezoneId: 'Asia/Kolkata' });
    await h.signIn(india, h.a, '/console/jobs/new');
    expect(await india.getByLabel('Time zone', { exact: true }).inputValue()).toBe('Asia/Kolkata');
    expect(await india.locator('#f-start').locator('xpath=following-sibling::small[1]').textContent()).toBe(
      'Optional, in your time zone (Asia/Kolkata)',
    );
  });

  it('saved a screenshot of every page it shows', () => {
    expect([...h.shots]).toEqual(expect.arrayContaining(['job-form-zones']));
  });
});
