/**
 * The job form's richer schedules in Chromium (src/console/app/job-form/*, API.md "Richer schedules"): a job made
 * through the form with a union (a 6-field cron schedule and a one-off; a third added and removed), a calendar that
 * rolls to the next business day, a run limit, spread jitter, the buffer-one overlap policy and a `then` link picked by
 * name; the live preview shows the holiday's occurrence moved to the next business day; the job's page shows every new
 * field and its next occurrences with the move; editing shows every field as saved and round-trips a change (the
 * preview then shows the holiday skipped).
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { localDay } from '../../src/console/app/parts/calendar-days.ts';
import { instantOfWallTime } from '../../src/console/app/zones.ts';
import { localDateTime, pageWidth } from '../support/browser.ts';
import { BROWSER, DATABASE_TARGETS, DAY_MS, DESKTOP, fact, PHONE, useHarness, YEARLY } from './support.ts';

const LONDON = 'Europe/London';

/** 09:00 on London's wall clock on the local date `date` (`YYYY-MM-DD`), as UTC ISO. */
function nineInLondon(date: string): string {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  return new Date(instantOfWallTime({ year, month, day, hour: 9, minute: 0, second: 0, ms: 0 }, LONDON)).toISOString();
}

/** The first London date at least two days ahead that is a Monday to Thursday (its next day is a business day too). */
function comingHoliday(): { holiday: string; nextDay: string } {
  for (let d = 2; ; d++) {
    const day = localDay(new Date(Date.now() + d * DAY_MS).toISOString(), LONDON);
    if (day.weekday >= 1 && day.weekday <= 4) {
      return { holiday: day.date, nextDay: localDay(new Date(Date.parse(`${day.date}T12:00:00Z`) + DAY_MS).toISOString(), LONDON).date };
    }
  }
}

/**
 * The lines of the preview list `list` whose class is `kind` (`moved`, `skipped`): the `datetime` of each time on it
 * (a moved line: the occurrences moved, then where they fire) and its text.
 */
const lines = (list: ReturnType<Page['getByRole']>, kind: string) =>
  list
    .locator(`li.${kind}`)
    .evaluateAll((els) =>
      els.map((li) => ({ times: [...li.querySelectorAll('time')].map((t) => t.getAttribute('datetime')!), text: li.textContent ?? '' })),
    );

/** The moved line of `list` that moves the holiday's 09:00: where it fires, and the reason beside the holiday. */
async function holidayMove(list: ReturnType<Page['getByRole']>, holiday: string) {
  const line = (await lines(list, 'moved')).find((l) => l.times.includes(nineInLondon(holiday)));
  return line && { firesAt: line.times.at(-1), saysHoliday: line.text.includes('(holiday)') };
}

describe.runIf(BROWSER).each(DATABASE_TARGETS)('the console in Chromium on $kind: richer schedules in the job form', (target) => {
  const h = useHarness(target);

  it('registers a union with a calendar, a run limit, spread jitter, buffer-one and a then; the preview shows the holiday moved', async () => {
    const t = await h.tenant('richer');
    const { holiday, nextDay } = comingHoliday();
    const cal = await t.api.request('PUT', '/v1/calendars/uk', { name: 'UK', timezone: LONDON, holidays: [holiday] });
    expect(cal.status, JSON.stringify(cal.body)).toBe(201);
    const downstream = await h.makeJob(t, { name: 'downstream report', schedule: YEARLY, callback: { url: `${h.receiver.url}/ok` } });

    const page = await h.newPage();
    await h.signIn(page, t, '/console/jobs/new');
    await page.getByRole('heading', { name: 'New job' }).waitFor();
    const once = await localDateTime(page, 40, 12);
    await page.getByLabel('Name', { exact: true }).fill('richer');
    await page.getByLabel('Cron expression', { exact: true }).fill('0 0 9 * * *');
    await page.getByLabel('Time zone', { exact: true }).selectOption(LONDON);
    // The cron schedule becomes the union's first; the second is a one-off; a third is added, then removed.
    await page.getByLabel('Schedule type', { exact: true }).selectOption('union');
    const first = page.getByRole('group', { name: 'Schedule 1' });
    const second = page.getByRole('group', { name: 'Schedule 2' });
    expect(await first.getByLabel('Cron expression', { exact: true }).inputValue()).toBe('0 0 9 * * *');
    expect(await first.getByLabel('Time zone', { exact: true }).inputValue()).toBe(LONDON);
    await second.getByLabel('Kind', { exact: true }).selectOption('once');
    await second.getByLabel('At', { exact: true }).fill(once.text);
    await page.getByRole('button', { name: 'Add a schedule' }).click();
    const third = page.getByRole('group', { name: 'Schedule 3' });
    await third.getByLabel('Kind', { exact: true }).selectOption('dates');
    await third.getByRole('button', { name: 'Remove schedule 3' }).click();
    await expect.poll(() => third.count()).toBe(0);
    // The calendar, rolling to the next business day; a run limit.
    await page.getByLabel('Calendar', { exact: true }).selectOption('uk');
    await page.getByLabel('Calendar roll', { exact: true }).selectOption('next');
    await page.getByLabel('Max runs', { exact: true }).fill('50');
    await page.getByLabel('Callback URL', { exact: true }).fill(`${h.receiver.url}/richer`);

    // The live preview: the holiday's 09:00 fires at 09:00 on the next day, said so.
    const preview = page.getByRole('list', { name: 'Next occurrences' });
    await expect
      .poll(() => holidayMove(preview, holiday), { timeout: 15_000 })
      .toEqual({ firesAt: nineInLondon(nextDay), saysHoliday: true });
    expect(await page.locator('.preview').textContent()).toContain('on the business days of UK');

    // More options: overlap buffer-one, jitter spread.
    await page.getByText(/^More options/).click();
    await page.getByLabel('Overlap policy', { exact: true }).selectOption('buffer-one');
    await page.getByLabel('Jitter (ms)', { exact: true }).fill('30000');
    await page.getByLabel('Jitter mode', { exact: true }).selectOption('spread');
    // Then: a job picked by a part of its name, triggered when a run fails.
    await page.getByRole('button', { name: 'Add a job to trigger' }).click();
    const link = page.getByRole('group', { name: 'Link 1' });
    await link.getByLabel('Job', { exact: true }).fill('downstr');
    await link.getByRole('group', { name: 'Jobs matching downstr' }).getByRole('button', { name: 'downstream report' }).click();
    expect(await link.getByLabel('Job', { exact: true }).inputValue()).toBe(downstream);
    await link.getByText('→ downstream report').waitFor();
    await link.getByLabel('On', { exact: true }).selectOption('failed');
    await h.shot(page, 'job-form-richer');
    // On a phone, the union's schedules and the links do not make the form scroll sideways.
    await page.setViewportSize(PHONE);
    expect(await pageWidth(page)).toBeLessThanOrEqual(PHONE.width);
    await page.setViewportSize(DESKTOP);

    await page.getByRole('button', { name: 'Create job' }).click();
    await page.waitForURL(/\/console\/jobs\/[0-9a-f-]{36}$/);
    const jobId = page.url().split('/').pop()!;
    await page.getByRole('heading', { name: 'richer' }).waitFor();
    const job = (await t.api.get(`/v1/jobs/${jobId}`)).body;
    expect(job).toMatchObject({
      schedule: {
        type: 'union',
        schedules: [
          { type: 'cron', expression: '0 0 9 * * *', timezone: LONDON },
          { type: 'once', at: once.iso },
        ],
      },
      calendar: { key: 'uk', roll: 'next' },
      maxRuns: 50,
      scheduledRuns: 0,
      overlapPolicy: 'buffer-one',
      jitterMs: 30_000,
      jitterMode: 'spread',
      then: [{ jobId: downstream, on: 'failed' }],
    });

    // The job's page: every new field in words, and its next occurrences with the holiday's move.
    await expect.poll(() => fact(page, 'Calendar')).toMatch(/^uk, roll next: .*next business day/);
    expect(await fact(page, 'Schedule')).toMatch(/^Each of: /);
    expect(await fact(page, 'Max runs')).toMatch(/^50: 0 scheduled runs so far/);
    expect(await fact(page, 'Overlap')).toMatch(/^buffer-one/);
    expect(await fact(page, 'Jitter')).toMatch(/^up to 30 seconds, spread/);
    await expect.poll(() => fact(page, /^Then$/)).toBe('on failed: downstream report');
    const next = page.getByRole('list', { name: 'Next occurrences' });
    await expect.poll(() => holidayMove(next, holiday)).toEqual({ firesAt: nineInLondon(nextDay), saysHoliday: true });
    await h.shot(page, 'job-richer');

    // Edit: every field as saved; a changed roll and a cleared limit are saved, the rest kept.
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit job' }).waitFor();
    expect(await page.getByLabel('Schedule type', { exact: true }).inputValue()).toBe('union');
    expect(await first.getByLabel('Cron expression', { exact: true }).inputValue()).toBe('0 0 9 * * *');
    expect(await second.getByLabel('Kind', { exact: true }).inputValue()).toBe('once');
    expect(await second.getByLabel('At', { exact: true }).inputValue()).toBe(once.text);
    await expect.poll(() => page.getByLabel('Calendar', { exact: true }).inputValue()).toBe('uk');
    expect(await page.getByLabel('Calendar roll', { exact: true }).inputValue()).toBe('next');
    expect(await page.getByLabel('Max runs', { exact: true }).inputValue()).toBe('50');
    expect(await page.getByLabel('Overlap policy', { exact: true }).inputValue()).toBe('buffer-one');
    expect(await page.getByLabel('Jitter mode', { exact: true }).inputValue()).toBe('spread');
    expect(await link.getByLabel('Job', { exact: true }).inputValue()).toBe(downstream);
    expect(await link.getByLabel('On', { exact: true }).inputValue()).toBe('failed');
    await page.getByLabel('Calendar roll', { exact: true }).selectOption('skip');
    await expect
      .poll(() => lines(preview, 'skipped'))
      .toContainEqual({
        times: [nineInLondon(holiday)],
        text: expect.stringContaining('skipped (holiday)'),
      });
    await page.getByLabel('Max runs', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(new RegExp(`/console/jobs/${jobId}$`));
    await expect.poll(async () => (await t.api.get(`/v1/jobs/${jobId}`)).body.calendar).toEqual({ key: 'uk', roll: 'skip' });
    expect((await t.api.get(`/v1/jobs/${jobId}`)).body).toMatchObject({
      schedule: job.schedule,
      maxRuns: null,
      overlapPolicy: 'buffer-one',
      jitterMode: 'spread',
      then: [{ jobId: downstream, on: 'failed' }],
    });
  });

  it('saved a screenshot of every page it shows', () => {
    expect([...h.shots]).toEqual(expect.arrayContaining(['job-form-richer', 'job-richer']));
  });
});
